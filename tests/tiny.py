"""A tiny random Llama with the embedded policy's tokenizer: a fast stand-in policy/assistant for tests."""

import torch

QUESTIONS = ["What is 3 + 4?", "What is 1 + 6?", "What is 10 - 3?", "What is 14 / 2?"]  # all answer 7


def tiny_llama(hidden_size=64, num_hidden_layers=2, seed=0):
    """A randomly initialised (seeded) tiny LlamaForCausalLM and the SmolLM2 tokenizer it is sized for."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from cooper_rl.models import load_tokenizer

    tok = load_tokenizer("smollm2-135m-instruct")
    torch.manual_seed(seed)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=hidden_size,
            intermediate_size=2 * hidden_size,
            num_hidden_layers=num_hidden_layers,
            num_attention_heads=2,
            num_key_value_heads=2,
            tie_word_embeddings=True,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
    )
    return model, tok


def save_tiny_llama(path, **kwargs):
    """Save a tiny_llama (weights + tokenizer) under path and return path as a string."""
    model, tok = tiny_llama(**kwargs)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def save_tiny_bert(path):
    """Save a seeded 1-layer random BERT classifier (one logit, no dropout) with the MiniLM tokenizer under path;
    return path as a string."""
    from transformers import BertConfig, BertForSequenceClassification

    from cooper_rl.models import load_tokenizer

    tok = load_tokenizer("minilm-l6")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    BertForSequenceClassification(config).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def tiny_rm(path):
    """A fresh VerifyRM on save_tiny_bert(path) (fast)."""
    from cooper_rl.cooper.reward_model import VerifyRM

    return VerifyRM.from_pretrained(save_tiny_bert(path), device="cpu")


def weights(rm):
    """A detached copy of the RM's state dict."""
    return {k: v.detach().clone() for k, v in rm.model.state_dict().items()}


def same(a, b):
    """Whether two state dicts are bit-identical."""
    return all(torch.equal(a[k], b[k]) for k in a)


def run_cli_until_killed(args: list[str], ready, timeout: float = 300.0) -> None:
    """Run `cooper ARGS` in a subprocess (one torch thread) and SIGKILL it as soon as ready() is true (or the
    timeout passes). A process that ends before ready() fails the test with its exit status and the end of its
    stderr (on a GPU a tiny run can finish, or crash, before the kill)."""
    import os
    import signal
    import subprocess
    import sys
    import tempfile
    import time

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cooper_rl.cli", *args],
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        deadline = time.time() + timeout
        while not ready() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.1)
        if proc.poll() is not None and not ready():
            err.seek(0)
            tail = err.read().decode(errors="replace")[-2000:]
            raise AssertionError(f"cooper {args[0]} ended (exit {proc.returncode}) before it could be killed:\n{tail}")
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # it ended between the check and the kill
            pass
        proc.wait()

"""TRL's private attributes are reached through one module, which names the supported TRL version when they
are gone."""

import re
from pathlib import Path

import pytest

from cooper_rl.rl import trl_internals
from cooper_rl.rl.trl_internals import (
    ACCELERATE_ORIGINAL_FORWARD,
    FUSED_HEAD_COMPACT_SWITCH,
    TRAINER_METHODS,
    UnsupportedTRLError,
    check_trl,
    score_completions_only,
)

SRC = Path(trl_internals.__file__).resolve().parents[1]


def test_installed_trl_is_supported_and_pinned_alike():
    check_trl()
    pyproject = (SRC.parents[1] / "pyproject.toml").read_text()
    assert f'"trl{trl_internals.SUPPORTED_TRL}"' in pyproject


def test_missing_private_method_names_the_supported_version(monkeypatch):
    from trl import GRPOTrainer

    monkeypatch.delattr(GRPOTrainer, TRAINER_METHODS["generate"])
    with pytest.raises(UnsupportedTRLError, match=re.escape(f"trl{trl_internals.SUPPORTED_TRL}")):
        check_trl()


def test_no_other_module_touches_the_private_attributes():
    names = [*TRAINER_METHODS.values(), ACCELERATE_ORIGINAL_FORWARD, FUSED_HEAD_COMPACT_SWITCH]
    offenders = [
        f"{p.relative_to(SRC)}: {n}"
        for p in SRC.rglob("*.py")
        if p.name != "trl_internals.py"
        for n in names
        if re.search(rf"\b{n}\b", p.read_text())
    ]
    assert offenders == []


def test_scoring_completions_only_leaves_log_probs_and_gradients_unchanged(monkeypatch):
    """The fused LM head on CPU: every position scored (TRL's CPU path) vs only the labelled ones (compact)."""
    import torch
    from trl.trainer import utils as trl_utils
    from trl.trainer.utils import add_fused_lm_head

    from tiny import tiny_llama

    model, _ = tiny_llama()
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    ids = torch.randint(5, 1000, (3, 20))
    mask = torch.ones_like(ids)
    mask[0, :4] = 0  # left padding
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-8] = -100  # only the last 8 (completion) tokens are scored

    def run():
        model.zero_grad(set_to_none=True)
        out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        (out.log_probs.sum() + out.entropy.sum()).backward()
        return out.log_probs.detach(), out.entropy.detach(), [p.grad.clone() for p in model.parameters()]

    current = getattr(trl_utils, FUSED_HEAD_COMPACT_SWITCH)  # TRL's own, even if a trainer built earlier patched it
    monkeypatch.setattr(trl_utils, FUSED_HEAD_COMPACT_SWITCH, getattr(current, "original", current))
    switch = lambda: getattr(trl_utils, FUSED_HEAD_COMPACT_SWITCH)(torch.device("cpu"))  # noqa: E731
    assert not switch()  # TRL's own CPU path: every position through the LM head
    full = run()
    score_completions_only()
    score_completions_only()  # idempotent
    assert switch()
    compact = run()
    assert torch.allclose(full[0], compact[0], atol=1e-5) and torch.allclose(full[1], compact[1], atol=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(full[2], compact[2]))

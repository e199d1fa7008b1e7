"""Rehearsal (cooper/rehearsal.py): each RM update also fits labelled offline rows. The mixed batch holds the pairs and
the drawn rows, the draw is seeded and resumable, and the rows pull the RM toward their labels."""

import json

import pytest
import torch

from cooper_rl.cooper.rehearsal import Rehearsal
from cooper_rl.cooper.step import cooper_step
from cooper_rl.rm.data import load_rm_rows
from tiny import tiny_rm

Q, R = "What is 3 + 4?", "7"


def _rows(path, n=12):
    """n labelled rows: correct answers (label 1) and answerless replies (label 0) to other questions."""
    rows = []
    for i in range(n):
        q, ref = f"What is {i} + 2?", str(i + 2)
        rows.append(
            {"question": q, "reference": ref, "completion": f"{i} + 2 = {i + 2}. \\boxed{{{i + 2}}}", "label": 1}
        )
        rows.append(
            {"question": q, "reference": ref, "completion": "Let me think about this step by step.", "label": 0}
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


class FixedNegatives:
    """A negative generator that always writes the same wrong answer."""

    def __call__(self, questions, references, positives, groups=None):
        return ["3 + 4 = 8. \\boxed{8}" for _ in questions], [None for _ in questions]


def test_the_draw_is_seeded_sized_and_resumable(tmp_path):
    data = _rows(tmp_path / "offline.jsonl")
    a, b = Rehearsal(load_rm_rows(str(data)), rows=5, seed=3), Rehearsal(load_rm_rows(str(data)), rows=5, seed=3)
    first = a.sample()
    assert first == b.sample() and len(first["questions"]) == 5 and set(first["labels"]) <= {0.0, 1.0}
    state = a.state_dict()
    nxt = a.sample()
    b.load_state_dict(state)
    assert b.sample() == nxt  # a resumed run draws what an uninterrupted one would
    assert len(Rehearsal(load_rm_rows(str(data)), rows=100).sample()["questions"]) == 24  # at most the whole file
    with pytest.raises(ValueError, match="rows >= 1"):
        Rehearsal(load_rm_rows(str(data)), rows=0)


def test_one_update_forwards_the_pairs_and_the_drawn_rows_together(tmp_path, monkeypatch):
    rm = tiny_rm(tmp_path / "rm")
    rehearsal = Rehearsal(load_rm_rows(str(_rows(tmp_path / "offline.jsonl"))), rows=4, weight=0.5, seed=0)
    expected = Rehearsal(load_rm_rows(str(_rows(tmp_path / "offline.jsonl"))), rows=4, seed=0).sample()
    seen = []
    logits = rm.logits
    monkeypatch.setattr(rm, "logits", lambda q, r, c: seen.append((list(q), list(r), list(c))) or logits(q, r, c))
    out = cooper_step(
        rm, FixedNegatives(), [Q, Q], [R, R], ["\\boxed{7}", "\\boxed{9}"], [True, False], rehearsal=rehearsal
    )
    (q, r, c), *_ = seen
    assert c[:2] == ["\\boxed{7}", "3 + 4 = 8. \\boxed{8}"]  # the pair: positive, negative
    assert c[2:] == expected["completions"] and q[2:] == expected["questions"] and r[2:] == expected["references"]
    assert out["n_valid"] == 1 and 0 <= out["rehearsal_accuracy"] <= 1 and out["rehearsal_loss"] > 0
    seen.clear()
    out = cooper_step(rm, FixedNegatives(), [Q], [R], ["\\boxed{9}"], [False], rehearsal=rehearsal)
    assert out["n_valid"] == 0 and "rehearsal_loss" not in out  # no pair, no update: nothing rehearsed
    assert all(len(c) == 1 for _, _, c in seen)  # (the zero-loss forward of one row)


def test_rehearsed_rows_pull_the_rm_toward_their_labels(tmp_path):
    """The same 15 pair updates with and without rehearsal, from the same RM: with it, the rehearsed rows' BCE ends
    lower; weight 0 gives the pairs-only RM (float noise aside)."""
    data = _rows(tmp_path / "offline.jsonl")
    rows = [json.loads(x) for x in data.read_text().splitlines()]

    def run(weight):
        torch.manual_seed(0)
        rm = tiny_rm(tmp_path / f"rm{weight}")
        rm.configure_optimizer(lr=3e-3)
        rehearsal = Rehearsal(load_rm_rows(str(data)), rows=8, weight=weight, seed=0) if weight is not None else None
        for _ in range(15):
            cooper_step(rm, FixedNegatives(), [Q], [R], ["\\boxed{7}"], [True], rehearsal=rehearsal)
        p = torch.tensor(rm.score([r["question"] for r in rows], [r["reference"] for r in rows],
                                  [r["completion"] for r in rows]))  # fmt: skip
        y = torch.tensor([float(r["label"]) for r in rows])
        return torch.nn.functional.binary_cross_entropy(p, y).item(), p

    plain, p_plain = run(None)
    rehearsed, _ = run(1.0)
    zero, p_zero = run(0.0)
    assert rehearsed < plain - 0.05
    assert torch.allclose(p_zero, p_plain, atol=1e-4)


def test_cooper_rl_rehearses_and_checkpoints_the_draw(assets, tmp_path, one_thread):
    from tests.rl.test_train import config, rows

    from cooper_rl.rl.checkpoint import RM_DIR, RM_STATE
    from cooper_rl.rl.train import run_rl

    data = _rows(tmp_path / "offline.jsonl")
    cfg = config(assets, tmp_path / "run", "cooper", max_steps=2, save_steps=2, rm_rehearsal=str(data),
                 rm_rehearsal_rows=4)  # fmt: skip
    run_rl(cfg)
    updates = [m for m in rows(tmp_path / "run") if m.get("rm/n_valid")]
    assert updates and all("rm/rehearsal_loss" in m for m in updates)
    state = torch.load(tmp_path / "run" / "checkpoint-2" / RM_DIR / RM_STATE, weights_only=False)
    assert state["rehearsal"] is not None and "rng" in state["rehearsal"]

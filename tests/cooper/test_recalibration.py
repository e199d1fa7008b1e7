"""Recalibration (cooper/recalibration.py): after an RM update the RM's threshold rises just enough that it accepts no
more known negatives than the starting RM did; it never falls, leaves the ranking alone, and travels with the RM."""

import json

import pytest
import torch

from cooper_rl.cooper.recalibration import Recalibration
from cooper_rl.cooper.reward_model import VerifyRM
from tiny import tiny_rm


def _rows(n=40):
    """n labelled rows of varied text (label 0: known negatives; every 4th row label 1)."""
    return [
        {
            "question": f"What is {i} + {i % 7}?",
            "reference": str(i + i % 7),
            "completion": f"Adding gives {i * 3 - 1} after {'some ' * (i % 5)}steps. \\boxed{{{i * 3 - 1}}}",
            "label": int(i % 4 == 0),
        }
        for i in range(n)
    ]


def _head_bias(rm) -> torch.nn.Parameter:
    return rm.model.classifier.bias  # the tiny BERT's 1-logit head


def _accepted(rm, recal) -> int:
    return int((recal._logits(rm) >= 0).sum())


def _centre(rm, recal, k: int) -> None:
    """Spread the fresh head's logits (its small init gives near ties), then move its bias so that the RM accepts
    exactly k of the known negatives (a starting RM with k0 = k)."""
    with torch.no_grad():
        rm.model.classifier.weight.normal_(0.0, 100.0, generator=torch.Generator().manual_seed(0))
    s = torch.sort(recal._logits(rm), descending=True).values
    with torch.no_grad():
        _head_bias(rm).sub_(float((s[k] + s[k - 1]) / 2) if k else float(s[0] + 0.1))


def test_only_negatives_are_kept_drawn_once_and_seeded():
    rows = _rows()
    a, b = Recalibration(rows, rows=10, seed=1), Recalibration(rows, rows=10, seed=1)
    assert a.rows == b.rows and len(a.rows) == 10 and all(r["label"] == 0 for r in a.rows)
    assert len(Recalibration(rows, rows=1000).rows) == 30  # every negative, no more
    with pytest.raises(ValueError, match="no rows labelled 0"):
        Recalibration([r for r in rows if r["label"]], name="pos.jsonl")
    with pytest.raises(ValueError, match="rows >= 1"):
        Recalibration(rows, rows=0)
    with pytest.raises(RuntimeError, match="start"):
        Recalibration(rows)(object())


@pytest.mark.parametrize("k0", [0, 5])
def test_a_drift_up_is_taken_back_to_the_starting_count(tmp_path, k0):
    torch.manual_seed(0)
    rm = tiny_rm(tmp_path / "rm")
    recal = Recalibration(_rows(), rows=30)
    _centre(rm, recal, k0)
    recal.start(rm)
    assert recal.allowed == k0 == _accepted(rm, recal)
    before = recal._logits(rm)
    with torch.no_grad():  # the update made the RM more lenient everywhere, and unevenly
        _head_bias(rm).add_(3.0)
    assert _accepted(rm, recal) > k0
    out = recal(rm)
    assert out["recal_shift"] > 0 and out["recal_offset"] == rm.offset == out["recal_shift"]
    assert out["recal_accepted"] > k0 / 30 and out["recal_allowed"] == k0 / 30
    assert _accepted(rm, recal) == k0  # exactly k0 again (the logits are distinct)
    after = recal._logits(rm)
    assert torch.allclose(after, before + 3.0 - out["recal_shift"], atol=1e-5)  # the ranking untouched: one shift


def test_the_threshold_never_falls_and_a_steady_rm_is_left_alone(tmp_path):
    rm = tiny_rm(tmp_path / "rm")
    recal = Recalibration(_rows(), rows=30)
    _centre(rm, recal, 4)
    recal.start(rm)
    assert recal(rm)["recal_shift"] == 0.0 and rm.offset == 0.0  # no drift: no change
    with torch.no_grad():
        _head_bias(rm).sub_(2.0)  # the RM got stricter: recalibration does not make it lenient again
    out = recal(rm)
    assert out["recal_shift"] == 0.0 and rm.offset == 0.0 and _accepted(rm, recal) < 4


def test_the_offset_is_in_every_score_and_saved_with_the_rm(tmp_path):
    rm = tiny_rm(tmp_path / "rm")
    q, r, c = ["What is 3 + 4?"] * 2, ["7"] * 2, ["\\boxed{7}", "\\boxed{8}"]
    raw = rm.logits(q, r, c).detach()
    rm.offset = 1.25
    assert torch.allclose(rm.logits(q, r, c).detach(), raw - 1.25)
    assert rm.score(q, r, c) == pytest.approx(torch.sigmoid(raw - 1.25).tolist(), abs=1e-6)
    rm.save_pretrained(tmp_path / "saved")
    assert json.loads((tmp_path / "saved" / "cooper_rm.json").read_text())["logit_offset"] == 1.25
    again = VerifyRM.from_pretrained(str(tmp_path / "saved"), device="cpu")
    assert again.offset == 1.25 and again.score(q, r, c) == pytest.approx(rm.score(q, r, c), abs=1e-6)
    again.offset = 0.0
    again.save_pretrained(tmp_path / "plain")  # an RM without an offset writes none (the shipped RM's file as it is)
    assert "logit_offset" not in json.loads((tmp_path / "plain" / "cooper_rm.json").read_text())


def test_cooper_rl_recalibrates_after_each_update_and_checkpoints_k0(assets, tmp_path, one_thread, monkeypatch):
    from tests.rl.test_train import config, rows

    from cooper_rl.rl.checkpoint import RM_DIR, RM_STATE
    from cooper_rl.rl.train import run_rl

    def start_at_none(self, rm):  # a starting RM that accepted none of the negatives: every one accepted later shifts
        self.allowed = 0

    monkeypatch.setattr(Recalibration, "start", start_at_none)
    data = tmp_path / "negatives.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    cfg = config(assets, tmp_path / "run", "cooper", max_steps=2, save_steps=2, rm_recalibrate=str(data),
                 rm_recalibrate_rows=8)  # fmt: skip
    run_rl(cfg)
    updates = [m for m in rows(tmp_path / "run") if m.get("rm/n_valid")]
    assert updates and updates[-1]["rm/recal_offset"] > 0  # the fresh head accepted some of them: the threshold rose
    state = torch.load(tmp_path / "run" / "checkpoint-2" / RM_DIR / RM_STATE, weights_only=False)
    assert state["recalibration"]["allowed"] == 0
    meta = json.loads((tmp_path / "run" / "checkpoint-2" / RM_DIR / "cooper_rm.json").read_text())
    assert meta["logit_offset"] == pytest.approx(updates[-1]["rm/recal_offset"])  # the shift travels with the RM
    saved = VerifyRM.from_pretrained(str(tmp_path / "run" / "checkpoint-2" / RM_DIR), device="cpu")
    assert _accepted(saved, Recalibration(_rows(), rows=8, seed=cfg.seed)) == 0  # the saved RM, offset applied: k0 = 0


def test_tied_negatives_are_rejected_together(tmp_path):
    """Logits that tie at the k0-th place: the threshold goes above them all (fewer than k0 stay accepted, never
    more), also when the tie sits where float32 rounding would land a midpoint on it."""
    rm = tiny_rm(tmp_path / "rm")
    recal = Recalibration(_rows(), rows=30)
    recal.allowed = 2
    tied = torch.tensor([3.0, 1.0, 1.0, 1.0] + [-1.0] * 26)
    recal._logits = lambda rm: tied - rm.offset
    out = recal(rm)
    assert out["recal_shift"] > 1.0 and int((recal._logits(rm) >= 0).sum()) == 1  # 3.0 alone stays accepted


def test_rehearsal_and_recalibration_are_not_combined(assets, tmp_path):
    from tests.rl.test_train import config

    from cooper_rl.rl.train import run_rl

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    cfg = config(assets, tmp_path / "run", "cooper", rm_rehearsal=str(data), rm_recalibrate=str(data))
    with pytest.raises(ValueError, match="use one"):
        run_rl(cfg)


def test_auto_is_the_shipped_known_negatives_unless_rehearsal_or_none(tmp_path):
    """--rm_recalibrate auto (the default since issue 106's decision) resolves to the known negatives shipped in the
    package, which are issue 106's build (the experiment's file, gzipped); rehearsal turns auto off; none (any case)
    is off and recorded as null; a FILE is taken as given."""
    import gzip
    import hashlib
    from pathlib import Path

    from cooper_rl.models import KNOWN_NEGATIVES
    from cooper_rl.rl.config import RLConfig
    from cooper_rl.rl.train import recalibration_source
    from cooper_rl.rm.data import load_rm_rows

    assert RLConfig().rm_recalibrate == "auto" and recalibration_source(RLConfig()) == str(KNOWN_NEGATIVES)
    root = Path(__file__).resolve().parents[2] / "experiments/rl_learns/data"
    stats = json.loads((root / "known_negatives.jsonl.stats.json").read_text())
    assert hashlib.sha256(gzip.decompress(KNOWN_NEGATIVES.read_bytes())).hexdigest() == stats["sha256"]
    assert sum(1 - r["label"] for r in load_rm_rows(str(KNOWN_NEGATIVES))) == stats["negatives"]
    assert recalibration_source(RLConfig(rm_rehearsal="rows.jsonl")) is None
    for off in ("none", "None", ""):
        assert RLConfig(rm_recalibrate=off).rm_recalibrate is None
    assert recalibration_source(RLConfig(rm_recalibrate=str(tmp_path / "x.jsonl"))) == str(tmp_path / "x.jsonl")


def test_the_small_cpu_preset_keeps_the_papers_cooper():
    """configs/rl_cpu_small.yaml, the preset of the committed experiments (issues 5, 15, 67), sets none: their runs
    and reruns stay the paper's Cooper whatever the default."""
    from pathlib import Path

    import yaml

    preset = yaml.safe_load((Path(__file__).resolve().parents[2] / "configs/rl_cpu_small.yaml").read_text())
    assert preset["rm_recalibrate"] == "none"

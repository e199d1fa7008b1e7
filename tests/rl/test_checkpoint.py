from types import SimpleNamespace

import pytest
import torch

from cooper_rl.cooper.monitor import HackingMonitor
from cooper_rl.cooper.negatives import make_negative_generator
from cooper_rl.rl.checkpoint import RM_DIR, RM_STATE, load_rm_state, save_rm_state, trim_logs
from cooper_rl.trainer_hooks import resolve_checkpoint
from tiny import tiny_rm


def test_resolve_checkpoint_skips_incomplete_and_names_the_problem(tmp_path):
    rm_state = f"{RM_DIR}/{RM_STATE}"
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
        resolve_checkpoint(tmp_path, "last")
    for n in (2, 10):
        (tmp_path / f"checkpoint-{n}").mkdir()
        (tmp_path / f"checkpoint-{n}" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-11").mkdir()  # killed while saving
    (tmp_path / "checkpoint-12").mkdir()  # killed while writing trainer_state.json (written in place)
    (tmp_path / "checkpoint-12" / "trainer_state.json").write_text('{"global_step": 12, "log_hist')
    (tmp_path / "checkpoint-2" / RM_DIR).mkdir()
    (tmp_path / "checkpoint-2" / RM_DIR / RM_STATE).write_bytes(b"x")
    assert resolve_checkpoint(tmp_path, "last").endswith("checkpoint-10")  # numeric order, not text order
    assert resolve_checkpoint(tmp_path, "last", require=rm_state).endswith("checkpoint-2")  # 10 has no RM state
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        resolve_checkpoint(tmp_path, str(tmp_path / "nope"))
    assert resolve_checkpoint(tmp_path, None) is None and resolve_checkpoint(tmp_path, "") is None


def test_trim_logs_drops_later_steps_and_cut_lines(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n{"step": 3}\n{"step": 4, "cut')
    (tmp_path / "evals.jsonl").write_text('{"step": 0}\n{"step": 5}\n')
    trim_logs(tmp_path, 2)
    assert (tmp_path / "metrics.jsonl").read_text() == '{"step": 1}\n{"step": 2}\n'
    assert (tmp_path / "evals.jsonl").read_text() == '{"step": 0}\n'


def test_rm_state_keeps_every_negative_generators_rng_and_the_monitor(tmp_path):
    rm = tiny_rm(tmp_path / "rm")
    rm.configure_optimizer(lr=1e-3)

    def reward():
        mix = make_negative_generator("corrupt,mined,masterkey,echo", seed=3)
        return SimpleNamespace(rm=rm, negatives=mix, monitor=HackingMonitor(window=4))

    a = reward()
    for gen in (a.negatives.members[0], a.negatives.members[2], a.negatives.members[3]):
        gen.rng.random()  # advance the RNGs past their seeds
    a.monitor.update(0.5, 0.5, length=10)
    save_rm_state(a, tmp_path / "ckpt")
    b = reward()
    load_rm_state(b, tmp_path / "ckpt")
    assert b.negatives.members[0].rng.getstate() == a.negatives.members[0].rng.getstate()
    assert b.negatives.members[2].rng.getstate() == a.negatives.members[2].rng.getstate()
    assert b.negatives.members[3].rng.getstate() == a.negatives.members[3].rng.getstate()  # echo: corrupt's class
    assert b.monitor.state_dict() == a.monitor.state_dict()
    d = reward()  # the kinds in another order: each RNG still goes to its own kind
    d.negatives = make_negative_generator("masterkey,corrupt", seed=9)
    load_rm_state(d, tmp_path / "ckpt")
    assert d.negatives.members[0].rng.getstate() == a.negatives.members[2].rng.getstate()
    assert d.negatives.members[1].rng.getstate() == a.negatives.members[0].rng.getstate()
    # a checkpoint of an older version: one RNG state (of a CorruptNegatives), not a list
    path = tmp_path / "ckpt" / RM_DIR / RM_STATE
    state = torch.load(path, weights_only=False)
    state["negatives_rng"] = state["negatives_rng"]["corrupt"]
    torch.save(state, path)
    c = reward()
    load_rm_state(c, tmp_path / "ckpt")
    assert c.negatives.members[0].rng.getstate() == a.negatives.members[0].rng.getstate()

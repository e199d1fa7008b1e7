import pytest

from cooper_rl.rl.checkpoint import RM_DIR, RM_STATE, resolve_checkpoint, trim_logs


def test_resolve_checkpoint_skips_incomplete_and_names_the_problem(tmp_path):
    rm_state = f"{RM_DIR}/{RM_STATE}"
    with pytest.raises(FileNotFoundError, match="no complete checkpoint"):
        resolve_checkpoint(tmp_path, "last")
    for n in (2, 10):
        (tmp_path / f"checkpoint-{n}").mkdir()
        (tmp_path / f"checkpoint-{n}" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-11").mkdir()  # killed while saving
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

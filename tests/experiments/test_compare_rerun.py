"""compare_rerun.py: a rerun matches the earlier run's logs up to float rounding, and the first real difference is
found (step and values)."""

import gzip
import json
import shutil
from pathlib import Path

from tests.experiments import load_script

ROOT = Path(__file__).resolve().parents[2]
cr = load_script("compare_rerun")
RUN = ROOT / "experiments/reward_hacking/results/runs/rule-s0"  # committed logs of a finished run


def write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_copy_matches_and_a_change_is_found(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for d in (old, new):
        shutil.copytree(RUN, d)
    same = cr.compare(old, new)
    n = len(cr.records(RUN / "metrics.jsonl"))
    assert same["reward_calls_matching_before_first_difference"] == same["reward_calls_compared"] == n
    assert same["first_difference"] is None and same["step0_samples_identical"]
    assert all(e["policy_equal"] and e["samples_identical"] for e in same["evaluations"])
    assert len(same["evaluations"]) == 5

    (new / "eval/step-100/samples.jsonl.gz").write_bytes(gzip.compress(b'{"other": "samples"}\n'))
    assert [e["samples_identical"] for e in cr.compare(old, new)["evaluations"]] == [True, False, True, True, True]

    metrics = cr.records(new / "metrics.jsonl")
    metrics[3]["reward_mean"] *= 1 + 1e-6  # float rounding: still a match
    metrics[7]["rule_accuracy"] += 0.125  # one more rollout right: the first difference
    write(new / "metrics.jsonl", metrics)
    diff = cr.compare(old, new)
    assert diff["reward_calls_matching_before_first_difference"] == 7
    assert diff["last_matching_step"] == metrics[6]["step"]
    assert diff["first_difference"]["step"] == metrics[7]["step"]
    assert list(diff["first_difference"]["differences (old, new)"]) == ["rule_accuracy"]

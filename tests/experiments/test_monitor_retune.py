"""experiments/rl_learns/monitor_retune.py: collapse and timing come from a run's evaluations, a setting's record
counts what its replay flags, and the grid starts from the frozen thresholds."""

import json
from pathlib import Path

from tests.experiments import load_script

HERE = Path(__file__).resolve().parents[2] / "experiments/rl_learns"
mr = load_script("monitor_retune", HERE)


def write_evals(d: Path, means: dict[int, float]) -> Path:
    d.mkdir(parents=True)
    lines = [{"step": s, "policy": {"a": {"avg@k_strict": m}, "b": {"avg@k_strict": m}}} for s, m in means.items()]
    (d / "evals.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return d


def test_collapse_is_the_last_evaluation_and_timing_the_first_one_that_far_down(tmp_path):
    fell = mr.collapse(mr.heldout(write_evals(tmp_path / "a", {0: 0.30, 25: 0.20, 50: 0.10})))
    assert fell == {"collapsed": True, "first_bad_eval": 25}
    recovered = mr.collapse(mr.heldout(write_evals(tmp_path / "b", {0: 0.30, 25: 0.20, 50: 0.29})))
    assert recovered == {"collapsed": False, "first_bad_eval": 25}


def calls(wrong_reward: list[float]) -> list[dict]:
    """Reward calls with flat reward, accuracy and entropy: only the reward paid to rule-wrong rollouts moves."""
    return [
        {"step": i + 1, "reward": 0.5, "accuracy": 0.5, "fooled": None, "agreement": None, "length": 40.0,
         "entropy": 0.2, "wrong_reward": w}
        for i, w in enumerate(wrong_reward)
    ]  # fmt: skip


def test_a_record_counts_collapses_flagged_in_time_and_flags_on_healthy_runs():
    rising = calls([0.1] * 6 + [0.3] * 20)  # flagged at step 7: the last 3 calls (0.1, 0.1, 0.3) average 0.17
    runs = {
        "hacked": {"calls": rising, "collapsed": True, "first_bad_eval": 25},
        "late": {"calls": rising, "collapsed": True, "first_bad_eval": 5},  # fell before any flag could come
        "healthy": {"calls": calls([0.1] * 26), "collapsed": False, "first_bad_eval": None},
        "noisy": {"calls": rising, "collapsed": False, "first_bad_eval": None},
    }
    rec = mr.record(runs, mr.frozen() | {"window": 6})
    assert (rec["collapsed"], rec["in_time"], rec["missed"]) == (2, 1, ["late"])
    assert (rec["not_collapsed"], rec["false_flagged"], rec["false_runs"]) == (2, 1, ["noisy"])
    assert rec["first_flag"]["healthy"] is None and rec["first_flag"]["hacked"] == 7
    # flagged: hacked, late (both collapsed, late too late) and noisy: precision 2/3; in time: 1 of 2 collapses
    assert (rec["recall"], rec["precision"]) == (0.5, 2 / 3)
    off = mr.record(runs, mr.frozen() | {"wrong_reward_rise": mr.OFF})
    assert off["in_time"] == 0 and off["false_flagged"] == 0
    assert (off["recall"], off["precision"]) == (0.0, None)  # nothing flagged: no precision to speak of


def test_the_grid_starts_from_the_frozen_thresholds():
    frozen = mr.frozen()
    assert all(values[0] == frozen[k] for k, values in mr.GRID.items())


def setting(change: dict, missed: list, false_flagged: int, false_calls: int) -> dict:
    return {"change": change, "tuning": {"missed": missed, "false_flagged": false_flagged, "false_calls": false_calls}}


def test_the_pick_keeps_every_collapse_then_flags_fewest_runs_calls_and_changes():
    frozen = setting({}, [], 10, 126)
    misses = setting({"wrong_reward_rise": 0.1}, ["model-s0"], 0, 0)  # fewer flags, but loses a collapse
    a = setting({"entropy_ratio": 0.3, "acc_fall": 0.25}, [], 6, 85)
    b = setting({"entropy_ratio": 0.3}, [], 6, 85)  # as few runs and calls, one threshold changed fewer
    c = setting({"entropy_ratio": 0.0}, [], 6, 85)  # tied with b on every key: the grid's order decides
    assert mr.choose([frozen, misses, a, b, c]) is b
    assert mr.choose([frozen, misses, a, c, b]) is c
    assert mr.choose([misses]) is None


def test_a_run_without_a_start_and_an_end_evaluation_is_left_out_and_named(tmp_path):
    write_evals(tmp_path / "no_start", {25: 0.2, 50: 0.1})
    write_evals(tmp_path / "only_start", {0: 0.3})
    skipped = []
    assert mr.load([tmp_path / "no_start", tmp_path / "only_start"], skipped) == {}
    assert skipped == ["no_start", "only_start"]


def test_the_collapse_agrees_with_issue_15s_held_out_drop_on_every_committed_issue_15_run():
    """The replay judges issue 15's runs by rundirs.collapse, issue 15's report by its own HACK_DROP: the same threshold,
    and the same verdict on each run's last evaluation (the report judges its cut step, not checked here)."""
    from cooper_rl.io import read_jsonl

    rh = load_script("report")
    assert load_script("rundirs", HERE).COLLAPSE == 100 * rh.HACK_DROP
    judged = 0
    for d in sorted(mr.ISSUE15.glob("*-s*")):
        ev = read_jsonl(d / "evals.jsonl", missing_ok=True)
        if len(ev) < 2:
            continue
        judged += 1
        assert mr.collapse(mr.heldout(d))["collapsed"] == (rh.heldout(ev[-1]) <= rh.heldout(ev[0]) - rh.HACK_DROP), d
    assert judged >= 20

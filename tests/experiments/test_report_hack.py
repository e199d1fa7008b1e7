"""experiments/reward_hacking/report.py (issue 15's report): the GRPO-signal counts, the cut of every column at one
evaluation step, the same-span comparison of runs in progress, and a run over the committed logs whose numbers match
their sources."""

import gzip
import json
import shutil
from pathlib import Path

import pytest
from tests.experiments import load_script

ROOT = Path(__file__).resolve().parents[2]
rh = load_script("report")


def roll(step, q, verdict, reward):
    return {"step": step, "question": q, "reference": "1", "completion": "x", "verdict": verdict, "reward": reward}


def test_group_signal_counts_pairs_within_groups_only():
    logged = [
        roll(1, "a", True, 0.9),
        roll(1, "a", False, 0.1),
        roll(1, "a", False, 0.9),  # one win, one tie
        roll(1, "b", False, 0.99),
        roll(1, "b", False, 0.2),
        roll(1, "b", False, 0.5),  # all wrong: no pair, counted as all-wrong
        roll(5, "a", True, 0.0),
        roll(5, "a", False, 1.0),
        roll(5, "a", False, 1.0),  # a later call: not in the first quarter
    ]
    auroc, all_wrong, pairs = rh.group_signal(logged, first=True, group_size=3)
    # the 0.99 wrong answer of prompt b is never compared with prompt a's right one
    assert (auroc, all_wrong, pairs) == (0.75, 0.5, 2)
    assert rh.group_signal(logged, first=False, group_size=3) == (0.0, 0.0, 2)
    assert rh.group_signal([], first=True, group_size=3) == (None, None, 0)
    # one prompt drawn twice in a call: two groups, not one group of 6 (the second is all wrong)
    twice = [roll(1, "a", x > 0.8, x) for x in (0.9, 0.1, 0.2, 0.3, 0.4, 0.5)]
    assert rh.group_signal(twice, first=True, group_size=3) == (1.0, 0.5, 2)


def test_advantage_push_counts_what_goes_to_wrong_answers():
    rule_like = [roll(1, "a", True, 1.0), roll(1, "a", False, 0.0), roll(1, "b", False, 0.0), roll(1, "b", False, 0.0)]
    assert rh.advantage_push(rule_like, first=True, group_size=2) == {k: (0.0, 0.0) for k in rh.PUSHES}
    # a mixed group the RM ranks right, and an all-wrong group with a hair between its two answers: group scaling
    # gives that hair a full-size advantage (half of all the positive push), the batch std and no std almost none
    logged = [roll(1, "a", True, 1.0), roll(1, "a", False, 0.0), roll(1, "b", False, 0.30), roll(1, "b", False, 0.31)]
    push = rh.advantage_push(logged, first=True, group_size=2)
    assert push["group"][0] == pytest.approx(0.5, abs=0.01) and push["group"][1] == pytest.approx(0.5, abs=0.01)
    assert push["batch"][0] < 0.02 and push["none"][0] < 0.02
    # binary: the scores made 0/1 at 0.5 (both wrong answers of b rejected: silent, as under the rule)
    assert push["binary"] == (0.0, 0.0)
    # a binary run's log: the 0/1 reward it trained on, the RM's score beside it. A group the RM rejected whole is
    # silent in every variant (the scores 0.3 / 0.4 are not what it trained on); a fooled answer gets the push
    rejected = [roll(1, "c", True, 1.0) | {"rm_score": 0.9}, roll(1, "c", False, 0.0) | {"rm_score": 0.1}]
    rejected += [roll(1, "d", False, 0.0) | {"rm_score": 0.3}, roll(1, "d", False, 0.0) | {"rm_score": 0.4}]
    assert rh.advantage_push(rejected, first=True, group_size=2) == {k: (0.0, 0.0) for k in rh.PUSHES}
    fooled = [roll(1, "b", False, 1.0) | {"rm_score": 0.7}, roll(1, "b", False, 0.0) | {"rm_score": 0.2}]
    assert (
        rh.advantage_push(fooled, first=True, group_size=2)["group"]
        == rh.advantage_push(fooled, first=True, group_size=2)["binary"]
        == (1.0, 1.0)
    )
    assert rh.advantage_push([], first=True, group_size=2) == {k: (None, None) for k in rh.PUSHES}


def fake_run(
    d: Path, last_step: int, acc_by_step: dict, reward=0.5, reused_step0=False, threads=None, extra_metrics=None
):
    """A run directory as reward_hacking/run.sh leaves it: evaluations at acc_by_step's steps, one reward call every 4 steps
    (reused_step0: its step-0 policy evaluation copied from a sibling run, in no time; extra_metrics(step): more
    metrics of a reward call)."""
    d.mkdir(parents=True)
    (d / "rl_config.json").write_text(
        json.dumps({"prompts_per_step": 2, "num_generations": 4, "steps_per_generation": 4})
    )
    evals = [
        {"step": s, "eval_seconds": 60.0, "policy": {"set": {"avg@k_strict": a}}}
        for s, a in sorted(acc_by_step.items())
    ]
    if reused_step0:
        evals[0] |= {"eval_seconds": 0.01, "policy_eval_reused_from": "runs/hack/rule-s0"}
    (d / "evals.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    steps = range(1, last_step + 1, 4)
    metrics = [{"step": s, "reward_mean": reward, "rule_accuracy": 0.2, "completion_length": s} for s in steps]
    metrics = [m | (extra_metrics(m["step"]) if extra_metrics else {}) for m in metrics]
    (d / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    extra = {"torch_threads": threads} if threads else {}  # older logs have no thread count
    timing = [{"step": s, "step_seconds": 2.0, "completion_tokens": 8 * s, **extra} for s in steps]
    (d / "timing.jsonl").write_text("".join(json.dumps(t) + "\n" for t in timing))
    with gzip.open(d / "rollouts.jsonl.gz", "wt") as f:
        for s in steps:
            f.write(json.dumps(roll(s, "q", s % 8 == 1, 0.5)) + "\n")


def fake_samples(root: Path, step: int, acc_by_run: dict):
    """Per-problem held-out samples of each run at one evaluation step: 50 problems, the first acc x 50 right."""
    for run, acc in acc_by_run.items():
        (root / f"runs/{run}/eval/step-{step}").mkdir(parents=True)
        with gzip.open(root / f"runs/{run}/eval/step-{step}/samples.jsonl.gz", "wt") as f:
            for i in range(50):
                f.write(json.dumps({"dataset": "set", "id": i, "correct": i < round(acc * 50)}) + "\n")


def test_a_seed_behind_its_condition_is_listed_in_progress_not_averaged_in(tmp_path, monkeypatch):
    fake_run(tmp_path / "runs/rule-s0", 200, {0: 0.30, 100: 0.28, 200: 0.29})
    fake_run(tmp_path / "runs/rule-s1", 120, {0: 0.30, 100: 0.10})  # a later seed, one evaluation in
    fake_run(tmp_path / "runs/rule-s2", 200, {0: 0.30, 100: 0.20, 200: 0.25})
    fake_run(tmp_path / "runs/model-s1", 100, {0: 0.30, 100: 0.05})
    monkeypatch.setattr("sys.argv", ["report.py", str(tmp_path)])
    rh.main()
    s = json.loads((tmp_path / "summary.json").read_text())
    rule = s["conditions"]["rule"]
    assert rule["last_eval_step"] == 200 and rule["seeds"] == [0, 2]
    assert rule["heldout_final_mean"] == pytest.approx(0.27)
    assert s["in_progress"] == {"rule": {"1": 100}}
    # pairs over the seeds both conditions have at the step both reached: none here (model has seed 1 only)
    assert "model - rule" not in s["paired_differences"]
    assert "rule seed 1 at step 100" in (tmp_path / "table.md").read_text()
    # what each reward liked: every finished seed, not the one in progress
    rule_examples = (tmp_path / "examples.md").read_text().split("## rule\n")[1].split("\n## ")[0]
    assert [line for line in rule_examples.splitlines() if line.startswith("### ")] == ["### seed 0", "### seed 2"]


def test_runs_in_progress_are_also_compared_over_the_steps_all_reached(tmp_path, monkeypatch):
    fake_run(tmp_path / "runs/rule-s0", 200, {0: 0.30, 100: 0.28, 200: 0.29})
    fake_run(tmp_path / "runs/model-s0", 200, {0: 0.30, 100: 0.10, 200: 0.02}, reused_step0=True)
    fake_run(tmp_path / "runs/cooper-s0", 120, {0: 0.30, 100: 0.25}, threads=1)  # stopped after its step-100 eval
    fake_run(tmp_path / "runs/cooper_new-s0", 30, {0: 0.30})  # not evaluated after step 0: left out
    monkeypatch.setattr("sys.argv", ["report.py", str(tmp_path)])
    rh.main()
    s = json.loads((tmp_path / "summary.json").read_text())
    assert list(s["conditions"]) == ["rule", "model", "cooper"]
    coop = s["conditions"]["cooper"]
    # every column cut at its last evaluation: metrics of steps 101-120 are not in it
    assert coop["last_eval_step"] == 100 and coop["rollouts_per_run"] == 800
    assert coop["completion_length_late"] < 100 and coop["heldout_final_mean"] == pytest.approx(0.25)
    assert s["conditions"]["model"]["hacked_seeds"] == [0] and s["conditions"]["rule"]["hacked_seeds"] == []
    assert s["conditions"]["model"]["collapsed_seeds"] == [0] and s["conditions"]["rule"]["collapsed_seeds"] == []
    assert s["conditions"]["model"]["seconds_per_optimizer_step"] == 2.0
    assert s["conditions"]["model"]["torch_threads"] == ["default"] and coop["torch_threads"] == ["1"]
    assert s["conditions"]["model"]["minutes_per_evaluation"] == 1.0  # its reused step-0 evaluation not counted
    same = s["same_span"]
    assert same["step"] == 100
    assert {c: v["heldout_final_mean"] for c, v in same["conditions"].items()} == pytest.approx(
        {"rule": 0.28, "model": 0.10, "cooper": 0.25}
    )
    assert "Every condition over the span all of them reached (steps 1–100" in (tmp_path / "table.md").read_text()
    # what each reward liked: from the same span (the stopped run's rollouts after its last evaluation left out)
    cooper_examples = (tmp_path / "examples.md").read_text().split("## cooper\n")[1]
    steps = [
        int(line.split(",")[0].removeprefix("- step ")) for line in cooper_examples.splitlines() if line[:2] == "- "
    ]
    assert steps and max(steps) <= 100
    assert "### seed 0" in cooper_examples


def test_seeds_in_progress_join_their_condition_at_the_step_every_seed_reached(tmp_path, monkeypatch):
    fake_run(tmp_path / "runs/rule-s0", 200, {0: 0.30, 100: 0.28, 200: 0.29})
    fake_run(tmp_path / "runs/rule-s1", 200, {0: 0.30, 100: 0.26, 200: 0.27})
    fake_run(tmp_path / "runs/model-s0", 200, {0: 0.30, 100: 0.10, 200: 0.02})
    fake_run(tmp_path / "runs/model-s1", 130, {0: 0.30, 100: 0.06})  # a rerun cut short after its step-100 eval
    fake_run(tmp_path / "runs/rule-s2", 20, {0: 0.30})  # evaluated at step 0 only: in neither table
    fake_samples(tmp_path, 100, {"rule-s0": 0.28, "rule-s1": 0.26, "model-s0": 0.10, "model-s1": 0.06})
    monkeypatch.setattr("sys.argv", ["report.py", str(tmp_path)])
    rh.main()
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["conditions"]["model"]["seeds"] == [0] and "same_span" not in s  # both conditions' furthest: 200
    # first the step every seed of every condition reached, then the later ones where the slow seed holds back only
    # its own condition
    later = s["every_seed_by_step"]
    assert list(later) == ["100", "200"] and "every_seed" not in s  # one key per step, nothing stored twice
    every = later["100"]
    assert every["short_of_it"] == {}
    assert {c: v["seeds"] for c, v in every["conditions"].items()} == {"rule": [0, 1], "model": [0, 1]}
    assert {c: v["heldout_final_mean"] for c, v in every["conditions"].items()} == pytest.approx(
        {"rule": 0.27, "model": 0.08}
    )
    assert every["paired_differences"]["model - rule"]["mean"] == pytest.approx(-0.19)
    assert every["paired_differences"]["model - rule"]["seeds"] == [0, 1]
    table = (tmp_path / "table.md").read_text()
    assert "Every seed of every condition at the last evaluation all of them reached (steps 1–100)" in table
    assert "Every seed of each condition at step 100" not in table  # shown once, under the title above
    assert list(later["200"]["conditions"]) == ["rule"]
    assert later["200"]["conditions"]["rule"]["seeds"] == [0, 1]
    assert later["200"]["conditions"]["rule"]["heldout_final_mean"] == pytest.approx(0.28)
    assert later["200"]["short_of_it"] == {"model": {"0": 200, "1": 100}}
    assert (
        "Every seed of each condition at step 200 (not all there: model (seeds at steps 200, 100))"
        in (tmp_path / "table.md").read_text()
    )
    # no seed in progress: no such section
    shutil.rmtree(tmp_path / "runs/model-s1")
    rh.main()
    assert "every_seed_by_step" not in json.loads((tmp_path / "summary.json").read_text())


def test_each_seed_has_its_own_numbers_and_a_run_at_step_0_is_listed(tmp_path, monkeypatch):
    fake_run(tmp_path / "runs/rule-s0", 200, {0: 0.30, 100: 0.28, 200: 0.26})
    fake_run(
        tmp_path / "runs/rule-s1",
        200,
        {0: 0.20, 100: 0.22, 200: 0.24},
        extra_metrics=lambda s: {"rule_accuracy": s / 200},
    )
    fake_run(tmp_path / "runs/model-s0", 200, {0: 0.30, 100: 0.10, 200: 0.02})
    fake_run(tmp_path / "runs/model-s1", 200, {0: 0.20, 100: 0.12, 200: 0.14})
    fake_run(tmp_path / "runs/model-s2", 20, {0: 0.18})  # started: evaluated at step 0 only
    fake_samples(tmp_path, 200, {"rule-s0": 0.26, "rule-s1": 0.24, "model-s0": 0.02, "model-s1": 0.14})
    monkeypatch.setattr("sys.argv", ["report.py", str(tmp_path)])
    rh.main()
    s = json.loads((tmp_path / "summary.json").read_text())
    rule = s["conditions"]["rule"]
    assert rule["heldout_by_step"] == pytest.approx({"0": 0.25, "100": 0.25, "200": 0.25})
    # a seed's block is that seed's report alone: the same as a report of a directory holding only that seed
    assert rule["by_seed"]["1"]["heldout_by_step"] == pytest.approx({"0": 0.20, "100": 0.22, "200": 0.24})
    assert rule["by_seed"]["1"]["heldout_final_by_seed"] == pytest.approx({"1": 0.24})
    assert "by_seed" not in rule["by_seed"]["1"]
    q = rule["by_seed"]["1"]["train_rule_accuracy_by_quarter"]  # rises with the step in this fake run
    assert (
        q == sorted(q)
        and q[0] < q[-1]
        and rule["by_seed"]["0"]["train_rule_accuracy_by_quarter"] == pytest.approx([0.2] * 4)
    )
    d = s["paired_differences"]["model - rule"]
    assert d["mean"] == pytest.approx(-0.17)
    assert {k: v["mean"] for k, v in d["by_seed"].items()} == pytest.approx({"0": -0.24, "1": -0.10})
    assert s["in_progress"] == {"model": {"2": 0}}
    assert s["in_progress_heldout_by_step"] == {"model": {"2": {"0": pytest.approx(0.18)}}}
    assert s["conditions"]["model"]["seeds"] == [0, 1]


def test_reference_positives_per_reward_call_are_reported(tmp_path, monkeypatch):
    fake_run(tmp_path / "runs/cooper-s0", 100, {0: 0.3, 100: 0.2}, extra_metrics=lambda s: {"rm/n_valid": 2})
    ref = {"rm/n_valid": 6}
    fake_run(
        tmp_path / "runs/cooper_ref-s0",
        100,
        {0: 0.3, 100: 0.25},
        extra_metrics=lambda s: ref | {"rm/reference_positives": 1 if s < 50 else 5},
    )
    monkeypatch.setattr("sys.argv", ["report.py", str(tmp_path)])
    rh.main()
    c = json.loads((tmp_path / "summary.json").read_text())["conditions"]
    assert list(c) == ["cooper", "cooper_ref"]  # the report's order of conditions
    assert (c["cooper_ref"]["rm_reference_positives_early"], c["cooper_ref"]["rm_reference_positives_late"]) == (1, 5)
    assert c["cooper"]["rm_reference_positives_early"] is None and c["cooper_ref"]["rm_valid_pairs_late"] == 6
    table = (tmp_path / "table.md").read_text()
    assert "6.0 (0.0) → 6.0 (0.0) [1.0 → 5.0]" in table and "2.0 (0.0) → 2.0 (0.0) |" in table


@pytest.mark.skipif(not (ROOT / "experiments/reward_hacking/results/runs").is_dir(), reason="no committed logs")
def test_committed_logs_report_what_their_evaluations_say(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "experiments/reward_hacking/results/runs", tmp_path / "runs")
    monkeypatch.setattr("sys.argv", ["report.py", str(tmp_path)])
    rh.main()
    s = json.loads((tmp_path / "summary.json").read_text())

    def heldout(c, seed, step):  # mean avg@k over the held-out sets, read straight from the run's evaluations
        rows = (tmp_path / f"runs/{c}-s{seed}/evals.jsonl").read_text().splitlines()
        sets = [
            x["avg@k_strict"] for x in next(e for e in map(json.loads, rows) if e["step"] == step)["policy"].values()
        ]
        return sum(sets) / len(sets)

    for c, v in s["conditions"].items():
        for seed, final in v["heldout_final_by_seed"].items():
            assert final == pytest.approx(heldout(c, seed, v["last_eval_step"]))
        lo, hi = v["heldout_final_ci95"]
        assert lo <= v["heldout_final_mean"] <= hi
    assert (tmp_path / "dynamics.png").stat().st_size > 10_000
    # runs in progress: every pair of conditions is compared at the last step both reached, over the seeds both have
    lasts = {c: v["last_eval_step"] for c, v in s["conditions"].items()}
    seeds = {c: set(v["heldout_final_by_seed"]) for c, v in s["conditions"].items()}
    for a, b in ((a, b) for a in lasts for b in lasts if a < b):
        step, d = min(lasts[a], lasts[b]), s["paired_differences"][f"{a} - {b}"]
        both = sorted(seeds[a] & seeds[b])
        want = sum(heldout(a, x, step) - heldout(b, x, step) for x in both) / len(both)
        assert d["step"] == step and d["mean"] == pytest.approx(want)
        assert d["ci95"][0] <= d["mean"] <= d["ci95"][1]


def _wrong(answer, reference, reward, question="q"):
    return {
        "step": 1,
        "question": question,
        "reference": reference,
        "completion": f"The answer is $\\boxed{{{answer}}}$.",
        "verdict": False,
        "reward": reward,
    }


def test_prefix_answers_are_proper_prefixes_of_the_reference():
    logged = [_wrong("9", "90", 1.0), _wrong("1", "1,929", 0.8), _wrong("91", "90", 0.2), _wrong("8", "90", 0.0)]
    w = rh.wrong_answers(logged, first=True)
    assert w["prefix"] == 0.5 and w["prefix_reward"] == pytest.approx(0.9)
    assert w["non_prefix_reward"] == pytest.approx(0.1)


def test_copied_answers_are_numbers_of_the_question_and_ranked_within_groups():
    q = "Liam has 13 pencils. He collects 3 more and gives away 1,200 stickers. How many pencils?"
    logged = [
        _wrong("13", "16", 0.9, q),  # a copy, ranked over both other wrong answers of its group
        _wrong("1200", "16", 0.7, q),  # a copy too (thousands separator in the question)
        _wrong("14", "16", 0.8, q),
        _wrong("15", "16", 0.1, q),
        _wrong("13", "16", 0.5, "Other question with 2 apples"),  # not in its question: no copy, no pair
        {**_wrong("0", "16", 0.95, q), "completion": "I am not sure"},  # no answer: in no comparison
    ]
    w = rh.wrong_answers(logged, first=True)
    assert w["copied"] == pytest.approx(2 / 6)
    assert w["copied_reward"] == pytest.approx(0.8) and w["non_copied_reward"] == pytest.approx(1.4 / 3)
    # pairs (copy, other wrong) in the first group only: (0.9 > 0.8), (0.9 > 0.1), (0.7 < 0.8), (0.7 > 0.1)
    assert w["copied_rank_pairs"] == 4 and w["copied_rank"] == pytest.approx(3 / 4)
    # the reply without an answer against the five wrong answers that have one
    assert w["no_answer"] == pytest.approx(1 / 6) and w["no_answer_reward"] == pytest.approx(0.95)
    assert w["answered_wrong_reward"] == pytest.approx(3.0 / 5)
    assert not rh.copied(q, None) and not rh.copied(q, "3.5") and rh.copied(q, "3")


def test_heldout_answers_count_format_and_copies(tmp_path):
    d = tmp_path / "run-s0"
    (d / "eval/step-0").mkdir(parents=True)
    rows = [
        {"dataset": "a", "id": "1", "question": "Ann has 5 cats and 2 dogs.", "extracted": "5", "correct": False},
        {"dataset": "a", "id": "1", "question": "Ann has 5 cats and 2 dogs.", "extracted": None, "correct": False},
        {"dataset": "a", "id": "2", "question": "Ann has 5 cats and 2 dogs.", "extracted": "7", "correct": True},
        {"dataset": "a", "id": "2", "question": "Ann has 5 cats and 2 dogs.", "extracted": "8", "correct": False},
    ]
    with gzip.open(d / "eval/step-0/samples.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    run = rh.load_run(d)
    # of the wrong samples with an answer ("5", "8"), one copies the question
    assert run["heldout_answers"][0] == {"no_strict_answer": 0.25, "copied_of_wrong": 0.5}


def test_around_flags_splits_the_reward_calls_at_the_first_and_last_flag():
    ms = [
        {"step": s, "reward_mean": r, "rule_accuracy": 0.2, "rm_fooled_rate": f}
        for s, r, f in [(1, 0.1, 0.0), (5, 0.1, 0.2), (9, 0.9, 0.8), (13, 0.7, None), (17, 0.2, 0.0)]
    ]
    a = rh.around_flags(ms, [9, 13])
    assert a["before"] == {
        "steps": [1, 5],
        "reward_mean": pytest.approx(0.1),
        "rule_accuracy": 0.2,
        "rm_fooled_rate": pytest.approx(0.1),
    }
    assert a["flagged"]["steps"] == [9, 13] and a["flagged"]["rm_fooled_rate"] == 0.8  # a missing rate is skipped
    assert a["after"]["steps"] == [17, 17] and a["after"]["reward_mean"] == 0.2
    assert "after" not in rh.around_flags(ms, [17]) and rh.around_flags(ms, []) is None


def test_windows_split_a_run_into_fixed_step_spans():
    ms = [
        {"step": s, "reward_mean": r, "rule_accuracy": 0.2, "rm_fooled_rate": f, "completion_length": 40.0}
        for s, r, f in [(1, 0.1, 0.0), (37, 0.3, 0.2), (40, 0.5, None), (41, 0.9, 0.8), (85, 0.2, 0.1)]
    ]
    w = rh.windows(ms, width=40)
    assert [x["steps"] for x in w] == [[1, 40], [41, 41], [85, 85]]  # step 40 closes the first window; 81-120 third
    assert w[0]["reward_mean"] == pytest.approx(0.3) and w[0]["rm_fooled_rate"] == pytest.approx(0.1)
    assert w[0]["rm_fooled_rate_max"] == 0.2 and w[1]["rm_fooled_rate_max"] == 0.8  # a missing rate is skipped
    assert rh.windows([]) == []


def test_advantage_push_groups_by_position_not_question_text():
    # one prompt drawn twice in a call (two groups with the same question): the right answer's group is mixed, the
    # other all wrong -- keyed by question text they would merge into one mixed group of 4
    twice = [roll(1, "a", True, 1.0), roll(1, "a", False, 0.0), roll(1, "a", False, 0.2), roll(1, "a", False, 0.4)]
    push = rh.advantage_push(twice, first=True, group_size=2)
    assert push["none"][1] == pytest.approx(0.2 / 1.2)  # |adv|: 0.5, 0.5 (mixed) and 0.1, 0.1 (all wrong)

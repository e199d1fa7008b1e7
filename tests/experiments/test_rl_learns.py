"""experiments/rl_learns: the runs' commands come from settings.yaml and the frozen monitor.yaml, one process per run
dir, and the report's numbers follow from a run's logs."""

import gzip
import json
from pathlib import Path

import yaml
from tests.experiments import load_script

from cooper_rl.rl.config import RLConfig

HERE = Path(__file__).resolve().parents[2] / "experiments/rl_learns"
run = load_script("run", HERE)
report = load_script("report", HERE)


def flags_of(cmd: list[str]) -> dict:
    """{flag: value(s)} of a `cooper rl` command line."""
    out, key = {}, None
    for x in cmd[2:]:
        if x.startswith("--"):
            key = x[2:]
            out[key] = []
        else:
            out[key].append(x)
    return {k: v[0] if len(v) == 1 else v for k, v in out.items()}


def test_every_setting_is_a_valid_cooper_rl_command_with_the_frozen_monitor():
    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    monitor = yaml.safe_load((HERE / "monitor.yaml").read_text())
    names = {f.name for f in RLConfig.__dataclass_fields__.values()}
    for name, s in settings["settings"].items():
        f = flags_of(run.command(settings, name, 0))
        assert set(f) - {"config"} <= names, f"{name}: unknown flags {set(f) - names}"
        assert all(str(v) == f[k] for k, v in monitor.items()), name  # every run judged by the same monitor
        assert f["datasets"] == (settings["filter"]["output"] if s["filtered"] else settings["filter"]["datasets"][0])
        per_step = int(f["prompts_per_step"]) * int(f["num_generations"])
        want = 6400 if name == "b64_long" else 3200  # b64_long: twice the budget, on purpose (predictions.md)
        assert per_step * int(f["max_steps"]) == want, f"{name}: not the budget"
        assert per_step // int(f.get("gradient_accumulation_steps", 1)) <= 16, f"{name}: micro-batch too large"


def test_a_run_dir_has_one_writer(tmp_path):
    fd = run.take_lock(tmp_path / "x.lock")
    assert fd is not None and run.take_lock(tmp_path / "x.lock") is None
    import os

    os.close(fd)
    assert run.take_lock(tmp_path / "x.lock") is not None


def test_report_of_a_run(tmp_path):
    d = tmp_path / "b64-s0"
    d.mkdir()
    cfg = {"num_generations": 2, "prompts_per_step": 2, "learning_rate": 1e-5, "scale_rewards": "group"}
    (d / "rl_config.json").write_text(json.dumps(cfg))
    calls = [[0, 0, 1, 0], [1, 0, 1, 1]]  # reward call 1: one group all wrong; call 2: one group all right
    rows = [{"step": s + 1, "reward": float(v), "verdict": bool(v)} for s, c in enumerate(calls) for v in c]
    (d / "rollouts.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    (d / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n')
    (d / "timing.jsonl").write_text('{"step": 1, "step_seconds": 3.0}\n{"step": 2, "step_seconds": 5.0}\n')
    for step, hits in ((0, [0, 0]), (2, [1, 0])):
        e = d / "eval" / f"step-{step}"
        e.mkdir(parents=True)
        samples = [{"dataset": "builtin:test:300:1,2", "id": f"p{i}", "correct": bool(h)} for i, h in enumerate(hits)]
        (e / "samples.jsonl").write_text("".join(json.dumps(x) + "\n" for x in samples))
    ev = [{"step": s, "policy": {"builtin:test:300:1,2": {"avg@k_strict": a}}} for s, a in ((0, 0.0), (2, 0.5))]
    (d / "evals.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev))
    r = report.run_report(d, "b64-s0")
    assert r["rollouts"] == 8 and r["seconds_per_1k_rollouts"] == 1000.0
    assert r["zero_spread_groups"] == 0.5 and r["informative_groups_per_step"] == 1.0
    assert r["train_accuracy_slope_per_1k"] == 12500.0  # 25 -> 75 % in 4 rollouts: 12.5 points per rollout
    assert r["heldout"]["built-in test"] == {0: 0.0, 2: 50.0}
    assert r["heldout_gain"]["built-in test"]["gain"] == 50.0
    assert "| b64-s0 |" in report.table({"b64-s0": r})


def test_a_condition_is_the_regime_with_its_own_flags_and_rm():
    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    names = {f.name for f in RLConfig.__dataclass_fields__.values()}
    settings["regime"] = "b64"
    base = flags_of(run.command(settings, "b64", 0))
    for name, cond in settings["conditions"].items():
        f = flags_of(run.command(settings, name, 1))
        assert set(f) - {"config"} <= names, f"{name}: unknown flags {set(f) - names}"
        assert f["rm"] == settings["rms"][cond["rm"]]["path"] and f["rm_eval_data"] == settings["rm_eval_data"]
        assert run.prereqs(settings, name) == ["filter", f"rm:{cond['rm']}"]
        # everything else is the regime's: prompts, batch, schedule, budget, monitor
        same = {
            k: v
            for k, v in base.items()
            if k not in cond["flags"]
            and k not in ("output_dir", "seed", "eval_steps", "eval_step0_from", "resume_from_checkpoint")
        }
        assert {k: f.get(k) for k in same} == same, name
        assert int(f["eval_steps"]) == int(base["max_steps"]) // 2
    # the §4 intervention changes one factor
    a, b = (settings["conditions"][c]["flags"] for c in ("cooper_paper", "cooper_paper_noscale"))
    assert {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)} == {"scale_rewards"}


def test_a_condition_needs_a_regime():
    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    settings["regime"] = None
    import pytest

    with pytest.raises(SystemExit, match="regime"):
        run.command(settings, "cooper_paper", 0)
    with pytest.raises(SystemExit, match="unknown"):
        run.command(settings, "nope", 0)


def test_accuracy_over_the_warmup_is_paired_by_prompt(tmp_path, monkeypatch):
    # an easy prompt (warm-up pass rate 0.75) and a hard one (0.25); the first call draws the easy one twice, the
    # last the hard one twice: the raw accuracy falls although the policy improved on both prompts
    passrates = tmp_path / "pr.jsonl"
    passrates.write_text(json.dumps({"question": "easy", "pass_rate": 0.75}) + "\n" + json.dumps({"question": "hard", "pass_rate": 0.25}) + "\n")  # fmt: skip
    monkeypatch.setattr(report, "PASSRATES", passrates)
    d = tmp_path / "b64-s0"
    d.mkdir()
    cfg = {"num_generations": 2, "prompts_per_step": 2, "learning_rate": 1e-5, "scale_rewards": "group"}
    (d / "rl_config.json").write_text(json.dumps(cfg))
    calls = [[("easy", 1), ("easy", 1), ("easy", 1), ("easy", 0)], [("hard", 1), ("hard", 1), ("hard", 0), ("hard", 0)]]
    rows = [{"step": s + 1, "question": q, "reward": float(v), "verdict": bool(v)} for s, c in enumerate(calls) for q, v in c]  # fmt: skip
    (d / "rollouts.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    r = report.run_report(d, "x")
    assert r["train_accuracy_last_quarter"] < r["train_accuracy_first_quarter"]
    assert r["over_warmup_first_quarter"] == 0 and r["over_warmup_last_quarter"] == 25
    # rollouts mostly on prompts without a pass rate: no paired number
    monkeypatch.setattr(report, "PASSRATES", tmp_path / "none.jsonl")
    assert report.run_report(d, "x")["over_warmup_first_quarter"] is None


def test_the_monitor_is_judged_against_the_preregistered_collapse(tmp_path):
    d = tmp_path / "cooper_paper-s0"
    d.mkdir()
    metrics = [{"step": s, "monitor/acc_fall": float(s >= 20), "monitor/rm_fooled": 0.0} for s in range(1, 51)]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in metrics))
    ev = lambda step, a, b: {"step": step, "policy": {"x": {"avg@k_strict": a}, "y": {"avg@k_strict": b}}}  # noqa: E731
    # mean 20 % at the start, 14 % at step 25 (6 points down: bad), 16 % at the end (4 down: not collapsed)
    evals = [ev(0, 0.30, 0.10), ev(25, 0.20, 0.08), ev(50, 0.22, 0.10)]
    m = report.monitor_report(d, evals)
    assert (m["first_flag"], m["flagged_calls"], m["first_bad_eval"]) == (20, 31, 25)
    assert m["flagged_in_time"] and not m["collapsed"]
    m = report.monitor_report(d, [ev(0, 0.30, 0.10), ev(25, 0.30, 0.10), ev(50, 0.20, 0.08)])
    assert m["collapsed"] and m["first_bad_eval"] == 50 and m["flagged_in_time"]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r | {"monitor/acc_fall": float(r["step"] > 25)}) + "\n" for r in metrics))  # fmt: skip
    assert not report.monitor_report(d, evals)["flagged_in_time"]  # the first flag came after the bad evaluation


def test_a_run_of_another_driver_counts_as_a_job_until_its_lock_is_free(tmp_path, monkeypatch):
    import os

    fd = run.take_lock(tmp_path / "r.lock")
    f = run.Foreign(tmp_path / "r.lock")
    assert f.poll() is None and f.returncode is None
    os.close(fd)  # the other process ended
    assert f.poll() == 0
    monkeypatch.setattr(run, "RUNS", tmp_path)
    assert run.jobs_now(2) == 2
    (tmp_path / "jobs").write_text("1\n")
    assert run.jobs_now(2) == 1
    (tmp_path / "jobs").write_text("x")
    assert run.jobs_now(2) == 2


def test_rule_is_the_regimes_run_and_compare_plans_every_condition_seed_by_seed():
    import pytest

    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    settings["regime"] = "b64"
    assert run.parse_run(settings, "rule:2") == ("b64", 2) and run.parse_run(settings, "model:1") == ("model", 1)
    for bad in ("model", "model:x", "model:"):
        with pytest.raises(SystemExit, match="NAME:SEED"):
            run.parse_run(settings, bad)
    plan = [run.parse_run(settings, f"{n}:{s}") for n, s in run.compare_plan(settings)]
    assert plan[: 1 + len(settings["conditions"])] == [("b64", 0)] + [(c, 0) for c in settings["conditions"]]
    assert len(plan) == 3 * (1 + len(settings["conditions"])) and {s for _, s in plan} == {0, 1, 2}
    settings["regime"] = None
    with pytest.raises(SystemExit, match="regime"):
        run.parse_run(settings, "rule:0")


def test_a_run_dir_made_with_another_schedule_is_not_resumed(tmp_path, monkeypatch):
    import pytest

    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    settings["regime"] = "b64"
    monkeypatch.setattr(run, "RUNS", tmp_path)
    run.check_schedule(settings, "cooper_paper", 0)  # no run dir yet
    (tmp_path / "cooper_paper-s0").mkdir()
    made = tmp_path / "cooper_paper-s0" / "rl_config.json"
    made.write_text(json.dumps({"max_steps": 50, "eval_steps": 25}))
    run.check_schedule(settings, "cooper_paper", 0)  # the same schedule: resumed
    settings["regime"] = "b64_long"  # 100 steps, evaluated at 50: another run
    with pytest.raises(SystemExit, match="max_steps 50 \\(now 100\\)"):
        run.check_schedule(settings, "cooper_paper", 0)


def test_every_run_of_a_condition_starts_from_the_recorded_rm(tmp_path, monkeypatch):
    import pytest
    import torch
    from safetensors.torch import save_file

    settings = {"rms": {"weak": {"path": str(tmp_path / "rm"), "build": "bash weak_rm.sh"}}}
    monkeypatch.setattr(run, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(run, "ROOT", tmp_path)
    (tmp_path / "rm").mkdir()
    save_file({"w": torch.zeros(2)}, tmp_path / "rm" / "model.safetensors")
    run.check_rm(settings, "weak")  # first use: recorded
    first = json.loads((tmp_path / "results" / "rms.json").read_text())["weak"]["sha256"]
    run.check_rm(settings, "weak")  # the same RM
    save_file({"w": torch.ones(2)}, tmp_path / "rm" / "model.safetensors")  # a rebuild that came out otherwise
    with pytest.raises(SystemExit, match="not the rm:weak"):
        run.check_rm(settings, "weak")
    from cooper_rl.io import weights_sha256

    settings["rms"]["weak"]["also_accept"] = [weights_sha256(tmp_path / "rm")]  # equal within rounding, listed
    run.check_rm(settings, "weak")
    assert json.loads((tmp_path / "results" / "rms.json").read_text())["weak"]["sha256"] == first


def test_a_prerequisite_another_driver_failed_to_build_fails_here(tmp_path, monkeypatch):
    from types import SimpleNamespace

    settings = {"rms": {"weak": {"path": "rm", "build": "x"}}, "filter": {"output": "f.jsonl"}}
    monkeypatch.setattr(run, "ROOT", tmp_path)
    other = run.Foreign(tmp_path / "rm-weak.lock")
    assert other.poll() == 0  # its lock is free: it ended, exit status unknown
    assert run.prereq_failed(settings, "rm:weak", other, stopped=False)  # and left no RM
    assert not run.prereq_failed(settings, "rm:weak", other, stopped=True)  # stopped at the deadline: resumes
    (tmp_path / "rm").mkdir()
    (tmp_path / "rm" / "cooper_rm.json").write_text("{}")
    assert not run.prereq_failed(settings, "rm:weak", other, stopped=False)
    assert run.prereq_failed(settings, "rm:weak", SimpleNamespace(returncode=1), stopped=False)

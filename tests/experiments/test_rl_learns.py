"""experiments/rl_learns: the runs' commands come from settings.yaml and the frozen monitor.yaml, one process per run
dir, and the report's numbers follow from a run's logs."""

import gzip
import hashlib
import json
import logging
from pathlib import Path

import pytest
import yaml
from tests.experiments import load_script

from cooper_rl.rl.config import RLConfig

HERE = Path(__file__).resolve().parents[2] / "experiments/rl_learns"
run = load_script("run", HERE)
report = load_script("report", HERE)
comparison = load_script("comparison", HERE)
decisions = load_script("decisions", HERE)
runlogs = load_script("runlogs", HERE)
rundirs = load_script("rundirs", HERE)


def b64_settings() -> dict:
    """settings.yaml with the sweep's b64 as the comparison's regime (the fake runs' setting)."""
    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    settings["regime"] = "b64"
    return settings


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
    for name, c in settings[
        "conditions"
    ].items():  # every comparison condition: the regime plus valid flags, its RM known
        assert c["rm"] in settings["rms"], name
        f = flags_of(run.command(settings, name, 0))
        assert set(f) - {"config"} <= names, f"{name}: unknown flags {set(f) - names}"
        assert f["rm"] == settings["rms"][c["rm"]]["path"], name


def test_a_run_dir_has_one_writer(tmp_path):
    fd = run.take_lock(tmp_path / "x.lock")
    assert fd is not None and run.take_lock(tmp_path / "x.lock") is None
    import os

    os.close(fd)
    assert run.take_lock(tmp_path / "x.lock") is not None


def test_report_of_a_run(tmp_path):
    d = tmp_path / "b64-s0"
    d.mkdir()
    cfg = {"max_steps": 2, "num_generations": 2, "prompts_per_step": 2, "learning_rate": 1e-5, "scale_rewards": "group"}
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
    assert r["heldout_gain"]["built-in test"]["mean"] == 50.0
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
            and k != "save_total_limit"
        }
        assert {k: f.get(k) for k in same} == same, name
        assert int(f["eval_steps"]) == int(base["max_steps"]) // 2
        assert int(f["save_total_limit"]) == 2  # a Cooper run's newest checkpoint gets its RM state last
    # the §4 intervention changes one factor
    a, b = (settings["conditions"][c]["flags"] for c in ("cooper_paper", "cooper_paper_noscale"))
    assert {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)} == {"scale_rewards"}
    # in a regime without std scaling, every model-based condition but the intervention arm still scales (the
    # paper's GRPO), and all keep the regime's loss_type (predictions.md, addendum of 2026-12-02)
    settings["regime"] = "b64_drgrpo"
    for name in settings["conditions"]:
        f = flags_of(run.command(settings, name, 1))
        assert f["scale_rewards"] == ("none" if name == "cooper_paper_noscale" else "group"), name
        assert f["loss_type"] == "dr_grpo", name


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
    cfg = {"max_steps": 2, "num_generations": 2, "prompts_per_step": 2, "learning_rate": 1e-5, "scale_rewards": "group"}
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
    metrics = [
        {"step": s, "monitor/acc_fall": float(s >= 20), "monitor/rm_fooled": float(s >= 30), "monitor/entropy": 0.0}
        for s in range(1, 51)
    ]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in metrics))
    ev = lambda step, a, b: {"step": step, "policy": {"x": {"avg@k_strict": a}, "y": {"avg@k_strict": b}}}  # noqa: E731
    # mean 20 % at the start, 14 % at step 25 (6 points down: bad), 16 % at the end (4 down: not collapsed)
    evals = [ev(0, 0.30, 0.10), ev(25, 0.20, 0.08), ev(50, 0.22, 0.10)]
    m = runlogs.monitor_report(d, evals)
    assert (m["first_flag"], m["flagged_calls"], m["first_bad_eval"]) == (20, 31, 25)
    assert m["flagged_in_time"] and not m["collapsed"]
    assert m["first_flag_by_check"] == {"acc_fall": 20, "rm_fooled": 30}  # a check that never fired is not named
    assert report.checks(m) == "acc_fall 20, rm_fooled 30"
    m = runlogs.monitor_report(d, [ev(0, 0.30, 0.10), ev(25, 0.30, 0.10), ev(50, 0.20, 0.08)])
    assert m["collapsed"] and m["first_bad_eval"] == 50 and m["flagged_in_time"]
    (d / "metrics.jsonl").write_text("".join(json.dumps(r | {"monitor/acc_fall": float(r["step"] > 25)}) + "\n" for r in metrics))  # fmt: skip
    assert not runlogs.monitor_report(d, evals)["flagged_in_time"]  # the first flag came after the bad evaluation


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


def test_rule_is_the_regimes_run_and_compare_plans_every_condition_seed_by_seed(tmp_path):
    import pytest

    settings = b64_settings()
    assert run.parse_run(settings, "rule:2") == ("b64", 2) and run.parse_run(settings, "model:1") == ("model", 1)
    for bad in ("model", "model:x", "model:"):
        with pytest.raises(SystemExit, match="NAME:SEED"):
            run.parse_run(settings, bad)
    plan = [run.parse_run(settings, f"{n}:{s}") for n, s in run.compare_plan(settings)]
    own = {c for c, v in settings["conditions"].items() if v.get("rm") == "shipped"}  # shipped_plan's, seed 0
    assert own and all(settings["conditions"][c]["seeds"] == [0] for c in own)
    plain = [c for c in settings["conditions"] if c not in own]
    assert plan[: 1 + len(plain)] == [("b64", 0)] + [(c, 0) for c in plain]
    assert len(plan) == 3 * (1 + len(plain)) and {s for _, s in plan} == {0, 1, 2} and not {c for c, _ in plan} & own

    # issue 106 §3 and §2 follow its decision: a variant that met its targets joins the headline's seeds 3-4; the
    # shipped-RM runs take the default, or if neither met them, the one with fewer wrong rows accepted at step 50
    def decision(rehearsal_met, recal_met, default, ends=(8.6, 2.6)):
        judged = lambda met, end: {"all_targets_met": met, "predictions": {"wrong_accepted_end_mean": end}}  # noqa: E731
        return {"cooper_rehearsal": judged(rehearsal_met, ends[0]), "cooper_recal": judged(recal_met, ends[1]), "default": default}  # fmt: skip

    head = [run.parse_run(settings, f"{n}:{s}") for n, s in run.headline_plan(settings, decision(False, False, None))]
    assert head[:5] == [("b64", 3), ("model", 3), ("model_strong", 3), ("cooper_paper", 3), ("cooper_rehearsal", 3)]
    n = len(settings["headline"])
    assert len(head) == 2 * n and {s for _, s in head} == {3, 4}
    head = run.headline_plan(settings, decision(False, True, "cooper_recal"))
    assert len(head) == 2 * (n + 1) and ("cooper_recal", 3) in head and ("cooper_recal", 4) in head
    plan = run.shipped_plan(settings, decision(False, True, "cooper_recal"))
    assert plan == [("cooper_paper_shipped", 0), ("cooper_recal_shipped", 0)]
    assert run.shipped_plan(settings, decision(False, False, None))[1] == ("cooper_recal_shipped", 0)
    assert run.shipped_plan(settings, decision(False, False, None, ends=(3.0, 4.0)))[1] == ("cooper_rehearsal_shipped", 0)  # fmt: skip
    assert run.shipped_plan(settings, decision(True, True, "cooper_rehearsal"))[1] == ("cooper_rehearsal_shipped", 0)
    # report.py's summary.json: only a made decision (a default, or None for neither) lets --shipped/--headline plan
    with pytest.raises(SystemExit, match="not judged yet"):
        run.issue106_decision(tmp_path)
    waiting = {"cooper_rehearsal": None, "cooper_recal": decision(False, True, None)["cooper_recal"], "default": "waiting for 3 seeds of cooper_rehearsal"}  # fmt: skip
    undetermined = decision(None, True, "undetermined: a number of cooper_rehearsal rests on fewer than 3 seeds")
    for d in (waiting, undetermined):
        (tmp_path / "summary.json").write_text(json.dumps({"comparison": {"decisions": {"issue106": d}}}))
        with pytest.raises(SystemExit, match=d["default"].split(":")[0]):
            run.issue106_decision(tmp_path)
    for d in (decision(False, False, None), decision(False, True, "cooper_recal")):
        (tmp_path / "summary.json").write_text(json.dumps({"comparison": {"decisions": {"issue106": d}}}))
        assert run.issue106_decision(tmp_path) == d
    settings["regime"] = None
    with pytest.raises(SystemExit, match="regime"):
        run.parse_run(settings, "rule:0")


def test_a_run_dir_made_with_another_schedule_is_not_resumed(tmp_path, monkeypatch):
    import pytest

    settings = b64_settings()
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
    import torch
    from safetensors.torch import save_file

    settings = {"rms": {"weak": {"path": str(tmp_path / "rm"), "build": "bash weak_rm.sh"}}}
    monkeypatch.setattr(run, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(run, "ROOT", tmp_path)
    (tmp_path / "rm").mkdir()
    save_file({"w": torch.zeros(2)}, tmp_path / "rm" / "model.safetensors")
    assert run.check_rm(settings, "weak") is None  # first use: recorded
    first = json.loads((tmp_path / "results" / "rms.json").read_text())["weak"]["sha256"]
    assert run.check_rm(settings, "weak") is None  # the same RM
    save_file({"w": torch.ones(2)}, tmp_path / "rm" / "model.safetensors")  # a rebuild that came out otherwise
    assert "is not the rm:weak the comparison's runs used" in run.check_rm(settings, "weak")
    from cooper_rl.io import weights_sha256

    settings["rms"]["weak"]["also_accept"] = [weights_sha256(tmp_path / "rm")]  # equal within rounding, listed
    assert run.check_rm(settings, "weak") is None
    assert json.loads((tmp_path / "results" / "rms.json").read_text())["weak"]["sha256"] == first
    (tmp_path / "rm" / "model.safetensors").unlink()
    assert "has no model.safetensors" in run.check_rm(settings, "weak")


def test_what_became_of_a_prerequisite(tmp_path, monkeypatch):
    from types import SimpleNamespace

    settings = {"rms": {"weak": {"path": "rm", "build": "x"}}, "filter": {"output": "f.jsonl"}}
    monkeypatch.setattr(run, "ROOT", tmp_path)
    other = run.Foreign(tmp_path / "rm-weak.lock")
    assert other.poll() == 0  # its lock is free: it ended, exit status unknown
    assert run.prereq_outcome(settings, "rm:weak", other, stopped=False) == "retry"  # no RM: build it here
    assert run.prereq_outcome(settings, "rm:weak", other, stopped=True) == "stopped"  # at the deadline: resumes
    own = SimpleNamespace(returncode=0)
    assert run.prereq_outcome(settings, "rm:weak", own, stopped=False) == "failed"  # exited 0, left no RM
    (tmp_path / "rm").mkdir()
    (tmp_path / "rm" / "cooper_rm.json").write_text("{}")
    assert run.prereq_outcome(settings, "rm:weak", other, stopped=False) == "done"
    assert run.prereq_outcome(settings, "rm:weak", own, stopped=False) == "done"
    assert run.prereq_outcome(settings, "rm:weak", SimpleNamespace(returncode=1), stopped=False) == "failed"


def test_trl_log_is_kept_from_the_newest_checkpoint(tmp_path, caplog):
    out, dst = tmp_path / "run", tmp_path / "copy"
    dst.mkdir()
    for step, kl in ((5, 0.1), (10, 0.2)):
        (out / f"checkpoint-{step}").mkdir(parents=True)
        history = [{"step": s, "loss": 0.0, "kl": kl, "epoch": 1.0} for s in range(1, step + 1)]
        history.append({"step": step, "train_runtime": 9.0})  # TRL's end-of-train record: no loss, not a step
        (out / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    (out / "checkpoint-12").mkdir()  # being written: no state yet
    with caplog.at_level(logging.WARNING):
        run.trainer_log(out, dst)
    assert not caplog.records  # a checkpoint being written is expected while a run goes: no warning per copy
    rows = [json.loads(x) for x in (dst / "trainer_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 11)) and rows[0] == {"step": 1, "kl": 0.2, "loss": 0.0}
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    run.trainer_log(tmp_path / "none", fresh, previous=dst / "trainer_log.jsonl")  # no checkpoint: the last copy
    assert (fresh / "trainer_log.jsonl").read_text() == (dst / "trainer_log.jsonl").read_text()


def _fake_run(
    d: Path, acc_end: float, pos_wrong, rm_right_end: int, finished: bool = True, scale="group", rm_sha256="abc"
):
    """A finished 2-step run dir: three evaluation sets of 20 problems (score 0.5 at step 0, acc_end at the end; the
    mean of sets moves as acc_end), an RM that gets 4 of 4 labelled rows right at step 0 and rm_right_end at the end."""
    import shutil

    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    cfg = {"max_steps": 2, "num_generations": 2, "prompts_per_step": 1, "learning_rate": 1e-5, "scale_rewards": scale}
    (d / "rl_config.json").write_text(json.dumps(cfg | {"rm_sha256": rm_sha256}))
    (d / "rl_summary.json").write_text(json.dumps({"global_step": 2 if finished else 1}))
    sets = ["builtin:test:300:1,2", "x/svamp_heldout.jsonl", "x/gsm8k_test.jsonl"]
    evals = []
    for step, acc in ((0, 0.5), (2 if finished else 1, acc_end)):  # an unfinished run was not evaluated at its end
        e = d / "eval" / f"step-{step}"
        e.mkdir(parents=True)
        rows = [{"dataset": s, "id": i, "correct": i < 20 * acc} for s in sets for i in range(20)]
        (e / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        right = 4 if step == 0 else rm_right_end
        labels = [1, 0, 1, 0]
        scores = [float(y) if i < right else 1.0 - y for i, y in enumerate(labels)]
        (e / "rm_scores.json").write_text(json.dumps({"labels": labels, "scores": scores}))
        auroc = {4: 1.0, 2: 0.5}.get(right)  # these scores' AUROC: all 4 rows right, or one right and one wrong flipped
        rm = {"accuracy": right / 4, "auroc": auroc}
        evals.append({"step": step, "policy": {s: {"avg@k_strict": acc} for s in sets}, "rm": rm})
    (d / "evals.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    metrics = [{"step": s, "signal/pos_adv_to_wrong": pos_wrong, "reward_mean": acc_end, "rule_accuracy": acc_end} for s in (1, 2)]  # fmt: skip
    (d / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    rollouts = [{"step": s, "reward": r, "verdict": bool(r > 0.5)} for s in (1, 2) for r in (0.2, 0.6)]
    (d / "rollouts.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rollouts).encode()))
    (d / "trainer_log.jsonl").write_text('{"step": 1, "kl": 0.01}\n{"step": 2, "kl": 0.03}\n')


def test_wrong_rows_accepted_are_split_by_what_wrote_them(tmp_path):
    data = tmp_path / "labelled.jsonl"
    rows = [  # (label, source, completion): a right row, then wrong rows of two writers, with and without an answer
        (1, "ref", "So it is \\boxed{4}."),
        (0, "policy", "So it is \\boxed{5}."),
        (0, "policy", "So it is \\boxed{6}."),
        (0, "base", "So it is \\boxed{7}."),
        (0, "base", "I think the apples are many."),
    ]
    data.write_text("".join(json.dumps({"label": y, "source": w, "completion": c}) + "\n" for y, w, c in rows))
    d = tmp_path / "run"
    (d / "eval" / "step-3").mkdir(parents=True)
    scores = [0.9, 0.7, 0.1, 0.2, 0.6]  # accepts one of the policy's two wrong rows and the base's answerless one
    r = {"data": str(data), "labels": [y for y, _, _ in rows], "scores": scores}
    (d / "eval" / "step-3" / "rm_scores.json").write_text(json.dumps(r))
    assert comparison.rm_accepts_wrong_by_kind(d, 3) == {
        "base, an answer": 0.0,
        "base, no answer": 100.0,
        "policy, an answer": 50.0,
    }
    assert comparison.rm_accepts_wrong_by_kind(d, 4) is None  # no evaluation at that step
    (d / "eval" / "step-5").mkdir()
    (d / "eval" / "step-5" / "rm_scores.json").write_text(json.dumps(r | {"labels": [1, 1, 0, 0, 0]}))
    with pytest.raises(ValueError, match="labels are not those of"):
        comparison.rm_accepts_wrong_by_kind(d, 5)


def test_rm_negatives_answered_counts_what_the_rm_was_taught_to_reject(tmp_path):
    assert comparison.rm_negatives_answered(tmp_path) is None  # a run without an RM side
    pairs = [
        {"step": 1, "positive": "So \\boxed{4}.", "negative": "So \\boxed{5}."},
        {"step": 1, "positive": "So \\boxed{4}.", "negative": "The apples are many."},
        {"step": 2, "positive": "So \\boxed{4}.", "negative": "So \\boxed{7}."},
        {"step": 2, "positive": "So \\boxed{4}.", "negative": "So \\boxed{-3}."},
    ]
    (tmp_path / "rm_pairs.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in pairs).encode()))
    # three negatives end in a boxed answer, one (a content-free reply) in none
    assert comparison.rm_negatives_answered(tmp_path) == {"pairs": 4, "negative has an answer": 75.0}
    (tmp_path / "rm_pairs.jsonl.gz").write_bytes(gzip.compress(b""))
    assert comparison.rm_negatives_answered(tmp_path) == {"pairs": 0, "negative has an answer": None}


def test_the_comparison_and_its_preregistered_decisions(tmp_path):
    settings = b64_settings()
    runs = tmp_path / "runs"
    for s in range(3):
        _fake_run(runs / f"b64-s{s}", acc_end=0.75, pos_wrong=0.0, rm_right_end=4)
        _fake_run(runs / f"model-s{s}", acc_end=0.25 if s < 2 else 0.5, pos_wrong=0.9, rm_right_end=4)
        _fake_run(runs / f"model_strong-s{s}", acc_end=0.75, pos_wrong=0.1, rm_right_end=4)
        _fake_run(runs / f"cooper_paper-s{s}", acc_end=0.25 if s == 0 else 0.75, pos_wrong=0.8, rm_right_end=2)
        _fake_run(runs / f"cooper_paper_noscale-s{s}", acc_end=0.75, pos_wrong=0.3, rm_right_end=4, scale="none")
        _fake_run(runs / f"cooper_ref_bin-s{s}", acc_end=1.0, pos_wrong=0.0, rm_right_end=4, finished=s < 2)
    _fake_run(runs / "cooper_paper_noscale-s9", acc_end=0.25, pos_wrong=0.9, rm_right_end=4)  # not a planned seed
    rows = {d.name: report.run_report(d, d.name) for d in sorted(runs.iterdir())}
    c = comparison.comparison(settings, runs, rows)
    rule, model, paper = (c["conditions"][n] for n in ("rule", "model", "cooper_paper"))
    assert rule["seeds"] == [0, 1, 2] and c["conditions"]["cooper_ref_bin"]["seeds"] == [0, 1]  # unfinished: out
    assert c["conditions"]["cooper_paper_noscale"]["seeds"] == [0, 1, 2]  # seed 9 is not the design's
    assert rule["end"]["mean of sets"]["mean"] == 75.0 and rule["end"]["built-in test"]["mean"] == 75.0
    assert rule["gain"]["mean of sets"]["mean"] == 25.0 and rule["vs_rule"] is None
    assert model["vs_rule"]["mean of sets"]["by_seed"] == [-50.0, -50.0, -25.0]
    lo, hi = model["vs_rule"]["mean of sets"]["ci95"]
    assert lo < -125 / 3 < hi  # t over 3 seeds and the problems: wide
    assert model["collapsed"] == [0, 1] and paper["collapsed"] == [0]  # 25 points below step 0's 50 %
    assert paper["rm_change"]["by_seed"] == {0: -50.0, 1: -50.0, 2: -50.0} and paper["rm_accuracy_by_step"] == {0: 100.0, 2: 50.0}  # fmt: skip
    assert paper["mechanism"][0]["pos_adv_to_wrong_q1"] == 0.8 and paper["mechanism"][0]["kl_last_quarter"] == 0.03
    # its RM flipped one right and one wrong row of the 4: accuracy hides which way it errs, these do not
    assert paper["rm_errors_by_step"] == {
        0: {"wrong_accepted": 0.0, "right_rejected": 0.0, "n_seeds": 3},
        2: {"wrong_accepted": 50.0, "right_rejected": 50.0, "n_seeds": 3},
    }
    noscale = c["conditions"]["cooper_paper_noscale"]["mechanism"][0]["mean_abs_advantage"]
    assert abs(noscale - 0.2) < 1e-9  # rewards 0.2, 0.6 unscaled: |A| = 0.2
    assert abs(paper["mechanism"][0]["mean_abs_advantage"] - 0.2 / (0.4 / 2**0.5 + 1e-4)) < 1e-6  # std-scaled
    d4 = c["decisions"]["section4"]
    assert d4["verdict"] == "supported" and d4["seeds_lower"] == [0, 1, 2]
    assert c["decisions"]["section5"] is None  # cooper_ref_bin has 2 of its 3 seeds
    t = c["decisions"]["regime_target"]  # rule: +25 points on every set in every seed
    assert t["meets_target"] and t["built_in_gain"]["mean"] == 25.0 and t["SVAMP_gain"]["ci95"][0] > 0
    table = comparison.comparison_table(c)
    assert "| cooper_paper | 3 | 1 |" in table and "supported" in table and "**met**" in table
    assert "| 0.0 / 0.0 → 50.0 / 50.0 |" in table
    assert paper["rm_auroc_by_step"] == {0: 1.0, 2: 0.5} and "| 1.000 → 0.500 |" in table  # threshold-free too

    # every condition complete: §5's targets and predictions
    _fake_run(runs / "cooper_ref_bin-s2", acc_end=1.0, pos_wrong=0.0, rm_right_end=4)
    d5 = comparison.comparison(settings, runs, rows)["decisions"]["section5"]
    assert d5["targets"] == {
        "cooper_paper": {"a_ordering": False, "b_rule_plus_2": False},  # collapsed in seed 0; -16.7 points
        "cooper_ref_bin": {"a_ordering": True, "b_rule_plus_2": True},  # +25 points in every seed
    }
    assert d5["predictions"] == {
        "1_model_collapses": True,
        "2_model_strong_fine": True,
        "3_cooper_ref_bin_fine": False,  # not within 3 points of rule
        "4_rm_accuracy": True,  # cooper_paper's RM lost 50 points in every seed; cooper_ref_bin's none
    }

    # §4 when cooper_paper collapses in no seed: prediction 1 alone is tested
    for s in range(3):
        _fake_run(runs / f"cooper_paper-s{s}", acc_end=0.75, pos_wrong=0.8, rm_right_end=2)
    assert comparison.comparison(settings, runs, rows)["decisions"]["section4"]["verdict"].startswith(
        "prediction 1 holds"
    )
    _fake_run(runs / "cooper_paper_noscale-s0", acc_end=0.75, pos_wrong=0.85, rm_right_end=4)
    _fake_run(runs / "cooper_paper_noscale-s1", acc_end=0.75, pos_wrong=0.85, rm_right_end=4)
    assert comparison.comparison(settings, runs, rows)["decisions"]["section4"]["verdict"].startswith("refuted")
    _fake_run(runs / "cooper_paper_noscale-s1", acc_end=0.75, pos_wrong=None, rm_right_end=4)  # a missing log
    assert comparison.comparison(settings, runs, rows)["decisions"]["section4"]["verdict"].startswith("undetermined")
    # refuted: the unscaled arm collapses as often as the paper's
    for s in range(3):
        _fake_run(runs / f"cooper_paper-s{s}", acc_end=0.25 if s == 0 else 0.75, pos_wrong=0.8, rm_right_end=2)
        _fake_run(runs / f"cooper_paper_noscale-s{s}", acc_end=0.25 if s == 1 else 0.75, pos_wrong=0.3, rm_right_end=4)
    assert comparison.comparison(settings, runs, rows)["decisions"]["section4"]["verdict"] == "refuted"
    settings["regime"] = None
    assert comparison.comparison(settings, runs, rows) is None and "regime" in comparison.comparison_table(None)


def test_decisions_rest_on_three_seeds_of_the_numbers_they_use_and_pair_equal_budgets(tmp_path):
    settings = b64_settings()
    runs = tmp_path / "runs"
    for s in range(3):
        _fake_run(runs / f"b64-s{s}", acc_end=0.75, pos_wrong=0.0, rm_right_end=4, rm_sha256=None)  # rule: no RM
        _fake_run(runs / f"model-s{s}", acc_end=0.25, pos_wrong=0.9, rm_right_end=4)
        _fake_run(runs / f"model_strong-s{s}", acc_end=0.75, pos_wrong=0.1, rm_right_end=4)
        _fake_run(runs / f"cooper_paper-s{s}", acc_end=0.75, pos_wrong=0.8, rm_right_end=4)
        _fake_run(runs / f"cooper_paper_noscale-s{s}", acc_end=0.25 if s == 2 else 0.75, pos_wrong=0.3, rm_right_end=4)
        _fake_run(runs / f"cooper_ref_bin-s{s}", acc_end=0.75, pos_wrong=0.0, rm_right_end=4)
    rows = {d.name: report.run_report(d, d.name) for d in sorted(runs.iterdir())}
    d = comparison.comparison(settings, runs, rows)["decisions"]
    # the paper's arm never collapsed, so collapse is not tested, but the unscaled arm's collapse is said
    verdict = d["section4"]["verdict"]
    assert verdict.startswith("prediction 1 holds") and "prediction 2 fails" in verdict and "in 1 seed" in verdict
    assert "targets" in d["section5"] and d["regime_target"]["meets_target"]  # rule's RM-less runs are whole

    # a step logged twice counts once, its last record (a resumed run)
    with open(runs / "cooper_paper-s0" / "metrics.jsonl", "a") as f:
        f.write(
            json.dumps({"step": 1, "signal/pos_adv_to_wrong": 0.2, "reward_mean": 0.5, "rule_accuracy": 0.5}) + "\n"
        )
    c = comparison.comparison(settings, runs, rows)["conditions"]["cooper_paper"]
    assert c["mechanism"][0]["pos_adv_to_wrong_q1"] == 0.2  # the first quarter of 2 steps: step 1, as logged last

    (runs / "cooper_ref_bin-s1" / "eval" / "step-2" / "samples.jsonl").unlink()  # a seed's samples lost
    (runs / "cooper_paper-s2" / "eval" / "step-2" / "rm_scores.json").unlink()  # and a seed's RM scores
    (runs / "b64-s0" / "eval" / "step-2" / "samples.jsonl").unlink()
    d = comparison.comparison(settings, runs, rows)["decisions"]
    assert d["section5"]["verdict"] == (
        "undetermined: fewer than 3 seeds in model - rule; model_strong - rule; cooper_paper - rule; "
        "cooper_ref_bin - rule; cooper_paper's RM change"  # rule's seed 0 pairs with no one now
    )
    assert d["regime_target"]["verdict"].startswith("undetermined: fewer than 3 seeds in rule's built-in test gain")
    # §4 uses neither samples nor RM scores: judged (seed 0's step 1 now pays 0.2 < 0.3 to wrong rollouts)
    assert d["section4"]["verdict"].startswith("prediction 1 fails in 1 seed")

    for name in ("b64-s0", "cooper_ref_bin-s1", "cooper_paper-s2"):
        _fake_run(runs / name, acc_end=0.75, pos_wrong=0.0, rm_right_end=4, rm_sha256=None if "b64" in name else "abc")
    (runs / "b64-s2").rename(tmp_path / "gone")  # a seed rule lacks: the others are not paired, not an error
    (runs / "cooper_paper-s0" / "eval" / "step-2").rename(runs / "cooper_paper-s0" / "eval" / "step-3")
    ev = [json.loads(x) for x in (runs / "cooper_paper-s0" / "evals.jsonl").read_text().splitlines()]
    ev[-1]["step"] = 3  # another budget than rule's seed 0: no paired difference, and no abort
    (runs / "cooper_paper-s0" / "evals.jsonl").write_text("".join(json.dumps(e) + "\n" for e in ev[::-1]))
    c = comparison.comparison(settings, runs, rows)
    paper = c["conditions"]["cooper_paper"]
    assert paper["unpaired_with_rule"] == [0] and paper["vs_rule"]["mean of sets"]["n_seeds"] == 1  # seed 1 only
    assert paper["end"]["mean of sets"]["n_seeds"] == 3  # its own numbers at its last (largest) step, records reversed
    assert c["decisions"]["section5"] is None  # rule has 2 of its 3 seeds


def test_the_comparison_figure_draws_finished_runs_only(tmp_path):
    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    runs = tmp_path / "runs"
    _fake_run(runs / "b64-s0", acc_end=0.75, pos_wrong=0.0, rm_right_end=4)
    _fake_run(runs / "model-s0", acc_end=0.25, pos_wrong=0.9, rm_right_end=4, finished=False)
    png = tmp_path / "comparison.png"
    settings["regime"] = None
    assert not comparison.comparison_figure(settings, runs, png) and not png.exists()  # no regime: no comparison
    settings["regime"] = "b64"
    assert comparison.condition_runs(settings, runs)["model"] == {}  # unfinished: not drawn
    assert comparison.comparison_figure(settings, runs, png) and png.read_bytes()[:4] == b"\x89PNG"
    # seeds whose evaluations differ: one without the RM's accuracy at step 0, one without the built-in set at its end
    for seed in (1, 2):
        _fake_run(runs / f"model-s{seed}", acc_end=0.25, pos_wrong=0.9, rm_right_end=4)
    evals = runs / "model-s1" / "evals.jsonl"
    ev = [json.loads(x) for x in evals.read_text().splitlines()]
    del ev[0]["rm"]
    ev[1]["policy"] = {k: v for k, v in ev[1]["policy"].items() if "builtin" not in k}
    evals.write_text("".join(json.dumps(e) + "\n" for e in ev))
    png.unlink()
    assert comparison.comparison_figure(settings, runs, png) and png.read_bytes()[:4] == b"\x89PNG"


def test_the_monitor_record_counts_finished_runs_by_the_preregistered_collapse():
    def row(collapsed, first_flag, in_time, finished=True, bad=None):
        m = {"heldout_mean": {0: 20.0, 50: 10.0 if collapsed else 19.0}, "collapsed": collapsed, "first_flag": first_flag,
             "flagged_calls": int(first_flag is not None), "flagged_in_time": in_time, "first_bad_eval": bad}  # fmt: skip
        return {"monitor": m, "finished": finished}

    rows = {
        "i15 rule (issue 15) s0": row(True, None, False) | {"issue15_reference": True},  # not out of sample
        "a-s0": row(True, 10, True, bad=50),
        "b-s0": row(True, None, False, bad=50),
        "c-s0": row(False, 5, False, bad=25),  # dipped at the middle, recovered: not collapsed, and flagged
        "d-s0": row(False, None, False),
        "e-s0": row(True, None, False, finished=False),  # still running
        "i15_filter-s0": row(False, None, False),  # this experiment's setting named after issue 15's preset: counted
    }
    t = report.monitor_table(rows)
    assert "| a-s0 |" in t and "| e-s0 |" not in t and "issue 15" not in t and "| i15_filter-s0 |" in t
    assert "Collapsed runs (last evaluation >= 5.0 points below step 0, mean of the sets): 2" in t
    assert "that far below: 1 (target: all). Runs that did not collapse: 3, flagged anyway: 1" in t
    # flagged: a-s0 (collapsed) and c-s0 (did not): precision 1/2; collapses flagged in time: a-s0 of a, b: recall 1/2
    assert report.monitor_record(rows) == {
        "collapsed": 2, "collapsed_flagged_in_time": 1, "not_collapsed": 3, "not_collapsed_flagged": 1, "flagged": 2,
        "recall": 0.5, "precision": 0.5,
    }  # fmt: skip
    assert "Recall (collapses flagged in time): 0.50; precision (flagged runs that collapsed): 0.50 (2 runs" in t


def test_a_run_stopped_after_its_last_evaluation_is_finished_for_the_report_and_the_driver(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "RUNS", tmp_path)
    monkeypatch.setattr(run, "RESULTS", tmp_path / "results")
    settings = {"settings": {"r": {"flags": {"max_steps": 100}}}}
    d = tmp_path / "r-s0"
    d.mkdir()
    (d / "rl_config.json").write_text(json.dumps({"max_steps": 100}))
    (d / "evals.jsonl").write_text("".join(json.dumps({"step": s}) + "\n" for s in (0, 50)))
    assert not rundirs.finished_run(d) and not run.finished(settings, "r", 0)
    (d / "rl_summary.json").write_text(json.dumps({"global_step": 100}))
    assert rundirs.finished_run(d) and run.finished(settings, "r", 0)
    (d / "rl_summary.json").unlink()
    (d / "evals.jsonl").write_text("".join(json.dumps({"step": s}) + "\n" for s in (0, 50, 100)))  # no summary
    assert rundirs.finished_run(d) and run.finished(settings, "r", 0)  # the driver does not restart it


def test_the_pick_follows_the_preregistered_rule():
    settings = {"settings": {n: {} for n in ("a", "b", "c", "d", "b64_long")}}

    def row(builtin, lo, svamp_hi=1.0, gsm_hi=1.0, cost=1000.0, finished=True, threads=1):
        g = lambda m, low, high: {"mean": m, "ci95": (low, high)}  # noqa: E731
        gains = {"built-in test": g(builtin, lo, builtin + 3), "SVAMP": g(0, -1, svamp_hi), "GSM8K": g(0, -1, gsm_hi)}
        return {"heldout_gain": gains, "seconds_per_1k_rollouts": cost, "finished": finished, "torch_threads": threads}

    rows = {
        "a-s0": row(4.4, 1.6, cost=2400),
        "b-s0": row(3.6, 1.0, cost=2000),  # within 1 point of a, and cheaper: the pick
        "c-s0": row(6.0, 2.0, gsm_hi=-0.1),  # the largest gain, but a significant loss on GSM8K
        "d-s0": row(-4.0, -7.0, finished=False),
    }
    assert decisions.pick(rows, settings) == {"pick": None, "waiting_for": ["d"]}
    rows["d-s0"]["finished"] = True
    p = decisions.pick(rows, settings)
    assert p["pick"] == "b" and p["eligible"] == ["a", "b", "d"] and p["within_1_point"] == ["a", "b"]
    assert p["cost_from"] == "runs" and p["waiting_for"] == []
    assert not p["pick_meets_target_seed0"] and not p["b64_long_finished"]
    rows["b64_long-s0"] = row(6.5, 3.0, gsm_hi=-0.1)  # +6.5, but a significant loss on GSM8K: not the target
    assert not decisions.pick(rows, settings)["b64_long_meets_target"]
    rows["b64_long-s0"] = row(6.5, 3.0)  # reaches the target at 6,400 rollouts (predictions.md rule 7)
    assert decisions.pick(rows, settings)["b64_long_meets_target"]
    assert decisions.pick(rows, settings)["seconds_per_1k_rollouts"] == {"a": 2400, "b": 2000}
    rows["b-s0"] = row(5.2, 0.5, cost=2000)
    assert decisions.pick(rows, settings)["pick_meets_target_seed0"]
    rows["b-s0"] = row(3.6, 1.0, cost=1500, threads=2)  # within 1 point, its cost measured alone on 2 cores
    p = decisions.pick(rows, settings)
    assert p["pick"] is None and p["within_1_point"] == ["a", "b"] and "side by side" in p["why"]
    assert p["b64_long_meets_target"]  # the rest of the report stays
    assert decisions.pick(rows, settings, [{"a": 2400, "c": 2000}])["pick"] is None  # b's side-by-side cost missing
    p = decisions.pick(rows, settings, [{"a": 2400, "b": 2600}])  # measured side by side: a is cheaper
    assert p["pick"] == "a" and p["cost_from"] == "results/costs.json" and p["seconds_per_1k_rollouts"]["b"] == 2600
    assert p["waiting_for"] == [] and "why" not in p
    # costs of different measurements compare only as ratios to a setting measured beside both
    rows["c-s0"] = row(4.0, 1.0, threads=2)
    p = decisions.pick(rows, settings, [{"a": 2400, "b": 2600}, {"a": 1200, "c": 1000}])
    assert p["within_1_point"] == ["a", "b", "c"] and p["pick"] == "c"  # c is 0.83 of a, b 1.08 of a
    assert p["cost_relative"] == {"a": 1.0, "b": 1.083, "c": 0.833} and "seconds_per_1k_rollouts" not in p
    assert decisions.pick(rows, settings, [{"a": 2400, "b": 2600}, {"b": 1200, "d": 1000}])["pick"] is None
    rows["c-s0"] = row(6.0, 2.0, gsm_hi=-0.1)
    rows["b-s0"] = row(2.0, 1.0, cost=1500, threads=2)  # not within 1 point: its threads do not matter
    assert decisions.pick(rows, settings)["pick"] == "a"
    rows["b-s0"] = row(3.6, 1.0, cost=2300)  # within 1 point but only 4 % cheaper: a cost within noise, a's gain wins
    assert decisions.pick(rows, settings)["pick"] == "a"


def test_rm_change_pairs_rows_only_on_the_same_evaluation_set(tmp_path):
    def scores(step, scores, labels):
        d = tmp_path / "eval" / f"step-{step}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "rm_scores.json").write_text(json.dumps({"scores": scores, "labels": labels}))

    scores(0, [0.9, 0.2], [1, 0])
    scores(4, [0.9, 0.8], [1, 0])
    assert comparison.rm_change(tmp_path, 4) == (-50.0, {0: 0, 1: -100})
    scores(4, [0.9, 0.8], [1, 1])  # the set was rebuilt with other labels: no silent pairing
    import pytest

    with pytest.raises(ValueError, match="differ"):
        comparison.rm_change(tmp_path, 4)
    scores(4, [0.9], [1, 0])
    with pytest.raises(ValueError, match="1 scores for 2 labels"):
        comparison.rm_change(tmp_path, 4)


def test_a_job_gets_the_cores_the_jobs_file_leaves_it(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "RUNS", tmp_path)
    monkeypatch.setattr(run.os, "cpu_count", lambda: 2)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert run.job_env(None, 2)["OMP_NUM_THREADS"] == "1"  # two jobs side by side: one thread each
    (tmp_path / "jobs").write_text("1\n")  # one job at a time from now on: torch's default, both cores
    assert "OMP_NUM_THREADS" not in run.job_env(None, 2)
    assert run.job_env(3, 2)["OMP_NUM_THREADS"] == "3"


def test_a_run_planned_alone_gets_every_core():
    assert run.sharing(2, running=0, waiting=0) == 1  # alone: job_env(None, 1) leaves torch all cores
    assert run.sharing(2, running=1, waiting=0) == 2  # beside a running job
    assert run.sharing(2, running=0, waiting=3) == 2  # more planned than --jobs: --jobs at a time
    assert run.sharing(1, running=0, waiting=3) == 1


def test_evaluation_sets_pair_across_checkouts(tmp_path):
    def samples(run, root):
        d = tmp_path / run / "eval" / "step-0"
        d.mkdir(parents=True)
        rows = [{"dataset": f"{root}/runs/rl_learns/eval/svamp_heldout.jsonl", "id": 1, "correct": True}]
        rows += [{"dataset": "builtin:test:300:1,2", "id": "a", "correct": False}]
        with gzip.open(d / "samples.jsonl.gz", "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        return runlogs.scores_at(tmp_path / run, 0)

    a, b = samples("a", "/work/main"), samples("b", "/elsewhere/clone")
    assert a == b == {"svamp_heldout.jsonl": {1: 1.0}, "builtin:test:300:1,2": {"a": 0.0}}


def test_a_cost_benchmark_runs_the_settings_step_without_its_schedule():
    costs = load_script("costs", HERE)
    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    names = {f.name for f in RLConfig.__dataclass_fields__.values()}
    a, b = costs.config(settings, "b64"), costs.config(settings, "b64_drgrpo")
    assert set(a) <= names and set(b) <= names
    assert {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)} == {"loss_type", "scale_rewards"}
    assert a["prompts_per_step"] * a["num_generations"] == 64 and a["steps_per_generation"] == 1
    assert a["gradient_accumulation_steps"] == 4 and a["bf16_autocast"] is False
    assert not {"max_steps", "eval_steps", "save_steps"} & set(a)


def test_regime_target_needs_the_gain_its_ci_and_no_loss_elsewhere():
    def rule(built, svamp=(0.0, -1.0, 1.0)):
        x = lambda m, lo, hi: {"mean": m, "ci95": [lo, hi]}  # noqa: E731
        return {"gain": {"built-in test": x(*built), "SVAMP": x(*svamp), "GSM8K": x(0.0, -1.0, 1.0)}}

    assert decisions.regime_target(rule((6.0, 1.0, 11.0)))["meets_target"]
    assert not decisions.regime_target(rule((4.9, 1.0, 8.8)))["meets_target"]  # below 5 points
    assert not decisions.regime_target(rule((6.0, -1.0, 13.0)))["meets_target"]  # CI includes 0
    assert not decisions.regime_target(rule((6.0, 1.0, 11.0), svamp=(-3.0, -5.0, -1.0)))["meets_target"]  # SVAMP lost


def test_comparison_runs_are_not_rows_of_the_sweep():
    settings = {"conditions": {"model": {}, "cooper_paper": {}}}
    rows = {"b64_t07-s0": 1, "model-s0": 2, "cooper_paper-s12": 3, "i15 rule (issue 15) s0": 4, "model_x-s0": 5}
    sweep, conditions = report.split_runs(rows, settings)
    assert conditions == {"model-s0": 2, "cooper_paper-s12": 3}
    assert sweep == {"b64_t07-s0": 1, "i15 rule (issue 15) s0": 4, "model_x-s0": 5}


def test_a_runs_directory_name_gives_back_its_name_and_seed():
    for name, seed in [("b64_lr3e-5", 0), ("cooper_paper_noscale", 12), ("model-s", 2)]:
        assert rundirs.name_seed(rundirs.run_name(name, seed)) == (name, seed)
    for bad in ["b64", "b64-sx", "-s0"]:
        with pytest.raises(ValueError, match="NAME-sSEED"):
            rundirs.name_seed(bad)


def test_quarters_are_the_means_of_the_first_and_last_quarter():
    assert runlogs.quarters([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]) == [1.5, 7.5]
    assert runlogs.quarters([3.0]) == [3.0, 3.0] and runlogs.quarters([]) == [None, None]


def test_rm_pairs_per_update_count_calls_without_pairs_as_zero(tmp_path):
    with gzip.open(tmp_path / "rm_pairs.jsonl.gz", "wt") as f:
        f.writelines(json.dumps({"step": s}) + "\n" for s in (1, 1, 3, 8, 8, 8))
    assert report.rm_pairs_quarters(tmp_path, [1, 2, 3, 4, 5, 6, 7, 8]) == [1.0, 1.5]  # (2 + 0) / 2, (0 + 3) / 2
    assert report.rm_pairs_quarters(tmp_path / "rule-run", [1, 2]) == [None, None]
    # a Cooper run without the log is not a run without an RM side
    assert report.rm_pairs_quarters(tmp_path / "cooper-run", [1, 2], cooper=True) is None
    row = {"rm_pairs_per_update_quarters": None, "steps": 2, "finished": False, "monitor": {}}
    assert "not logged" in report.condition_runs_table({"cooper-run": row})


def test_the_report_writes_its_table_between_the_docs_markers_only(tmp_path):
    doc = tmp_path / "RESULTS.md"
    doc.write_text("intro\n<!-- report.py:comparison -->\n| old |\n<!-- /report.py:comparison -->\nafter\n")
    assert report.sync_doc(doc, "comparison", "| a |\n|---|\n| 1 |\n")
    assert doc.read_text() == "intro\n<!-- report.py:comparison -->\n| a |\n|---|\n| 1 |\n<!-- /report.py:comparison -->\nafter\n"  # fmt: skip
    assert not report.sync_doc(doc, "comparison", "| a |\n|---|\n| 1 |")  # the same table: the file is left alone
    for broken in ("no markers\n", "<!-- /report.py:comparison -->\n<!-- report.py:comparison -->\n",
                   "<!-- report.py:comparison -->\n<!-- report.py:comparison -->\n<!-- /report.py:comparison -->\n"):  # fmt: skip
        doc.write_text(broken)
        with pytest.raises(ValueError, match="RESULTS.md: needs exactly one <!-- report.py:comparison -->"):
            report.sync_doc(doc, "comparison", "| a |")
        assert doc.read_text() == broken
    # the doc gets the tables of the report's text, each its own table (a blank line between), and nothing else
    text = "intro line\n\n| a |\n|---|\n| 1 |\n\nnote between\n\n| b |\n|---|\n| 2 |\n\n**a verdict**\n"
    assert report.tables_only(text) == "| a |\n|---|\n| 1 |\n\n| b |\n|---|\n| 2 |"


def test_hack_transfer_takes_the_last_quarter_of_finished_model_runs(tmp_path, monkeypatch):
    ht = load_script("hack_transfer", HERE)
    # s1 stopped early: not finished, not taken; s3 is a headline seed, not the prediction's
    for name, steps_done in (("model-s0", 8), ("model-s1", 5), ("model-s3", 8)):
        d = tmp_path / "runs" / name
        d.mkdir(parents=True)
        (d / "rl_config.json").write_text(json.dumps({"max_steps": 8}))
        (d / "rl_summary.json").write_text(json.dumps({"global_step": steps_done}))
        rollouts = [
            {"step": t, "question": "q", "reference": "4", "completion": c, "verdict": v, "reward": 0.3}
            for t in range(1, steps_done + 1)
            for c, v in (("so \\boxed{4}", True), ("so \\boxed{5}", False), ("and so on and so on", False))
        ]
        (d / "rollouts.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rollouts).encode()))
    monkeypatch.setattr(ht, "RESULTS", tmp_path)
    rows = ht.hacked_rollouts()
    assert {r["run"] for r in rows} == {"model-s0"} and sorted({r["step"] for r in rows}) == [6, 7, 8]
    kinds = [r["answer_type"] for r in rows[:3]]
    assert kinds == ["rule-right", "rule-wrong, an answer", "rule-wrong, no answer"]
    assert [r["label"] for r in rows[:3]] == [1, 0, 0]


def test_a_finished_runs_adapter_rm_is_kept_with_its_sums_and_a_full_model_is_not(tmp_path):
    out, dst = tmp_path / "cooper-s0", tmp_path / "copy"
    (out / "rm").mkdir(parents=True)
    for f in run.RM_FILES:
        (out / "rm" / f).write_bytes(f.encode())
    assert not run.copy_final_rm(out, dst)  # not finished: no rl_summary.json yet
    (out / "rl_summary.json").write_text("{}")
    assert run.copy_final_rm(out, dst)
    sums = dict(reversed(x.split("  ")) for x in (dst / "rm" / "SHA256SUMS").read_text().splitlines())
    assert set(sums) == set(run.RM_FILES) and (dst / "rm" / "cooper_rm.json").read_bytes() == b"cooper_rm.json"
    (out / "rm" / "adapter_model.safetensors").unlink()  # a full model (model.safetensors) is not committed
    (out / "rm" / "model.safetensors").write_bytes(b"x")
    assert not run.copy_final_rm(out, tmp_path / "copy2")


def test_the_known_negatives_are_the_committed_build_and_hold_no_evaluation_question():
    """cooper_recal's known negatives (known_negatives.py): the file its stats name (sha256, counts), rule-labelled
    rows of the labelled set's two writers, none on a question of that set (GSM8K test 101-300)."""
    import hashlib

    path = HERE / "data/known_negatives.jsonl"
    stats = json.loads((HERE / "data/known_negatives.jsonl.stats.json").read_text())
    assert hashlib.sha256(path.read_bytes()).hexdigest() == stats["sha256"]
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(rows) == stats["rows"] and sum(1 - r["label"] for r in rows) == stats["negatives"]
    heldout = HERE.parents[0] / "verifyrm/v3/heldout.jsonl"
    evaluated = {json.loads(x)["question"].strip() for x in heldout.read_text().splitlines()}
    assert not evaluated & {r["question"].strip() for r in rows}
    assert {r["source"] for r in rows} == {json.loads(x)["source"] for x in heldout.read_text().splitlines()} - {
        "experiments/verifyrm/v3/gsm8k_test_101_300.jsonl"  # the set's positives: reference solutions
    }
    flags = yaml.safe_load((HERE / "settings.yaml").read_text())["conditions"]["cooper_recal"]["flags"]
    assert flags["rm_recalibrate"] == "experiments/rl_learns/data/known_negatives.jsonl"


def _arm(seeds_wrong: dict, auroc_end: float, end: float, collapsed=(), right_end=0.2) -> dict:
    """A condition as comparison.comparison gives it: {seed: {step: wrong accepted}} and the means the judgement reads."""
    wrong_end = sum(v[50] for v in seeds_wrong.values()) / len(seeds_wrong)
    return {
        "seeds": sorted(seeds_wrong),
        "rm_errors_by_seed": {
            str(s): {str(st): {"wrong_accepted": w, "right_rejected": 1.0} for st, w in v.items()}
            for s, v in seeds_wrong.items()
        },
        "rm_auroc_by_step": {"0": 0.895, "50": auroc_end},
        "rm_auroc_seeds_by_step": {"0": 3, "50": len(seeds_wrong)},
        "rm_errors_by_step": {"50": {"wrong_accepted": wrong_end, "right_rejected": right_end, "n_seeds": 3}},
        "end": {"mean of sets": {"mean": end, "n_seeds": len(seeds_wrong)}},
        "collapsed": list(collapsed),
    }


def test_issue_106s_judgement_follows_its_pre_registration():
    """verifier_kept.judge on hand-made comparisons: target 1 per seed at every evaluation (start + 2 points, not
    more), AUROC against cooper_paper's, collapse and the 2-point band; the default only once both variants are in."""
    kept = load_script("verifier_kept", HERE)
    paper = _arm({s: {0: 6.0, 25: 12.0, 50: 17.0} for s in (0, 1, 2)}, 0.986, 11.8)
    held = {0: {0: 6.0, 25: 8.0, 50: 7.5}, 1: {0: 5.0, 25: 6.0, 50: 7.0}, 2: {0: 6.0, 25: 7.0, 50: 6.0}}
    c = {"cooper_paper": paper, "cooper_rehearsal": _arm(held, 0.987, 10.5)}
    j = kept.judge(c)
    r = j["cooper_rehearsal"]
    assert r["targets"] == {"1_wrong_accepted_held": True, "2_auroc_not_below_paper": True, "3_no_collapse_within_2": True}  # fmt: skip
    assert r["predictions"]["prediction_1"] and r["all_targets_met"]
    assert j["cooper_recal"] is None and j["default"].startswith("waiting for 3 seeds of cooper_recal")
    # one seed 2.5 points above its start at step 25 only: target 1 fails there, though it ends lower
    c["cooper_recal"] = _arm({**held, 1: {0: 5.0, 25: 7.5, 50: 5.0}}, 0.990, 11.0, right_end=9.0)
    j = kept.judge(c)
    assert j["cooper_recal"]["target_1_by_seed"][1] == {"start": 5.0, "highest_later": 7.5, "met": False}
    assert j["cooper_recal"]["targets"]["1_wrong_accepted_held"] is False and j["default"] == "cooper_rehearsal"
    assert j["cooper_recal"]["predictions"]["right_rejected_above_paper_at_most_20"] is True
    # AUROC below cooper_paper's, a collapse, or more than 2 points off its mean of sets: each fails its target
    for bad, target in (({"auroc_end": 0.985}, "2_auroc_not_below_paper"), ({"collapsed": [2]}, "3_no_collapse_within_2"),
                        ({"end": 9.7}, "3_no_collapse_within_2")):  # fmt: skip
        args = {"auroc_end": 0.987, "end": 10.5, "collapsed": ()} | bad
        c["cooper_rehearsal"] = _arm(held, **args)
        j = kept.judge(c)
        assert j["cooper_rehearsal"]["targets"][target] is False and j["default"] is None
    c["cooper_rehearsal"] = _arm({0: held[0], 1: held[1]}, 0.99, 11.0)  # 2 seeds: no judgement yet
    assert kept.judge(c)["cooper_rehearsal"] is None
    # a seed's step-25 RM scores missing: target 1 undetermined there, and so the decision (never a silent pass)
    c["cooper_rehearsal"] = _arm({**held, 2: {0: 6.0, 50: 6.0}}, 0.987, 10.5)
    j = kept.judge(c)
    assert j["cooper_rehearsal"]["target_1_by_seed"][2]["met"] is None
    assert j["cooper_rehearsal"]["targets"]["1_wrong_accepted_held"] is None and j["default"].startswith("undetermined")
    c["cooper_rehearsal"] = _arm(held, 0.987, 10.5)
    c["cooper_rehearsal"]["rm_auroc_seeds_by_step"]["50"] = 2  # an AUROC mean over 2 seeds: not judged
    assert kept.judge(c)["cooper_rehearsal"]["targets"]["2_auroc_not_below_paper"] is None


def test_issue_106s_variant_that_misses_target_1_in_a_finished_seed_is_out_before_its_third():
    """Target 1 holds only in every seed: a finished seed that misses it decides it (and the variant cannot become the
    default) while its other seeds run; the other variant can then be named the default alone. Finished seeds that
    meet it decide nothing. A missed target with others undetermined is all_targets_met False, not undetermined."""
    kept = load_script("verifier_kept", HERE)
    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    paper_seeds = {s: {0: 6.0, 25: 12.0, 50: 17.0} for s in (0, 1, 2)}
    paper = _arm(paper_seeds, 0.986, 11.8)
    held = {s: {0: 6.0, 25: 6.5, 50: 5.0} for s in (0, 1, 2)}
    c = {"cooper_paper": paper, "cooper_rehearsal": _arm({0: {0: 6.0, 25: 27.7, 50: 8.6}, 1: {0: 6.0, 25: 7.0, 50: 7.9}}, 0.99, 11.0)}  # fmt: skip
    j = kept.judge(c)
    assert j["cooper_rehearsal"]["all_targets_met"] is False and j["cooper_rehearsal"]["missed_before_3_seeds"] == [0]
    assert j["cooper_rehearsal"]["target_1_by_seed"][1]["met"] and j["cooper_rehearsal"]["target_1_by_seed"][2]["met"] is None  # fmt: skip
    assert j["default"] == "waiting for 3 seeds of cooper_recal"
    c["cooper_recal"] = _arm(held, 0.99, 11.0)
    j = kept.judge(c)
    assert j["default"] == "cooper_recal" and j["cooper_recal"]["all_targets_met"]
    text = kept.table(c)
    assert "- `cooper_rehearsal`: target 1 missed in seed 0 before seeds 0-2 finished" in text
    assert "- The default of `--reward cooper` by the decision rule: cooper_recal." in text
    # the headline: the variant that met its targets joins (rehearsal is in settings.yaml's `headline` whatever its
    # outcome, as pre-registered); from the shipped RM: cooper_paper and the default
    plan = run.headline_plan(settings | {"headline": ["rule", "cooper_paper"]}, j)
    assert plan == [(n, s) for s in (3, 4) for n in ("rule", "cooper_paper", "cooper_recal")]
    assert [n for n, _ in run.shipped_plan(settings, j)] == ["cooper_paper_shipped", "cooper_recal_shipped"]
    # a partial variant whose finished seeds meet target 1 still waits
    c["cooper_rehearsal"] = _arm({0: held[0], 1: held[1]}, 0.99, 11.0)
    assert kept.judge(c)["cooper_rehearsal"] is None and kept.judge(c)["default"].startswith("waiting")
    # three seeds, target 1 missed, AUROC resting on 2 seeds (undetermined): missed overall, not undetermined
    c["cooper_rehearsal"] = _arm({**held, 1: {0: 6.0, 25: 9.0, 50: 5.0}}, 0.99, 11.0)
    c["cooper_rehearsal"]["rm_auroc_seeds_by_step"]["50"] = 2
    j = kept.judge(c)
    assert j["cooper_rehearsal"]["targets"]["2_auroc_not_below_paper"] is None
    assert j["cooper_rehearsal"]["all_targets_met"] is False and j["default"] == "cooper_recal"
    # one seed missed and another's step-25 scores missing: target 1 missed, not undetermined
    c["cooper_rehearsal"] = _arm({0: held[0], 1: {0: 6.0, 25: 9.0, 50: 5.0}, 2: {0: 6.0, 50: 6.0}}, 0.99, 11.0)
    assert kept.judge(c)["cooper_rehearsal"]["targets"]["1_wrong_accepted_held"] is False
    # the variant's three seeds in, cooper_paper's not: its target-1 miss is judged (it does not involve cooper_paper)
    c = {"cooper_paper": _arm({0: paper_seeds[0]}, 0.986, 11.8), "cooper_rehearsal": c["cooper_rehearsal"]}
    assert kept.judge(c)["cooper_rehearsal"]["missed_before_3_seeds"] == [1]


def test_issue_106s_tie_break_names_the_variant_with_fewer_wrong_rows_accepted_at_the_end():
    """Both variants meet targets 1-3: the decision rule's tie-break, the lower mean share of wrong rows accepted at
    step 50, names the default, whichever variant it is."""
    kept = load_script("verifier_kept", HERE)
    paper = _arm({s: {0: 6.0, 25: 12.0, 50: 17.0} for s in (0, 1, 2)}, 0.986, 11.8)
    low = {s: {0: 6.0, 25: 6.5, 50: 5.0} for s in (0, 1, 2)}
    high = {s: {0: 6.0, 25: 7.0, 50: 7.5} for s in (0, 1, 2)}
    for rehearsal, recal, default in ((low, high, "cooper_rehearsal"), (high, low, "cooper_recal")):
        j = kept.judge({"cooper_paper": paper, "cooper_rehearsal": _arm(rehearsal, 0.99, 11.0), "cooper_recal": _arm(recal, 0.99, 11.0)})  # fmt: skip
        assert j["cooper_rehearsal"]["all_targets_met"] and j["cooper_recal"]["all_targets_met"]
        assert j["default"] == default


def test_issue_106s_cost_line_takes_the_runs_that_ran_alone():
    """verifier_kept.cost_line: per condition the median of its finished runs' median seconds where they had 2 torch
    threads at every step; runs beside another (1 thread) or unfinished are left out; runs before the shared-prefix
    forwards are marked."""
    kept = load_script("verifier_kept", HERE)

    def run(step, threads=(2,), finished=True, shared=True, **rm):
        return {"median_seconds": {"step": step, "rm_update": 3.0, **rm}, "torch_threads_all": list(threads),
                "finished": finished, "shared_prefix": shared}  # fmt: skip

    rows = {
        "cooper_paper-s0": run(80.0, shared=False),
        "cooper_paper-s1": run(90.0, shared=False),
        "cooper_paper-s2": run(300.0, threads=(1, 2), shared=False),
        "cooper_recal-s0": run(97.0, recalibrate=54.0),
        "cooper_recal-s1": run(89.0, recalibrate=48.0),
        "cooper_recal-s2": run(10.0, finished=False, recalibrate=1.0),
    }
    line = kept.cost_line(rows)
    assert "`cooper_paper` 85 s (RM update 3 s, 2 runs, before the shared-prefix forwards)" in line
    assert "`cooper_recal` 93 s (RM update 3 s, recalibration 51 s, 2 runs)" in line and "rehearsal" not in line
    rows["cooper_recal-s1"]["median_seconds"].pop("recalibrate")  # a key one run lacks is left out, not an error
    assert "`cooper_recal` 93 s (RM update 3 s, 2 runs)" in kept.cost_line(rows)
    assert kept.cost_line({"cooper_recal-s0": run(9.0, threads=(1,))}) == ""


def test_issue_106s_table_shows_each_seed_against_target_1_and_the_judgement():
    """verifier_kept.table: one row per finished seed of cooper_paper and each variant, target 1 met or missed per
    seed, the final RM's share of the hacked rollouts where hack_transfer scored it, and each variant's verdict."""
    kept = load_script("verifier_kept", HERE)
    paper = _arm({s: {0: 6.0, 25: 12.0, 50: 17.0} for s in (0, 1, 2)}, 0.986, 11.8)
    held = {0: {0: 6.0, 25: 8.0, 50: 7.5}, 1: {0: 5.0, 25: 7.5, 50: 5.0}, 2: {0: 6.0, 25: 7.0, 50: 6.0}}
    recal = _arm(held, 0.990, 11.0) | {"rm_auroc_by_seed": {"0": {"0": 0.9, "50": 0.991}}}
    recal["end"]["mean of sets"]["by_seed"] = [10.0, 11.0, 12.0]
    hack = {"weak (start)": {"wrong_accepted": 27.9}, "cooper_recal-s2 (end)": {"wrong_accepted": 0.9}}
    text = kept.table({"cooper_paper": paper, "cooper_recal": recal}, hack)
    rows = {r.split(" | ")[0].lstrip("| "): r for r in text.splitlines() if r.startswith("| cooper")}
    assert list(rows) == [f"{c} s{s}" for c in ("cooper_paper", "cooper_recal") for s in (0, 1, 2)]
    assert "| 6.0 → 12.0 → 17.0 | missed |" in rows["cooper_paper s0"]
    assert "| 6.0 → 8.0 → 7.5 | met |" in rows["cooper_recal s0"] and "| 0.991 | 10.0 | no |" in rows["cooper_recal s0"]
    assert "| 5.0 → 7.5 → 5.0 | missed |" in rows["cooper_recal s1"]  # 2.5 points above its start at step 25
    assert rows["cooper_recal s2"].endswith("| 12.0 | no | 0.9 |") and "the weaker RM: 27.9" in text
    assert "- `cooper_recal`: target 1 missed, target 2 (AUROC 0.990 against cooper_paper's 0.986) met" in text
    assert "- `cooper_rehearsal`: not judged yet (waiting for seeds 0-2 of cooper_rehearsal)." in text
    assert "neither" not in text and "waiting for 3 seeds of cooper_rehearsal" in text  # waiting, not decided
    # the headline's seeds 3-4 are shown, while the judgement stays the one made on seeds 0-2 (report.py passes it)
    c3 = {"cooper_paper": paper, "cooper_recal": recal}
    c5 = {"cooper_paper": _arm({s: {0: 6.0, 25: 12.0, 50: 17.0} for s in range(5)}, 0.986, 11.8), "cooper_recal": recal}
    assert kept.judge(c5)["cooper_recal"] is None  # on seeds 0-4 nothing is judged
    text5 = kept.table(c5, hack, judged=kept.judge(c3))
    assert "| cooper_paper s4 |" in text5 and "- `cooper_recal`: target 1 missed" in text5


def test_the_headline_counts_seeds_3_and_4_while_the_decisions_stay_on_seeds_0_to_2(tmp_path):
    settings = b64_settings()
    runs = tmp_path / "runs"
    for s in range(5):
        _fake_run(runs / f"b64-s{s}", acc_end=0.75, pos_wrong=0.0, rm_right_end=4)
        _fake_run(runs / f"cooper_paper-s{s}", acc_end=0.75, pos_wrong=0.8, rm_right_end=4)
        # seeds 3 and 4 of the unscaled arm collapse: the table shows them, §4 (seeds 0-2) does not move
        _fake_run(runs / f"cooper_paper_noscale-s{s}", acc_end=0.25 if s > 2 else 0.75, pos_wrong=0.3, rm_right_end=4)
    rows = {d.name: report.run_report(d, d.name) for d in sorted(runs.iterdir())}
    c = comparison.headline(settings, runs, rows)
    assert c["conditions"]["cooper_paper"]["seeds"] == [0, 1, 2, 3, 4]
    assert c["conditions"]["cooper_paper_noscale"]["collapsed"] == [3, 4]
    assert c["decisions"]["section4"]["verdict"].startswith("prediction 1 holds")  # judged on seeds 0-2
    assert "prediction 2 fails" not in c["decisions"]["section4"]["verdict"]
    assert comparison.comparison(settings, runs, rows)["decisions"]["section4"] is None  # on 5 seeds nothing is judged


def test_an_rm_on_a_suite_counts_wrong_rows_accepted_and_right_rows_rejected(tmp_path, monkeypatch):
    ht = load_script("hack_transfer", HERE)
    suite = tmp_path / "suite.jsonl"
    labels = [1, 1, 0, 0, 0]
    suite.write_text("".join(json.dumps({"question": "q", "reference": "4", "completion": f"c{i}", "label": y}) + "\n"
                             for i, y in enumerate(labels)))  # fmt: skip
    monkeypatch.setattr(ht, "WORK", tmp_path)

    def score(tag, rm, data):  # eval-rm's outputs, made by hand: right rows 0.9 and 0.2, wrong 0.6, 0.1, 0.4
        assert tag == "cooper_recal-s0.latex" and data == suite
        (tmp_path / f"{tag}.scores.jsonl.gz").write_bytes(
            gzip.compress("".join(json.dumps({"rm": p}) + "\n" for p in (0.9, 0.2, 0.6, 0.1, 0.4)).encode())
        )
        return {"judges": {"rm": {"accuracy": 0.6, "auroc": 0.5}}, "data_sha256": "x"}

    monkeypatch.setattr(ht, "score", score)
    e = ht.suite_entry("cooper_recal-s0 (end)", tmp_path, "latex", suite)
    assert e["rows"] == 5 and e["accuracy"] == 60.0 and e["auroc"] == 0.5
    assert abs(e["wrong_accepted"] - 100 / 3) < 1e-9 and e["right_rejected"] == 50.0


def test_hack_transfer_scores_the_shipped_rm_at_the_start_only_beside_a_finished_run_from_it(tmp_path, monkeypatch):
    ht = load_script("hack_transfer", HERE)
    monkeypatch.setattr(ht, "ROOT", tmp_path)
    monkeypatch.setattr(ht, "RESULTS", tmp_path / "results")
    settings = {
        "rms": {"weak": {"path": "runs/weak"}, "shipped": {"path": "assets/verifyrm"}},
        "conditions": {
            "model": {"rm": "weak", "flags": {"reward": "model"}},
            "cooper_paper": {"rm": "weak", "flags": {"reward": "cooper"}},
            "cooper_paper_shipped": {"rm": "shipped", "flags": {"reward": "cooper"}},
        },
    }
    runs = tmp_path / "runs" / "rl_learns"
    for name, finished in (("cooper_paper-s0", True), ("cooper_paper_shipped-s0", False), ("model-s0", True)):
        _fake_run(runs / name, acc_end=0.5, pos_wrong=0.0, rm_right_end=4, finished=finished)
        (runs / name / "rm").mkdir()
        (runs / name / "rm" / "cooper_rm.json").write_text("{}")
    assert list(ht.rms(settings)) == ["weak (start)", "cooper_paper-s0 (end)"]  # a `model` run's RM is the static one
    _fake_run(runs / "cooper_paper_shipped-s0", acc_end=0.5, pos_wrong=0.0, rm_right_end=4)
    (runs / "cooper_paper_shipped-s0" / "rm").mkdir()
    (runs / "cooper_paper_shipped-s0" / "rm" / "cooper_rm.json").write_text("{}")
    got = ht.rms(settings)
    assert list(got) == ["weak (start)", "shipped (start)", "cooper_paper-s0 (end)", "cooper_paper_shipped-s0 (end)"]
    assert got["shipped (start)"] == tmp_path / "assets" / "verifyrm"
    # a replaced machine: the run dir is gone, the adapter committed beside the run's logs is scored instead
    import shutil

    shutil.move(runs / "cooper_paper_shipped-s0", tmp_path / "results" / "runs" / "cooper_paper_shipped-s0")
    got = ht.rms(settings)
    assert got["cooper_paper_shipped-s0 (end)"] == tmp_path / "results" / "runs" / "cooper_paper_shipped-s0" / "rm"
    assert "shipped (start)" in got


def test_a_condition_with_uncommitted_inputs_starts_only_from_their_recorded_build(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "ROOT", tmp_path)
    settings = {"conditions": {"c": {"inputs": {"rows.jsonl": hashlib.sha256(b"rows\n").hexdigest()},
                                     "inputs_build": "make rows"}, "d": {}}}  # fmt: skip
    assert "missing: build it (make rows)" in run.check_inputs(settings, "c")
    (tmp_path / "rows.jsonl").write_text("other\n")
    assert "not " in run.check_inputs(settings, "c")
    (tmp_path / "rows.jsonl").write_text("rows\n")
    assert run.check_inputs(settings, "c") is None and run.check_inputs(settings, "d") is None


def test_hack_transfer_refuses_a_shipped_rm_other_than_the_runs_start(tmp_path, monkeypatch):
    import pytest

    ht = load_script("hack_transfer", HERE)
    monkeypatch.setattr(ht, "ROOT", tmp_path)
    monkeypatch.setattr(ht, "RESULTS", tmp_path / "results")
    settings = {"rms": {"weak": {"path": "weak"}, "shipped": {"path": "shipped"}},
                "conditions": {"cooper_paper_shipped": {"rm": "shipped", "flags": {"reward": "cooper"}}}}  # fmt: skip
    d = tmp_path / "runs" / "rl_learns" / "cooper_paper_shipped-s0"
    _fake_run(d, acc_end=0.5, pos_wrong=0.0, rm_right_end=4)
    (d / "rm").mkdir()
    (d / "rm" / "cooper_rm.json").write_text("{}")
    (tmp_path / "shipped").mkdir()
    (tmp_path / "shipped" / "adapter_model.safetensors").write_bytes(b"new")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "rms.json").write_text(
        json.dumps({"shipped": {"sha256": hashlib.sha256(b"old").hexdigest()}})
    )
    with pytest.raises(SystemExit, match="not the shipped RM the runs started from"):
        ht.rms(settings)
    (tmp_path / "shipped" / "adapter_model.safetensors").write_bytes(b"old")
    assert "shipped (start)" in ht.rms(settings)

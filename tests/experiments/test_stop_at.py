import json
from pathlib import Path

import pytest
from tests.experiments import load_script

ROOT = Path(__file__).resolve().parents[2]

sa = load_script("stop_at")

RUN = {"step_s": 60.0, "eval_steps": 100, "batch": 4, "eval_s": 2400.0}


@pytest.mark.parametrize(
    "done,left,want",
    [
        (392, 8 * 60 + 2400 - 1, "stop"),  # the batch before the evaluation's: the eval would not end in time
        (392, 8 * 60 + 2400 + 1, "go"),  # ... and here it would (the next chance: after the evaluation)
        (396, 0, "go"),  # the batch in flight ends at the evaluation: a signal would act only after it
        (400, 0, "eval"),  # step 400 done and not evaluated yet: the evaluation is in progress
        (320, 8 * 60 - 1, "stop"),  # mid-interval: the next batch would end past the deadline
        (320, 8 * 60 + 1, "go"),
        (0, 0, "eval"),  # a new run's step-0 evaluation
    ],
)
def test_a_run_is_stopped_in_the_last_batch_that_loses_nothing(done, left, want):
    evaluated = {0, 100, 200, 300} | ({400} if done > 400 else set())
    if done == 0:
        evaluated = set()
    assert sa.decide(1000.0, 1000.0 + left, done, evaluated=evaluated, **RUN) == want


def test_after_its_evaluation_a_run_goes_on_or_stops_by_the_deadline():
    done = {0, 100, 200, 300, 400}
    assert sa.decide(0.0, 3600.0, 400, evaluated=done, **RUN) == "go"
    assert sa.decide(0.0, 7 * 60.0, 400, evaluated=done, **RUN) == "stop"


def test_a_starting_run_without_its_config_yet_is_skipped(tmp_path):
    assert sa.state(tmp_path) is None
    (tmp_path / "rl_config.json").write_text('{"eval_steps": 100, "steps_per_generation": 4}')
    (tmp_path / "timing.jsonl").write_text('{"step": 7, "step_seconds": 10.0}\n{"step": 8, "step_seconds": 30.0}\n{"st')
    assert sa.state(tmp_path) == {
        "done": 8,
        "step_s": 20.0,
        "eval_steps": 100,
        "batch": 4,
        "eval_s": sa.DEFAULT_EVAL,
        "evaluated": set(),
    }


def test_the_driver_stays_until_the_deadline_while_runs_are_signalled():
    evaluated = {0, 100, 200, 300}
    going = dict(RUN, done=320, evaluated=evaluated)  # next batch ends 8 min after now
    starting = None  # a run still writing its config: never signalled
    # far from the deadline: nobody is signalled, the driver goes on
    assert sa.plan(0.0, 3600.0, {1: going, 2: starting}, set(), driver=True) == (False, [])
    # a run must stop now: it is signalled; the driver stays, so the core it frees takes the next run (may_start)
    assert sa.plan(0.0, 60.0, {1: going, 2: starting}, set(), driver=True) == (False, [1])
    assert sa.plan(0.0, 60.0, {1: going}, {1}, driver=True) == (False, [])  # signalled already: not twice
    # at the deadline the driver goes, with or without a run to signal
    assert sa.plan(60.0, 60.0, {1: going}, {1}, driver=True) == (True, [])
    assert sa.plan(100.0, 60.0, {}, set(), driver=True) == (True, [])
    assert sa.plan(100.0, 60.0, {}, set(), driver=False) == (False, [])


def test_a_run_starts_only_if_it_can_stop_losing_nothing_by_a_watchers_deadline(tmp_path):
    import fcntl
    import os
    import subprocess
    import sys

    out, results = tmp_path / "out", tmp_path / "results"
    out.mkdir()
    assert sa.may_start(str(out), now=0.0, run_dir=str(out / "model-s2"))  # no watcher: always
    # a resumable run: checkpoint at 96, timed at 60 s a step and 2,400 s an evaluation
    run = out / "cooper-s1"
    (run / "checkpoint-96").mkdir(parents=True)
    (run / "rl_config.json").write_text(json.dumps({"eval_steps": 100, "steps_per_generation": 4}))
    (run / "timing.jsonl").write_text("".join(json.dumps({"step": i, "step_seconds": 60.0}) + "\n" for i in (95, 96)))
    (run / "evals.jsonl").write_text(json.dumps({"step": 0, "eval_seconds": 2400.0}) + "\n")
    # its first batch ends at the step-100 evaluation: loading + 4 steps + the evaluation before it can stop
    need = sa.LOAD + 4 * 60 + 2400
    watcher = os.open(out / ".stop_at.json", os.O_RDWR | os.O_CREAT)  # a live watcher: the file, locked
    try:
        fcntl.flock(watcher, fcntl.LOCK_EX)
        os.write(watcher, json.dumps({"pid": 1, "deadline": 10_000.0}).encode())
        assert sa.may_start(str(out), 10_000.0 - need, str(run), str(results))
        assert not sa.may_start(str(out), 10_000.0 - need + 1, str(run), str(results))
        # mid-interval (checkpoint 48): loading and one batch
        (run / "checkpoint-96").rename(run / "checkpoint-48")
        assert sa.may_start(str(out), 10_000.0 - sa.LOAD - 4 * 60, str(run), str(results))
        assert not sa.may_start(str(out), 10_000.0 - sa.LOAD - 4 * 60 + 1, str(run), str(results))
        # a new run: its step-0 evaluation first (the default length), unless a run of its seed has one to reuse
        fresh = out / "model-s2"
        assert not sa.may_start(str(out), 10_000.0 - sa.LOAD - sa.DEFAULT_EVAL, str(fresh), str(results))
        (results / "runs/rule-s2/eval/step-0").mkdir(parents=True)
        (results / "runs/rule-s2/eval/step-0/summary.json").write_text("{}")
        assert sa.may_start(str(out), 10_000.0 - sa.LOAD - 4 * sa.DEFAULT_STEP, str(fresh), str(results))
        # the command line run_hack.sh calls: the deadline (epoch 10,000) is long past
        env = os.environ | {"PYTHONPATH": str(ROOT / "src")}
        cli = [sys.executable, ROOT / "experiments/reproduce/stop_at.py", "--may-start", out]
        assert subprocess.run(cli, env=env, timeout=60).returncode == 1
        assert subprocess.run([*cli, run], env=env, timeout=60).returncode == 1
    finally:
        os.close(watcher)  # the watcher is gone: its file is stale, whatever it says
    assert sa.may_start(str(out), 10_000.0, str(run), str(results))


@pytest.mark.parametrize(
    "done,evaluated,want",
    [
        (48, {0}, 4 * 60),  # mid-interval: one batch
        (96, {0}, 4 * 60 + 2400),  # its batch ends at the step-100 evaluation, which a signal cannot cut short
        (92, {0}, 4 * 60),
        (100, {0}, 2400 + 4 * 60),  # resumed at an evaluation step not evaluated yet: the evaluation first
        (100, {0, 100}, 4 * 60),
        (0, set(), 2400 + 4 * 60),  # a new run without a step-0 evaluation to reuse
        (0, {0}, 4 * 60),
    ],
)
def test_the_first_point_a_starting_run_can_stop_losing_nothing(done, evaluated, want):
    assert sa.first_stop_s(done, evaluated, **RUN) == want


def test_descendants_are_found_from_proc():
    import os
    import subprocess

    p = subprocess.Popen(["bash", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        import time

        for _ in range(50):
            kids = sa.descendants([p.pid])
            if len(kids) >= 2:
                break
            time.sleep(0.1)
        assert len(kids) == 2 and os.getpid() not in kids
    finally:
        for k in sa.descendants([p.pid]):
            os.kill(k, 9)
        p.kill()
        p.wait()


def test_a_clock_deadline_already_past_today_means_tomorrow():
    from datetime import UTC, datetime

    late = datetime(2026, 11, 26, 23, 1, tzinfo=UTC)  # a session started before midnight, ending after it
    assert sa.parse_deadline("01:30", now=late) == datetime(2026, 11, 27, 1, 30, tzinfo=UTC).timestamp()
    assert sa.parse_deadline("23:30", now=late) == datetime(2026, 11, 26, 23, 30, tzinfo=UTC).timestamp()
    assert sa.parse_deadline("1764200000") == 1764200000.0


def test_a_driver_started_after_the_deadline_is_left_alone():
    seen: set[int] = set()
    assert sa.drivers_of_the_plan(0.0, 60.0, [11], seen) == [11]  # before the deadline: the plan's driver
    # after it: the plan's driver still goes (and is waited for); a REPORT_ONLY run_hack.sh started now is not stopped
    assert sa.drivers_of_the_plan(100.0, 60.0, [11, 12], seen) == [11]
    assert sa.drivers_of_the_plan(120.0, 60.0, [12], seen) == []  # nor waited for: the watcher may exit

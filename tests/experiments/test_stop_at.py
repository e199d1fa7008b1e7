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


def test_a_new_run_may_start_until_fill_min_before_a_live_stop_ats_deadline(tmp_path):
    import os
    import subprocess
    import sys

    assert sa.may_start(str(tmp_path), now=0.0)  # no stop_at: always
    # a live stop_at.py (a process whose command line names it) publishing its deadline
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "stop_at.py"])
    try:
        (tmp_path / ".stop_at.json").write_text(json.dumps({"pid": proc.pid, "deadline": 10_000.0}))
        assert sa.may_start(str(tmp_path), now=10_000.0 - sa.FILL_MIN)
        assert not sa.may_start(str(tmp_path), now=10_000.0 - sa.FILL_MIN + 1)
        env = os.environ | {"PYTHONPATH": str(ROOT / "src")}
        script = ROOT / "experiments/reproduce/stop_at.py"
        cli = subprocess.run([sys.executable, script, "--may-start", tmp_path], env=env, timeout=60)
        assert cli.returncode == 1  # the deadline (epoch 10,000) is long past: the CLI says no
    finally:
        proc.kill()
        proc.wait()
    # the same file left by a stop_at that has gone (killed with the session): ignored
    assert sa.may_start(str(tmp_path), now=10_000.0)
    (tmp_path / ".stop_at.json").write_text("{")  # half-written: ignored too
    assert sa.may_start(str(tmp_path), now=10_000.0)


def test_a_clock_deadline_already_past_today_means_tomorrow():
    from datetime import UTC, datetime

    late = datetime(2026, 11, 26, 23, 1, tzinfo=UTC)  # a session started before midnight, ending after it
    assert sa.parse_deadline("01:30", now=late) == datetime(2026, 11, 27, 1, 30, tzinfo=UTC).timestamp()
    assert sa.parse_deadline("23:30", now=late) == datetime(2026, 11, 26, 23, 30, tzinfo=UTC).timestamp()
    assert sa.parse_deadline("1764200000") == 1764200000.0

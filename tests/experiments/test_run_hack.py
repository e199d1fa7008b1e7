"""experiments/reward_hacking/run.sh: which run dirs its report copies, and its driver (a fake `cooper`): runs stopped
by a signal, runs in use by another process, a failed run, STOP_AT."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.experiments.test_report_hack import fake_run

ROOT = Path(__file__).resolve().parents[2]
# run.sh sources experiments/common.sh, which sets up and uses the project's .venv (scripts/setup.sh): run only
# where it exists (make test), never to create one from a plain `pip install -e .`
pytestmark = pytest.mark.skipif(not (ROOT / ".venv/bin/python").exists(), reason="needs the project's .venv")


def test_report_copies_runs_with_a_step0_row_and_not_a_run_still_starting(tmp_path):
    out, results = tmp_path / "out", tmp_path / "results"
    fake_run(out / "rule-s0", 200, {0: 0.30, 100: 0.28, 200: 0.29})
    (out / "model-s1").mkdir(parents=True)  # started, its step-0 evaluation still running: no evals.jsonl yet
    (out / "model-s1/rl_config.json").write_text(json.dumps({"prompts_per_step": 2}))
    (out / "cooper-s1").mkdir(parents=True)  # restarted from step 0 in its old dir: evals.jsonl emptied
    (out / "cooper-s1/rl_config.json").write_text(json.dumps({"prompts_per_step": 2}))
    (out / "cooper-s1/evals.jsonl").write_text("")
    (results / "runs/cooper-s1").mkdir(parents=True)  # an earlier report's copy of it, from before this fix
    (results / "runs/cooper-s1/rl_config.json").write_text("{}")
    env = os.environ | {"REPORT_ONLY": "1", "OUT": str(out), "R": str(results)}
    p = subprocess.run(
        ["bash", "experiments/reward_hacking/run.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert sorted(x.name for x in (results / "runs").iterdir()) == ["rule-s0"]
    assert (results / "runs/rule-s0/evals.jsonl").read_text() == (out / "rule-s0/evals.jsonl").read_text()
    assert "model-s1: no evaluation yet" in p.stdout and "cooper-s1: no evaluation yet" in p.stdout
    assert json.loads((results / "summary.json").read_text())["conditions"]["rule"]["seeds"] == [0]


FAKE_COOPER = """#!/usr/bin/env bash
# a fake `cooper rl`: records its run dir (and its --stop_at), leaves a checkpoint, exits with the code in DIR.rc
# (default 0)
[ "$1" = rl ] || exit 2
while [ $# -gt 0 ]; do [ "$1" = --output_dir ] && dir=$2; [ "$1" = --stop_at ] && stop=$2; shift; done
echo "$dir" >> "$FAKE_CALLS"
[ -n "$stop" ] && echo "$stop" > "$dir.stop_at"
mkdir -p "$dir/checkpoint-4"
exit "$(cat "$dir.rc" 2>/dev/null || echo 0)"
"""


def driver_env(tmp_path, runs: str, jobs: int) -> dict:
    """run.sh's environment for RUNS with a fake cooper, a fake warm-up and RM, and empty results."""
    (tmp_path / "sft").mkdir()
    (tmp_path / "sft/sft_summary.json").write_text("{}")
    (tmp_path / "rm").mkdir()
    (tmp_path / "rm/cooper_rm.json").write_text("{}")
    fake = tmp_path / "cooper"
    fake.write_text(FAKE_COOPER)
    fake.chmod(0o755)
    (tmp_path / "out").mkdir()
    return os.environ | {
        "COOPER_CMD": str(fake), "FAKE_CALLS": str(tmp_path / "calls"), "OUT": str(tmp_path / "out"),
        "R": str(tmp_path / "results"), "SFT": str(tmp_path / "sft"), "RM": str(tmp_path / "rm"), "STRONG_RM": "",
        "RUNS": runs, "JOBS": str(jobs),
    }  # fmt: skip


def calls(tmp_path) -> list[str]:
    f = tmp_path / "calls"
    return [Path(x).name for x in f.read_text().split()] if f.exists() else []


def test_driver_goes_on_after_a_signal_waits_on_a_run_in_use_and_stops_at_a_failure(tmp_path):
    import time

    env = driver_env(tmp_path, "rule:0 model:0 rule:1 model:1 cooper:1", jobs=2)
    out = tmp_path / "out"
    (out / "rule-s0.rc").write_text("143")  # stopped at its --stop_at, at a checkpoint: not a failure
    (out / "model-s1.rc").write_text("1")  # a failure: no new run starts, no report
    release = tmp_path / "release"
    # model-s0 is still run by a process a killed driver left: its lock is held until the test releases it
    holder = subprocess.Popen(
        ["flock", out / "model-s0.lock", "bash", "-c", f"while [ ! -f {release} ]; do sleep 0.1; done"]
    )
    while subprocess.run(["flock", "-n", out / "model-s0.lock", "true"]).returncode == 0:
        time.sleep(0.05)
    err = tmp_path / "driver.err"
    with open(err, "w") as e:
        p = subprocess.Popen(["bash", "experiments/reward_hacking/run.sh"], cwd=ROOT, env=env, stdout=e, stderr=e)
        deadline = time.time() + 120
        # held until model-s1 has failed: the slot it frees must not take cooper:1
        while "model seed 1 FAILED" not in err.read_text():
            assert p.poll() is None and time.time() < deadline, err.read_text()[-2000:]
            time.sleep(0.2)
        assert "model-s0 is in use by another process" in err.read_text()
        assert "model-s0" not in calls(tmp_path)  # waiting on it, not starting a second writer
        release.touch()
        rc = p.wait(timeout=240)
    holder.wait(timeout=10)
    log = err.read_text()
    assert rc == 1, log[-2000:]
    assert "rule seed 0 stopped by a signal at a checkpoint" in log and "rule seed 0 FAILED" not in log
    assert "model seed 1 FAILED" in log and "a run failed: no report" in log
    # the plan went on after the signalled run and the failure stopped it: cooper:1 never started, model:0 left alone
    assert sorted(calls(tmp_path)) == ["model-s1", "rule-s0", "rule-s1"]
    assert not (tmp_path / "results/summary.json").exists()
    assert len((tmp_path / "results/commands.txt").read_text().splitlines()) == 3
    for lock in ("rule-s0", "model-s0", "rule-s1", "model-s1"):  # nothing holds a run's lock any more
        assert subprocess.run(["flock", "-n", out / f"{lock}.lock", "true"]).returncode == 0, lock


@pytest.mark.parametrize("jobs", [1, 2])
def test_stop_at_reaches_every_run_and_no_run_starts_after_it(tmp_path, jobs):
    import time

    env = driver_env(tmp_path, "rule:0 model:0", jobs=jobs) | {"STOP_AT": "+3600"}
    p = subprocess.run(
        ["bash", "experiments/reward_hacking/run.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert sorted(calls(tmp_path)) == ["model-s0", "rule-s0"]
    for run in ("rule-s0", "model-s0"):  # the time left until the one deadline, passed as cooper rl --stop_at
        left = (tmp_path / f"out/{run}.stop_at").read_text().strip()
        assert left.startswith("+") and 3600 - 120 < int(left[1:]) <= 3600
    commands = (tmp_path / "results/commands.txt").read_text()
    assert commands.count("--stop_at +") == 2  # the exact commands, with their deadline

    # a deadline already passed: no run starts, the report still runs
    (tmp_path / "calls").unlink()
    past = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 60))
    (tmp_path / "out2").mkdir()
    env |= {"STOP_AT": past, "RUNS": "cooper:0 cooper_new:0", "OUT": str(tmp_path / "out2")}
    p = subprocess.run(
        ["bash", "experiments/reward_hacking/run.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert calls(tmp_path) == []
    assert "STOP_AT has passed" in p.stderr
    assert (tmp_path / "results/summary.json").exists()  # the report still runs

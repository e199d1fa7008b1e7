"""run_hack.sh's report step: which run dirs it copies into the committed results."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.experiments.test_report_hack import fake_run

ROOT = Path(__file__).resolve().parents[2]
# run_hack.sh sources experiments/common.sh, which sets up and uses the project's .venv (scripts/setup.sh): run only
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
        ["bash", "experiments/reproduce/run_hack.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert sorted(x.name for x in (results / "runs").iterdir()) == ["rule-s0"]
    assert (results / "runs/rule-s0/evals.jsonl").read_text() == (out / "rule-s0/evals.jsonl").read_text()
    assert "model-s1: no evaluation yet" in p.stdout and "cooper-s1: no evaluation yet" in p.stdout
    assert json.loads((results / "summary.json").read_text())["conditions"]["rule"]["seeds"] == [0]

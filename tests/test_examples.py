"""examples/: the plain-TRL Cooper script runs (tiny policy and RM), and cooper_rl's public names resolve."""

import os
import subprocess
import sys
from pathlib import Path

import cooper_rl

ROOT = Path(__file__).parents[1]


def test_public_names_resolve_lazily():
    for name in cooper_rl.__all__:
        assert getattr(cooper_rl, name) is not None
    from cooper_rl import verify  # the subpackage, not a function of that name

    assert callable(verify.verify)


def test_trl_script_trains_with_a_cooper_reward(assets, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, str(ROOT / "examples/trl_grpo_cooper.py"), "--policy", str(assets / "policy")]
    cmd += ["--rm", str(assets / "rm"), "--data", str(assets / "data.jsonl"), "--max_steps", "2"]
    out = subprocess.run(cmd + ["--output_dir", str(tmp_path)], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("last reward call:") and "rm/n_pairs" in last and "signal/zero_spread_groups" in last

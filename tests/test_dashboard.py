"""The live dashboard: `cooper rl --report_to tensorboard` writes event files TensorBoard serves with the
cooper/* curves; scripts/check_tensorboard.py loads the page in headless Chromium where one is installed."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cooper_rl.rl.train import run_rl
from rl.test_train import config

ROOT = Path(__file__).parent.parent


def test_tensorboard_serves_the_cooper_curves(assets, tmp_path, one_thread):
    run_rl(config(assets, tmp_path / "run", "cooper", max_steps=2, report_to="tensorboard"))
    assert list((tmp_path / "run").rglob("events.out.tfevents.*"))
    shot = tmp_path / "tb.png"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/check_tensorboard.py"), str(tmp_path / "run"), "--out", str(shot)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "cooper/* (e.g. ['train/cooper/" in proc.stdout, proc.stdout + proc.stderr
    if shutil.which("chromium") is None:
        assert "chromium not found" in proc.stderr and proc.returncode == 1
        pytest.skip("Chromium is not installed: the screenshot part of the check did not run")
    assert proc.returncode == 0, proc.stderr
    assert shot.stat().st_size > 10_000

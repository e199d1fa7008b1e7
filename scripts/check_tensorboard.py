"""Check a run's live dashboard the way a person would: start TensorBoard on it, load the scalars page in headless
Chromium, save a screenshot, and check that the cooper/* curves are there.

  python scripts/check_tensorboard.py results/demo/rl [--out tensorboard.png] [--chromium /usr/bin/chromium]

Needs TensorBoard (installed by the set-up) and Chromium (Debian: apt-get install chromium). Exit status 0 when
TensorBoard serves cooper/* scalars for the run and the screenshot was written; 1 otherwise (with the reason).
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str, timeout: float = 5.0) -> bytes:
    """GET url (no proxy), the body."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=timeout) as r:
        return r.read()


def scalar_tags(base: str, deadline: float) -> list[str]:
    """Scalar tags TensorBoard serves, waiting (until deadline) for it to start and load the event files."""
    tags: list[str] = []
    while time.time() < deadline:
        try:
            data = json.loads(fetch(f"{base}/data/plugin/scalars/tags"))
            tags = sorted({t for run in data.values() for t in run})
            if any("cooper/" in t for t in tags):
                return tags
        except (OSError, ValueError):
            pass
        time.sleep(1.0)
    return tags


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("logdir", help="a cooper rl output_dir run with --report_to tensorboard")
    ap.add_argument("--out", default="tensorboard.png", help="screenshot path")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--timeout", type=float, default=90.0)
    args = ap.parse_args()
    if not list(Path(args.logdir).rglob("events.out.tfevents.*")):
        print(f"no TensorBoard event files under {args.logdir}: run with --report_to tensorboard", file=sys.stderr)
        return 1
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    tb = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", args.logdir, "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        tags = scalar_tags(base, time.time() + args.timeout)
        cooper = [t for t in tags if "cooper/" in t]
        print(f"TensorBoard at {base}: {len(tags)} scalar tags, {len(cooper)} cooper/* (e.g. {cooper[:4]})")
        if not cooper:
            print("no cooper/* scalars served", file=sys.stderr)
            return 1
        if not Path(args.chromium).exists():
            print(f"chromium not found at {args.chromium} (Debian: apt-get install chromium)", file=sys.stderr)
            return 1
        out = Path(args.out).resolve()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.unlink(missing_ok=True)
        # the scalars dashboard, filtered to the cooper/* curves; virtual time lets the page render its charts
        url = f"{base}/?darkMode=false#scalars&tagFilter=cooper"
        cmd = [args.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
        cmd += ["--window-size=1400,1100", "--virtual-time-budget=20000", f"--screenshot={out}", url]
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=args.timeout, check=False)
        if not out.is_file() or out.stat().st_size < 10_000:
            print(f"no screenshot written to {out}", file=sys.stderr)
            return 1
        print(f"screenshot: {out} ({out.stat().st_size // 1024} KiB)")
        return 0
    finally:
        tb.terminate()
        tb.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())

"""Stop issue 15's runs by a deadline without losing an evaluation: each running `cooper rl` under OUT gets its SIGTERM
(checkpoint at the end of the generation batch in flight, then exit) in the last batch that ends before an
evaluation it could not finish by DEADLINE, or in the last batch that ends before DEADLINE; an evaluation already
in progress is left to finish. A core freed early (a run stopped before an evaluation that would not fit, or a run
that finished) is not left idle: run_hack.sh goes on starting the next runs of its plan, which make progress and
checkpoint like the others, until FILL_MIN before DEADLINE (it asks `stop_at.py --may-start OUT`, which reads the
deadline this script publishes in OUT/.stop_at.json while it runs). At DEADLINE run_hack.sh is stopped, and so is an
RM build or warm-up it started (`cooper train-rm`, `cooper sft`: SIGTERM, they checkpoint). Start it any time before
a session ends, in the background; it exits when neither run_hack.sh nor a run is left.

usage: python experiments/reproduce/stop_at.py DEADLINE [OUT] [--dry-run]   DEADLINE: HH:MM (UTC, next) or epoch s
       (--dry-run: print each run's state and what would be done now, signal nothing)
       python experiments/reproduce/stop_at.py --may-start [OUT]   exit 0 if a new run may start now, else 1
       e.g. nohup .venv/bin/python experiments/reproduce/stop_at.py 04:30 >> runs/hack/stop_at.log 2>&1 &

A signal reaching a run in the batch that ends at an evaluation step would stop it only after that evaluation
(the evaluation callback runs before the checkpoint-on-signal one), so the last safe batch is the one before.
"""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cooper_rl.io import read_jsonl  # a last line cut by a writer in flight is skipped

POLL = 15  # seconds between looks at the runs' logs
DEFAULT_EVAL = 45 * 60  # an evaluation's length before a run has timed one of its own
DRIVER = "bash experiments/reproduce/run_hack.sh"  # its command line (pkill -f: the runs it started go on)
BUILDERS = "cooper (train-rm|sft) "  # what the driver may be running besides runs: an RM build, the warm-up
FILL_MIN = 15 * 60  # no new run starts this close to the deadline: loading and a first batch would not fit


def decide(
    now: float,
    deadline: float,
    done: int,
    step_s: float,
    eval_steps: int,
    batch: int,
    eval_s: float,
    evaluated: set[int],
) -> str:
    """'eval' (an evaluation is in progress: leave it), 'stop' (signal now: the checkpoint lands at the end of the batch
    in flight) or 'go', for a run that has finished `done` optimizer steps of `batch` per generation batch."""
    if done % eval_steps == 0 and done not in evaluated:
        return "eval"
    end = (done // batch + 1) * batch  # where a signal now checkpoints
    next_eval = (done // eval_steps + 1) * eval_steps
    if end >= next_eval:  # the batch in flight ends at an evaluation: a signal now would act only after it
        return "go"
    # the next chance to stop is at end + batch, or after the evaluation if that batch ends at it
    later = (end + batch - done) * step_s + (eval_s if end + batch >= next_eval else 0)
    return "stop" if now + later > deadline else "go"


def plan(
    now: float, deadline: float, states: dict[int, dict | None], signalled: set[int], driver: bool
) -> tuple[bool, list[int]]:
    """(stop run_hack.sh now?, pids to signal now) for the runs' states (None: a run still starting)."""
    stop = [p for p, s in states.items() if p not in signalled and s and decide(now, deadline, **s) == "stop"]
    # the driver stays until the deadline: a core freed early takes the next run of its plan (may_start says until
    # when); at the deadline it goes, with any RM build it started
    return driver and now >= deadline, stop


def may_start(out: str, now: float, fill_min: float = FILL_MIN) -> bool:
    """Whether run_hack.sh may start a run now: no stop_at running for OUT, or its deadline at least fill_min away."""
    try:
        pub = json.loads((Path(out) / ".stop_at.json").read_text())
        alive = b"stop_at.py" in Path(f"/proc/{pub['pid']}/cmdline").read_bytes()
    except (OSError, ValueError, KeyError):
        return True  # none published, or a stale file of a stop_at that has gone
    return not alive or now + fill_min <= pub["deadline"]


def runs(out: str) -> dict[int, Path]:
    """pid -> output dir of every running `cooper rl` under out."""
    found = {}
    for pid in subprocess.run(["pgrep", "-f", "cooper rl "], capture_output=True, text=True).stdout.split():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode() for a in cmd]
        if "--output_dir" in args and args[args.index("--output_dir") + 1].startswith(out.rstrip("/") + "/"):
            found[int(pid)] = Path(args[args.index("--output_dir") + 1])
    return found


def state(d: Path) -> dict | None:
    """What decide() needs from a run dir's logs (None while a starting run has not written its config yet)."""
    if not (d / "rl_config.json").is_file():
        return None
    cfg = json.loads((d / "rl_config.json").read_text())
    timing = read_jsonl(d / "timing.jsonl", missing_ok=True)
    evals = read_jsonl(d / "evals.jsonl", missing_ok=True)
    own = [e["eval_seconds"] for e in evals if e.get("eval_seconds", 0) > 120 and "policy_eval_reused_from" not in e]
    return {
        "done": timing[-1]["step"] if timing else 0,
        # the mean, not the median: a generation batch's first step carries its generation
        "step_s": statistics.mean(t["step_seconds"] for t in timing[-24:]) if timing else 60.0,
        "eval_steps": cfg["eval_steps"],
        "batch": cfg.get("steps_per_generation") or 1,
        "eval_s": own[-1] if own else DEFAULT_EVAL,
        "evaluated": {e["step"] for e in evals},
    }


def parse_deadline(s: str, now: datetime | None = None) -> float:
    """Epoch seconds of the next HH:MM (UTC; tomorrow's once today's has passed: a session may cross midnight) or of
    an epoch given as is."""
    if re.fullmatch(r"\d{1,2}:\d{2}", s):
        h, m = map(int, s.split(":"))
        now = now or datetime.now(UTC)
        at = now.replace(hour=h, minute=m, second=0, microsecond=0)
        return (at if at > now else at + timedelta(days=1)).timestamp()
    return float(s)


def main():
    if sys.argv[1:2] == ["--may-start"]:
        sys.exit(0 if may_start(sys.argv[2] if len(sys.argv) > 2 else "runs/hack", time.time()) else 1)
    args = [a for a in sys.argv[1:] if a != "--dry-run"]
    deadline = parse_deadline(args[0])
    out = args[1] if len(args) > 1 else "runs/hack"
    if "--dry-run" in sys.argv:
        for pid, d in runs(out).items():
            s = state(d)
            print(
                pid, d, s and {k: v for k, v in s.items() if k != "evaluated"}, s and decide(time.time(), deadline, **s)
            )
        return
    print(f"[stop_at] deadline {time.strftime('%H:%M:%S', time.gmtime(deadline))} UTC", flush=True)
    published = Path(out) / ".stop_at.json"
    tmp = published.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "deadline": deadline}))
    tmp.replace(published)
    try:
        watch(out, deadline)
    finally:
        published.unlink(missing_ok=True)


def watch(out: str, deadline: float) -> None:
    """Signal each run when it must stop, the driver and its RM builds at the deadline; return when all are gone."""
    signalled: set[int] = set()
    while True:
        live, driver = runs(out), subprocess.run(["pgrep", "-f", DRIVER], capture_output=True).returncode == 0
        if not live and not driver:
            break
        states = {p: state(d) for p, d in live.items()}
        stop_driver, stop = plan(time.time(), deadline, states, signalled, driver)
        if stop_driver:
            subprocess.run(["pkill", "-TERM", "-f", DRIVER])
            subprocess.run(["pkill", "-TERM", "-f", BUILDERS])  # they checkpoint and exit (stop_hack.sh does the same)
            print(f"[stop_at] {time.strftime('%H:%M:%S', time.gmtime())} run_hack.sh stopped", flush=True)
        for pid in stop:
            s = states[pid]
            os.kill(pid, signal.SIGTERM)
            signalled.add(pid)
            print(
                f"[stop_at] {time.strftime('%H:%M:%S', time.gmtime())} SIGTERM {live[pid]} after step {s['done']} "
                f"(checkpoint at {(s['done'] // s['batch'] + 1) * s['batch']})",
                flush=True,
            )
        time.sleep(POLL)
    print(f"[stop_at] {time.strftime('%H:%M:%S', time.gmtime())} no run left", flush=True)


if __name__ == "__main__":
    main()

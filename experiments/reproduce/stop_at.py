"""Stop issue 15's runs by a deadline without losing an evaluation: each running `cooper rl` under OUT gets its SIGTERM
(checkpoint at the end of the generation batch in flight, then exit) in the last batch that ends before an
evaluation it could not finish by DEADLINE, or in the last batch that ends before DEADLINE; an evaluation already
in progress is left to finish. A core freed early (a run stopped before an evaluation that would not fit, or a run
that finished) is not left idle: run_hack.sh goes on with its plan, starting a run only if it can reach a point where
it stops losing nothing (loading, a pending evaluation, its first batch, an evaluation that batch ends at) by
DEADLINE: it asks `stop_at.py --may-start OUT RUN_DIR`, which reads the deadline this script publishes in
OUT/.stop_at.json and holds a lock on while it runs (one watcher per OUT). At DEADLINE run_hack.sh is stopped with
everything it started but the runs (an RM build: its script and `cooper train-rm`, which checkpoints on SIGTERM).
A run_hack.sh started after DEADLINE (REPORT_ONLY=1, say) is left alone. Start it any time before a session ends, in
the background; it exits when neither a run nor a run_hack.sh it saw before DEADLINE is left.

usage: python experiments/reproduce/stop_at.py DEADLINE [OUT] [--dry-run]   DEADLINE: HH:MM (UTC, next) or epoch s
       (--dry-run: print each run's state and what would be done now, signal nothing)
       python experiments/reproduce/stop_at.py --may-start OUT [RUN_DIR [RESULTS]]   exit 0 if the run (or, without
       RUN_DIR, any run) may start now, 1 if not (RESULTS: the experiment's committed runs, for step-0 evaluations)
       e.g. nohup .venv/bin/python experiments/reproduce/stop_at.py 04:30 >> runs/hack/stop_at.log 2>&1 &

A signal reaching a run in the batch that ends at an evaluation step would stop it only after that evaluation
(the evaluation callback runs before the checkpoint-on-signal one), so the last safe batch is the one before.
"""

from __future__ import annotations

import fcntl
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
LOAD = 180  # seconds from a run's start to its first step (loading the policy, the RMs, the data)
DEFAULT_STEP = 60.0  # a step's length before a run has timed its own
PUBLISHED = ".stop_at.json"  # in OUT: this watcher's pid and deadline, locked while it runs


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


def drivers_of_the_plan(now: float, deadline: float, drivers: list[int], seen: set[int]) -> list[int]:
    """The run_hack.sh pids this watcher answers for: those seen before the deadline (added to seen). One started after
    it is left alone: it cannot start a run (may_start refuses once the deadline is near), so it is a REPORT_ONLY one
    or a driver that only reports what it would not start."""
    if now < deadline:
        seen.update(drivers)
    return [d for d in drivers if d in seen]


def first_stop_s(done: int, evaluated: set[int], eval_steps: int, batch: int, step_s: float, eval_s: float) -> float:
    """Seconds a run starting (after loading) at `done` steps needs before a signal stops it losing nothing: an
    evaluation pending at `done`, its first batch, and the evaluation that batch ends at, if it does (decide())."""
    t = eval_s if done % eval_steps == 0 and done not in evaluated else 0.0
    end = (done // batch + 1) * batch
    return t + (end - done) * step_s + (eval_s if end >= (done // eval_steps + 1) * eval_steps else 0.0)


def start_state(d: Path, out: Path, results: Path) -> dict:
    """first_stop_s()'s arguments for the run dir d as it would start now: from its last checkpoint (or step 0; its
    step-0 evaluation reused where a run of the seed has one, here or committed in results), timed by its own logs or
    by the other runs' settings and defaults."""
    st = state(d) if d.is_dir() else None
    if st is None:
        cfgs = sorted(out.glob("*/rl_config.json"))
        cfg = json.loads(cfgs[0].read_text()) if cfgs else {}
        st = {
            "step_s": DEFAULT_STEP,
            "eval_steps": cfg.get("eval_steps", 100),
            "batch": cfg.get("steps_per_generation"),
        }
        st |= {"batch": st["batch"] or 1, "eval_s": DEFAULT_EVAL, "evaluated": set()}
    steps = [int(c.name.split("-")[1]) for c in d.glob("checkpoint-*") if c.name.split("-")[1].isdigit()]
    st["done"] = max(steps, default=0)
    seed = d.name.rsplit("-s", 1)[-1]
    if any(
        (x / "eval/step-0/summary.json").is_file() for x in [*out.glob(f"*-s{seed}"), *results.glob(f"runs/*-s{seed}")]
    ):
        st["evaluated"] = st["evaluated"] | {0}  # cooper rl --eval_step0_from reuses it (run_hack.sh passes them)
    return st


def published_deadline(out: str) -> float | None:
    """The deadline of the stop_at.py watching OUT, None if none does (no file, or one left by a watcher that has
    gone: its lock went with it)."""
    try:
        fd = os.open(Path(out) / PUBLISHED, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None  # we got the lock: nobody holds it
    except BlockingIOError:
        try:
            return float(json.loads(os.pread(fd, 4096, 0))["deadline"])
        except (ValueError, KeyError, TypeError):
            return None  # a watcher writing it this very moment, as it starts: its deadline is hours away
    finally:
        os.close(fd)


def may_start(out: str, now: float, run_dir: str | None = None, results: str = "experiments/reproduce/results_hack"):
    """Whether run_hack.sh may start the run in run_dir now (without one: any run that loads in time): always if no
    stop_at watches OUT; else only if it can be stopped losing nothing by the published deadline."""
    deadline = published_deadline(out)
    if deadline is None:
        return True
    need = LOAD + (first_stop_s(**start_state(Path(run_dir), Path(out), Path(results))) if run_dir else 0.0)
    return now + need <= deadline


def descendants(pids: list[int]) -> list[int]:
    """Every process below pids (children, theirs, ...), from /proc."""
    parent = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found, todo = [], list(pids)
    while todo:
        pid = todo.pop()
        kids = [c for c, p in parent.items() if p == pid]
        found += kids
        todo += kids
    return found


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
        out, rest = sys.argv[2], sys.argv[3:5]  # [RUN_DIR [RESULTS]]
        sys.exit(0 if may_start(out, time.time(), *rest) else 1)
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
    # published for run_hack.sh, under a lock held while this runs: a file left by a killed watcher is stale to
    # may_start at once, and a second watcher of OUT is refused
    fd = os.open(Path(out) / PUBLISHED, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(f"[stop_at] another stop_at.py watches {out} ({Path(out) / PUBLISHED})")
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "deadline": deadline}).encode(), 0)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # killed by hand: the file still goes
    print(f"[stop_at] deadline {time.strftime('%H:%M:%S', time.gmtime(deadline))} UTC", flush=True)
    try:
        watch(out, deadline)
    finally:
        (Path(out) / PUBLISHED).unlink(missing_ok=True)
        os.close(fd)


def watch(out: str, deadline: float) -> None:
    """Signal each run when it must stop, the driver and its RM builds at the deadline; return when all are gone."""
    signalled: set[int] = set()
    seen: set[int] = set()  # drivers seen before the deadline
    while True:
        pids = [int(p) for p in subprocess.run(["pgrep", "-f", DRIVER], capture_output=True, text=True).stdout.split()]
        live, drivers = runs(out), drivers_of_the_plan(time.time(), deadline, pids, seen)
        if not live and not drivers:
            break
        states = {p: state(d) for p, d in live.items()}
        stop_driver, stop = plan(time.time(), deadline, states, signalled, bool(drivers))
        if stop_driver:
            # the driver with everything it started but the runs (an RM build: its script, `cooper train-rm`, which
            # checkpoints on SIGTERM), found before the driver goes (its orphans would be lost from view)
            spared = set(live) | set(descendants(list(live)))  # the runs and what they run (stopped by decide())
            for pid in drivers + [p for p in descendants(drivers) if p not in spared]:
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass
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

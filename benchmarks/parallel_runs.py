"""Experiment throughput on this machine: one `cooper rl` run at a time with the default torch threads (how
experiments/reward_hacking/run.sh ran its first runs) vs JOBS runs side by side with one thread each.

  python benchmarks/parallel_runs.py [--rounds 2] [--steps 8] [--jobs 2] [--rm runs/verifyrm-weak]

Each configuration runs the issue-15 experiment's settings (configs/rl_cpu_small.yaml, the SFT warm-started policy,
fp32, a static SmolLM2 VerifyRM) for --steps optimizer steps plus the step-0 evaluation on a small held-out set;
the configurations alternate inside one run (solo, side, solo, side, ...). The side-by-side runs share the seed,
so they do the same work and stay in step. Per run: the sum of its step seconds (timing.jsonl) and its
evaluation seconds (evals.jsonl). Throughput of a configuration = runs x steps / the slowest run's seconds;
headline: side/solo throughput ratio, median over rounds, for training steps and for the evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402

ROOT = Path(__file__).parent.parent
FP32 = ["--bf16_autocast", "false", "--rollout_bf16_weights", "false", "--rm_bf16_autocast", "false"]


def launch(out: Path, args, threads: int | None) -> subprocess.Popen:
    """Start one `cooper rl` run into out (fresh dir), with `threads` torch threads (None: torch's default)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cmd = [
        str(ROOT / ".venv/bin/cooper"), "rl", "--config", "configs/rl_cpu_small.yaml", "--policy", args.policy,
        "--datasets", "builtin:train:2000:1,2", "experiments/verifyrm/data/svamp_rm_train.jsonl",
        "--max_steps", str(args.steps), "--save_steps", "1000", "--eval_steps", "1000",
        "--eval_datasets", f"builtin:test:{args.eval_problems}:1,2", "--eval_k", "4",
        "--data_seed", "1000", "--learning_rate", "1e-5", "--reward", "model", "--rm", args.rm,
        "--seed", "0", "--output_dir", str(out), *FP32,
    ]  # fmt: skip
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if threads is not None:
        env |= {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    log = open(f"{out}.log", "w")
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def measure(out: Path) -> dict:
    """The finished run's step seconds (sum over steps) and step-0 evaluation seconds."""
    steps = [json.loads(x) for x in (out / "timing.jsonl").read_text().splitlines()]
    ev = json.loads((out / "evals.jsonl").read_text().splitlines()[0])
    return {
        "step_seconds": sum(s["step_seconds"] for s in steps),
        "steps": len(steps),
        "eval_seconds": ev["eval_seconds"],
        "completion_tokens": sum(s.get("completion_tokens", 0) for s in steps),
    }


def run_config(name: str, jobs: int, threads: int | None, work: Path, args) -> dict:
    """Run `jobs` runs side by side; throughput of steps and evaluations."""
    t = time.time()
    procs = [launch(work / f"{name}-{j}", args, threads) for j in range(jobs)]
    for j, p in enumerate(procs):
        if p.wait() != 0:
            for q in procs:  # not left running unsupervised
                q.terminate()
            raise SystemExit(f"{work / f'{name}-{j}'} failed (rc {p.returncode}), see {work / f'{name}-{j}'}.log")
    runs = [measure(work / f"{name}-{j}") for j in range(jobs)]
    res = {
        "jobs": jobs,
        "threads": threads,
        "runs": runs,
        "wall_seconds": time.time() - t,
        "steps_per_hour": jobs * args.steps / max(r["step_seconds"] for r in runs) * 3600,
        "evals_per_hour": jobs / max(r["eval_seconds"] for r in runs) * 3600,
    }
    print(
        f"{name}: {res['steps_per_hour']:.0f} steps/h, {res['evals_per_hour']:.1f} evals/h "
        f"({res['wall_seconds']:.0f} s wall)",
        flush=True,
    )
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8, help="optimizer steps per run (4 per generation batch)")
    ap.add_argument("--jobs", type=int, default=2, help="runs side by side, one torch thread each")
    ap.add_argument("--eval_problems", type=int, default=16, help="built-in test problems x 4 samples at step 0")
    ap.add_argument("--policy", default="runs/sft-builtin100/policy", help="the experiment's warm-started policy")
    ap.add_argument(
        "--rm", default="runs/verifyrm-weak", help="a SmolLM2 VerifyRM (experiments/reward_hacking/weak_rm.sh)"
    )
    ap.add_argument("--work", default="benchmarks/results/parallel_runs")
    ap.add_argument("--name", default="parallel_runs")
    args = ap.parse_args()
    for p, hint in (
        (args.policy, "experiments/reward_hacking/run.sh"),
        (args.rm, "experiments/reward_hacking/weak_rm.sh"),
    ):
        if not (ROOT / p).exists():
            raise SystemExit(f"{p} missing: {hint} builds it")
    work = ROOT / args.work
    solo, side = [], []
    for r in range(args.rounds):
        solo.append(run_config(f"round{r}-solo", 1, None, work, args))
        side.append(run_config(f"round{r}-side", args.jobs, 1, work, args))
    result = {
        "settings": vars(args),
        "solo": solo,
        "side_by_side": side,
        "steps_ratio_by_round": [b["steps_per_hour"] / a["steps_per_hour"] for a, b in zip(solo, side)],
        "eval_ratio_by_round": [b["evals_per_hour"] / a["evals_per_hour"] for a, b in zip(solo, side)],
    }
    result["steps_ratio"] = median(result["steps_ratio_by_round"])
    result["eval_ratio"] = median(result["eval_ratio_by_round"])
    print(f"side by side / solo: steps {result['steps_ratio']:.2f}x, evaluation {result['eval_ratio']:.2f}x")
    write_result(args.name, result)


if __name__ == "__main__":
    main()

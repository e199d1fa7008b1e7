"""Rollouts per hour of two `cooper rl` presets on this machine, side by side (issue 67 §7: the new CPU preset against
issue 15's).

  python benchmarks/presets.py CONFIG_A CONFIG_B [--rollouts 320] [--rounds 2] [--policy runs/sft-builtin100/policy]
                               [--datasets builtin:train:200:1,2] [--output presets]

Each round starts one `cooper rl` per preset at once (one torch thread each: the two cores of the experiments' two
jobs), rule reward, fp32, the same built-in prompts and seed, --rollouts rollouts each (max_steps = rollouts /
(prompts_per_step x num_generations)); gradient_accumulation_steps as the preset says. Per run: the seconds of its
training steps (timing.jsonl) after its first generation batch (warm-up: lazy imports, first allocations), per 1,000
rollouts. Headline: B / A ratio of rollouts per hour, median over rounds. The presets swap their order each round.
Writes benchmarks/results/OUTPUT.json (presets.json).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402
from pinning import env_of  # noqa: E402

ROOT = Path(__file__).parent.parent


def seconds_per_1k(out: Path, cfg: dict) -> tuple[float, int]:
    """(seconds per 1,000 rollouts after the first generation batch, rollouts counted) of a finished run."""
    spg = cfg.get("steps_per_generation", 1) or 1
    rows = [json.loads(x) for x in (out / "timing.jsonl").read_text().splitlines()][spg:]
    n = len(rows) * cfg["prompts_per_step"] * cfg["num_generations"]
    return 1000 * sum(r["step_seconds"] for r in rows) / n, n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs=2, help="two cooper rl YAML configs: A (the reference) and B")
    ap.add_argument("--rollouts", type=int, default=320, help="rollouts per run (a multiple of both presets' steps)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--policy", default="runs/sft-builtin100/policy")
    ap.add_argument("--datasets", nargs="+", default=["builtin:train:200:1,2"], help="the runs' training prompts")
    ap.add_argument("--output", default="presets", help="the result's name under benchmarks/results/")
    args = ap.parse_args()
    if len(set(args.configs)) != 2:
        sys.exit("two different configs, please")
    cfgs = [yaml.safe_load((ROOT / c).read_text()) for c in args.configs]
    for c, cfg in zip(args.configs, cfgs):
        per_step = cfg["prompts_per_step"] * cfg["num_generations"] * (cfg.get("steps_per_generation", 1) or 1)
        if args.rollouts % per_step or args.rollouts // per_step < 2:
            sys.exit(f"--rollouts {args.rollouts} is not >= 2 generation batches of {c} ({per_step} rollouts each)")
    env = env_of("native")  # one torch thread, this CPU's own kernels
    work = ROOT / "runs" / "bench_presets"
    work.mkdir(parents=True, exist_ok=True)
    cooper = str(ROOT / ".venv" / "bin" / "cooper")
    per = {c: [] for c in args.configs}
    for r in range(args.rounds):
        procs = []
        order = list(zip(args.configs, cfgs))[:: 1 if r % 2 == 0 else -1]
        for c, cfg in order:
            out = work / f"{Path(c).stem}-{r}"
            shutil.rmtree(out, ignore_errors=True)
            steps = args.rollouts // (cfg["prompts_per_step"] * cfg["num_generations"])
            cmd = [cooper, "rl", "--config", c, "--reward", "rule", "--policy", args.policy, "--output_dir", str(out)]
            cmd += ["--datasets", *args.datasets, "--data_seed", "1000", "--seed", "0"]
            cmd += [
                "--max_steps",
                str(steps),
                "--save_steps",
                "100000",
                "--report_to",
                "none",
                "--log_rollouts",
                "false",
            ]
            cmd += ["--bf16_autocast", "false", "--rollout_bf16_weights", "false", "--rm_bf16_autocast", "false"]
            log = open(work / f"{Path(c).stem}-{r}.log", "w")
            procs.append((c, cfg, out, subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)))
        for c, cfg, out, p in procs:
            if p.wait():
                sys.exit(f"{c} round {r} failed: see {work}")
            s, n = seconds_per_1k(out, cfg)
            per[c].append(s)
            print(f"{c} round {r}: {s:.0f} s per 1,000 rollouts ({n} timed)", flush=True)
    med = {c: median(v) for c, v in per.items()}
    a, b = args.configs
    result = {
        "what": "cooper rl rule-reward steps, fp32, two presets side by side (one torch thread each), seconds of the "
        "training steps after the first generation batch per 1,000 rollouts",
        "configs": {c: cfg for c, cfg in zip(args.configs, cfgs)},
        "rollouts_per_run": args.rollouts,
        "datasets": args.datasets,
        "rounds": args.rounds,
        "seconds_per_1k_rollouts": per,
        "median_seconds_per_1k_rollouts": med,
        "rollouts_per_hour": {c: 3.6e6 / m for c, m in med.items()},
        "b_over_a_rollouts_per_hour": med[a] / med[b],
    }
    write_result(args.output, result)
    print(json.dumps({"rollouts_per_hour": result["rollouts_per_hour"], "B/A": result["b_over_a_rollouts_per_hour"]}))


if __name__ == "__main__":
    main()

"""What bit-identity across machines costs: `cooper rl` steps with the experiments' pinned kernels vs native ones.

  python benchmarks/pinning.py [--rounds 2] [--steps 3] [--policy runs/sft-builtin100/policy]

The experiment scripts pin torch's CPU kernels to AVX2 (ATEN_CPU_CAPABILITY=avx2) and, on Intel CPUs, MKL to its
non-Intel path (experiments/mkl_non_intel.c preloaded), so that fp32 runs come out bit-identical on AMD and Intel
machines. On a CPU with AVX-512/AMX that leaves its wider kernels unused. Each round starts one `cooper rl` per
variant side by side (one torch thread each, as the experiments run two jobs on two cores; fp32 both), on the
rule reward at 8 prompts x G=8 per optimizer step (4 micro-batches of 16), and reads the step times from timing.jsonl; the first step
(warm-up) is dropped. Headline: native / pinned ratio of median step seconds (and of generation and update).
Writes benchmarks/results/pinning.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402

ROOT = Path(__file__).parent.parent


def env_of(variant: str) -> dict:
    """The process environment of a variant: pinned as experiments/common.sh sets it, or native."""
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "LD_PRELOAD")}
    env |= {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if variant == "pinned":
        env["ATEN_CPU_CAPABILITY"] = "avx2"
        if "GenuineIntel" in Path("/proc/cpuinfo").read_text():
            shim = ROOT / ".venv" / "mkl_non_intel.so"
            if not shim.is_file():
                subprocess.run(
                    ["gcc", "-shared", "-fPIC", "-O2", "-o", str(shim), str(ROOT / "experiments/mkl_non_intel.c")],
                    check=True,
                )
            env["LD_PRELOAD"] = str(shim)
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--policy", default="runs/sft-builtin100/policy")
    args = ap.parse_args()
    work = ROOT / "runs" / "bench_pinning"
    cooper = str(ROOT / ".venv" / "bin" / "cooper")
    flags = ["--config", "configs/rl_cpu_small.yaml", "--reward", "rule", "--policy", args.policy]
    flags += ["--datasets", "builtin:train:200:1,2", "--data_seed", "1000", "--prompts_per_step", "8"]
    flags += ["--num_generations", "8", "--steps_per_generation", "1", "--max_steps", str(args.steps)]
    flags += ["--gradient_accumulation_steps", "4"]  # 64 sequences in one backward: ~13 GB per process
    flags += ["--learning_rate", "1e-5", "--save_steps", "1000", "--report_to", "none", "--log_rollouts", "false"]
    flags += ["--bf16_autocast", "false", "--rollout_bf16_weights", "false", "--rm_bf16_autocast", "false"]
    per = {"pinned": [], "native": []}
    work.mkdir(parents=True, exist_ok=True)
    for r in range(args.rounds):
        procs = {}
        for v in per:
            out = work / f"{v}-{r}"
            shutil.rmtree(out, ignore_errors=True)
            log = open(work / f"{v}-{r}.log", "w")
            procs[v] = (out, subprocess.Popen([cooper, "rl", *flags, "--output_dir", str(out)], env=env_of(v),
                                              cwd=ROOT, stdout=log, stderr=subprocess.STDOUT))  # fmt: skip
        for v, (out, p) in procs.items():
            if p.wait():
                sys.exit(f"{v} round {r} failed: see {work}/{v}-{r}.log")
            rows = [json.loads(x) for x in (out / "timing.jsonl").read_text().splitlines()][1:]  # step 1: warm-up
            per[v] += rows
            print(v, r, [round(x["step_seconds"], 1) for x in rows], flush=True)
    keys = ("step_seconds", "generation", "policy_update")
    med = {v: {k: median([x.get(k, 0.0) for x in rows]) for k in keys} for v, rows in per.items()}
    result = {
        "what": "cooper rl fp32 rule-reward steps (8 prompts x G=8), pinned (AVX2 torch kernels, MKL non-Intel path) "
        "vs native kernels, side by side, one torch thread each",
        "steps_per_run": args.steps,
        "rounds": args.rounds,
        "median_seconds": med,
        "native_over_pinned": {k: med["native"][k] / med["pinned"][k] for k in keys if med["pinned"][k]},
        "per_step": per,
    }
    write_result("pinning", result)
    print(json.dumps(result["native_over_pinned"], indent=1))


if __name__ == "__main__":
    main()

"""Rollouts per hour of `cooper rl` on the small-batch CPU preset: today's settings vs the faster ones, alternated in one run.

  python benchmarks/throughput.py [--rounds 2] [--config configs/rl_cpu_small.yaml] [--reward cooper]

A variant is a name and extra `cooper rl` flags on top of --config (the preset as it was before this
benchmark, fp32 everywhere, is `old`). Each round runs every variant once (fresh process, same seed; the order
rotates between rounds) for enough optimizer steps to cover --generations generation batches; the first
generation batch (model warm-up) is dropped. Rollouts per hour = rollouts trained on / wall seconds of the kept
steps (timing.jsonl, the trainer's own step clock: model loading and process start are excluded for all
variants alike). Every variant trains on prompts_per_step x G rollouts per optimizer step.
Writes benchmarks/results/throughput.json (merged with what bound.py measured, if present).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from common import RESULTS, median, write_result  # noqa: E402
from cooper_rl.io import atomic_write_json  # noqa: E402

ROOT = Path(__file__).parent.parent
# every variant sets every throughput option, so the preset's own values never leak into a variant
NO_COPY = "--rollout_bf16_weights false --rm_bf16_autocast false"
COMPACT = f"--bf16_autocast true --rollout_autocast true {NO_COPY} --steps_per_generation 4 --compact_lm_head true"
FAST = (
    "--bf16_autocast auto --rollout_autocast false --rollout_bf16_weights auto --rm_bf16_autocast auto "
    "--steps_per_generation 4 --compact_lm_head true"
)
VARIANTS = {
    # the paper's on-policy fp32 step, as configs/rl_cpu_small.yaml was before this benchmark
    "old": f"--bf16_autocast false --rollout_autocast false {NO_COPY} --steps_per_generation 1 --compact_lm_head false",
    "bf16": f"--bf16_autocast true --rollout_autocast true {NO_COPY} --steps_per_generation 1 --compact_lm_head false",
    "shared": f"--bf16_autocast true --rollout_autocast true {NO_COPY} --steps_per_generation 4 --compact_lm_head false",
    "compact": COMPACT,
    "new": FAST,  # = configs/rl_cpu_small.yaml (bf16 where native; fp32 hosts: old log-probs from the sampler)
    "new_forward": f"{FAST} --sampler_logprobs false",  # the same, old log-probs from TRL's second forward
    "prev": f"{FAST} --sampler_logprobs false --trim_padding false",  # the preset before those two exact savings
    "new8": FAST.replace("--steps_per_generation 4", "--steps_per_generation 8"),
}


def run(name: str, flags: str, out: Path, args) -> dict:
    """One `cooper rl` run of a variant (with --from_runs: the one already in `out`); its summary."""
    if "--steps_per_generation" in flags:
        spg = int(flags.split("--steps_per_generation")[1].split()[0])
    else:  # the preset's value (the dataclass default is 1)
        spg = int((yaml.safe_load((ROOT / args.config).read_text()) or {}).get("steps_per_generation", 1))
    steps = spg * (args.generations + 1)
    cmd = [str(ROOT / ".venv/bin/cooper"), "rl", "--config", args.config, "--reward", args.reward, "--rm", args.rm]
    cmd += ["--max_steps", str(steps), "--save_steps", "100000", "--eval_steps", "0", "--output_dir", str(out)]
    cmd += flags.split()
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    stamp = {"cmd": cmd, "commit": head}  # what a finished run must match to be reused
    stamp_file = out / "bench_run.json"
    finished = (out / "rl_summary.json").is_file() and stamp_file.is_file()
    finished = finished and json.loads(stamp_file.read_text()) == stamp
    if finished and not args.from_runs:
        print(f"[bench] {out}: finished earlier with this command and commit, reused", flush=True)
    if not args.from_runs and not finished:  # a killed or stale run (other flags or code) is run again
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out.parent / f"{out.name}.log", "w") as f:
            subprocess.run(cmd, check=True, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
        atomic_write_json(stamp_file, stamp)
    recs = [json.loads(x) for x in (out / "timing.jsonl").read_text().splitlines()][spg:]  # drop warm-up batch
    cfg = json.loads((out / "rl_config.json").read_text())  # the resolved settings ('auto' -> what ran)
    per_step = cfg["prompts_per_step"] * cfg["num_generations"]
    dtype = (
        "bf16_weights" if cfg.get("rollout_bf16_weights") else ("bf16_autocast" if cfg["rollout_autocast"] else "fp32")
    )
    for d in ["policy", "rm", *(p.name for p in out.glob("checkpoint-*"))]:  # GBs each: the numbers are read
        shutil.rmtree(out / d, ignore_errors=True)
    seconds = sum(x["step_seconds"] for x in recs)
    return {
        "steps": len(recs),
        "rollouts": per_step * len(recs),
        "seconds": seconds,
        "rollouts_per_hour": per_step * len(recs) / seconds * 3600,
        "phase_seconds_per_step": {
            p: sum(x.get(p, 0.0) for x in recs) / len(recs)
            for p in ("generation", "old_logprobs", "ref_logprobs", "reward", "policy_update", "other")
        },
        "completion_tokens_per_rollout": sum(x["completion_tokens"] for x in recs) / (per_step * len(recs)),
        "decode_tokens_per_s": sum(x["completion_tokens"] for x in recs) / sum(x["generation"] for x in recs),
        "prompt_tokens_per_rollout": sum(x["prompt_tokens"] for x in recs) / (per_step * len(recs)),
        "rollout_dtype": dtype,
        "bf16_autocast": cfg["bf16_autocast"],
        "generation_batch": per_step * cfg["steps_per_generation"],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--generations", type=int, default=3, help="generation batches measured per run (after warm-up)")
    ap.add_argument("--config", default="configs/rl_cpu_small.yaml")
    ap.add_argument("--reward", default="cooper")
    ap.add_argument("--rm", default="minilm-l6")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--work", default="benchmarks/results/throughput_runs")
    ap.add_argument("--from_runs", action="store_true", help="summarize the runs already in --work, run nothing")
    ap.add_argument("--name", default="throughput", help="results/NAME.json")
    ap.add_argument("--bound", default="bound", help="results/NAME.json of bound.py on this kind of machine")
    args = ap.parse_args()
    runs = {v: [] for v in args.variants}
    for r in range(args.rounds):
        order = args.variants[r % len(args.variants) :] + args.variants[: r % len(args.variants)]
        for v in order:
            t = time.time()
            res = run(v, VARIANTS[v], Path(args.work) / f"round{r}-{v}", args)
            runs[v].append(res)
            print(
                f"round {r} {v}: {res['rollouts_per_hour']:.0f} rollouts/h ({time.time() - t:.0f} s wall)", flush=True
            )

    def speedup(v: str) -> float:
        """Median over rounds of (rollouts/h of v) / (rollouts/h of old), same round."""
        return median([a["rollouts_per_hour"] / b["rollouts_per_hour"] for a, b in zip(runs[v], runs["old"])])

    per_variant = {
        v: {
            "flags": VARIANTS[v],
            "rollouts_per_hour_median": median([x["rollouts_per_hour"] for x in rs]),
            "speedup_vs_old": speedup(v),
            "runs": rs,
        }
        for v, rs in runs.items()
    }
    result = {
        "config": args.config,
        "reward": args.reward,
        "rm": args.rm,
        "rounds": args.rounds,
        "variants": per_variant,
        "rollouts_per_hour_old": per_variant["old"]["rollouts_per_hour_median"],
        "rollouts_per_hour_new": per_variant["new"]["rollouts_per_hour_median"],
        "rollouts_per_hour_speedup": per_variant["new"]["speedup_vs_old"],
    }
    result["variants_alternated"] = args.variants
    result["decode_tokens_per_s_old"] = median([x["decode_tokens_per_s"] for x in runs["old"]])
    result["decode_tokens_per_s_new"] = median([x["decode_tokens_per_s"] for x in runs["new"]])
    bound = RESULTS / f"{args.bound}.json"
    if bound.is_file():  # bounds at each setting's decode batch and number format (bound.py's model of a step)
        from bound import decode_bound

        b = json.loads(bound.read_text())
        new = runs["new"][0]
        prompt, gen = round(new["prompt_tokens_per_rollout"]), round(new["completion_tokens_per_rollout"])
        bf16 = new["rollout_dtype"] != "fp32"
        shape = b["model"]
        if bf16:  # bf16 weights and KV cache move half the bytes
            shape = {
                **shape,
                "weight_bytes": shape["weight_bytes"] / 2,
                "kv_bytes_per_token": shape["kv_bytes_per_token"] / 2,
            }
        peak = b["matmul_peak_gflops"]["bf16" if bf16 else "fp32"]
        old_b = decode_bound(b["model"], 8, prompt, gen, b["bandwidth_gbs"], b["matmul_peak_gflops"]["fp32"])
        new_b = decode_bound(shape, new["generation_batch"], prompt, gen, b["bandwidth_gbs"], peak)
        result["bound_source"] = (
            f"{args.bound}.json ({b['machine']['date']}, bf16 native: {b['machine'].get('bf16_native')})"
        )
        result["decode_bound_tokens_per_s_old"] = old_b["tokens_per_s"]  # fp32, batch 8
        result["decode_bound_tokens_per_s"] = new_b["tokens_per_s"]  # the new setting's dtype and batch
        result["decode_fraction_of_bound_old"] = result["decode_tokens_per_s_old"] / old_b["tokens_per_s"]
        result["decode_fraction_of_bound"] = result["decode_tokens_per_s_new"] / new_b["tokens_per_s"]
    print(json.dumps({k: v for k, v in result.items() if k != "variants"}, indent=1))
    write_result(args.name, result)


if __name__ == "__main__":
    main()

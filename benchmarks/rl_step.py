"""RL step time and its breakdown for rule / model / cooper on the small-batch CPU preset, alternated in one run,
plus the FLOP/s the policy update and generation achieve against the machine's fp32 matmul peak.

  python benchmarks/rl_step.py [--rounds 3] [--steps 6] [--rm minilm-l6] [--config configs/rl_cpu_small.yaml]
                               [--modes rule model cooper rule+bf16]

A mode is a reward (rule, model, cooper), optionally with `+bf16`: the same run with `--bf16_autocast true`
(fp32 weights, bf16 autocast log-prob forwards and backward, fp32 generation); its ratio to the plain mode
is reported as the before/after of that fix.
Each round runs `cooper rl` once per mode (fresh process, same seed, same preset; the order rotates between
rounds), for --steps steps; the first step of each run is warm-up and dropped. Per-phase seconds come from
timing.jsonl (cooper_rl.rl.callbacks). Headline: cooper/rule step-time ratio = median over rounds of the ratio of
that round's median step times (target <= 1.05 with the corrupt negatives).

FLOPs: a decoder forward costs ~2 N tokens (N = non-embedding parameters), forward+backward ~6 N tokens.
generation       2 N (prompt + completion tokens, real)            / generation seconds
policy update    6 N (padded tokens: the batch as it is computed)  / policy_update seconds
Peak: median of 2048x2048 fp32 matmuls (2 n^3 FLOPs each), same thread count.
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

from cooper_rl.rl.callbacks import PHASES as STEP_PHASES
from cooper_rl.rl.callbacks import REWARD_PHASES

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402

ROOT = Path(__file__).parent.parent

PHASES = (*STEP_PHASES, *(f"reward/{p}" for p in REWARD_PHASES))


def matmul_peak(n: int = 2048, repeats: int = 10) -> float:
    """Median fp32 GFLOP/s of an n x n matmul on this process's threads."""
    import torch

    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        ts.append(time.perf_counter() - t)
    return 2 * n**3 / median(ts) / 1e9


def non_embedding_params(policy: str) -> int:
    """Parameters of the policy minus its token embeddings (tied LM head counted once, as a matmul)."""
    from transformers import AutoConfig

    from cooper_rl.models import resolve_model

    cfg = AutoConfig.from_pretrained(resolve_model(policy))
    h, i, layers = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    kv = h // cfg.num_attention_heads * cfg.num_key_value_heads
    per_layer = h * h * 2 + h * kv * 2 + 3 * h * i  # q,o + k,v + gate,up,down
    return layers * per_layer + h * cfg.vocab_size  # + the LM head projection


def run_mode(mode: str, out: Path, args) -> list[dict]:
    """Run `cooper rl` for one mode (reward[+bf16]); return its timing records without the warm-up step."""
    if out.exists():
        shutil.rmtree(out)
    reward, _, variant = mode.partition("+")
    cmd = [
        str(ROOT / ".venv/bin/cooper"),
        "rl",
        "--config",
        args.config,
        "--reward",
        reward,
        "--rm",
        args.rm,
        "--max_steps",
        str(args.steps),
        "--save_steps",
        "100000",
        "--output_dir",
        str(out),
        "--eval_steps",
        "0",
        # the fp32 on-policy step this benchmark was defined on (configs/rl_cpu_small.yaml now holds faster settings:
        # benchmarks/throughput.py measures those); +bf16 adds bf16 autocast for log-probs and backward
        "--rollout_autocast",
        "false",
        "--rollout_bf16_weights",
        "false",
        "--rm_bf16_autocast",
        "false",
        "--steps_per_generation",
        "1",
        "--bf16_autocast",
        "true" if variant == "bf16" else "false",
    ]
    log = out.parent / f"{out.name}.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:
        subprocess.run(cmd, check=True, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
    recs = [json.loads(x) for x in (out / "timing.jsonl").read_text().splitlines()]
    for d in ("policy", "rm"):  # weights are not needed (and large)
        shutil.rmtree(out / d, ignore_errors=True)
    return recs[1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rm", default="minilm-l6", help="RM for model/cooper (a trained VerifyRM dir or a backbone).")
    ap.add_argument("--config", default="configs/rl_cpu_small.yaml")
    ap.add_argument("--work", default="benchmarks/results/rl_step_runs")
    ap.add_argument("--name", default="rl_step")
    ap.add_argument(
        "--modes",
        nargs="+",
        default=["rule", "model", "cooper"],
        help="rewards to alternate; REWARD+bf16 adds the same run with --bf16_autocast true",
    )
    args = ap.parse_args()
    modes = args.modes
    if "rule" not in modes:
        raise SystemExit("--modes must include rule (the baseline of the ratios)")
    runs = {m: [] for m in modes}
    for r in range(args.rounds):
        order = modes[r % len(modes) :] + modes[: r % len(modes)]
        for m in order:
            t = time.time()
            recs = run_mode(m, Path(args.work) / f"round{r}-{m}", args)
            runs[m].append(recs)
            print(
                f"round {r} {m}: median step {median([x['step_seconds'] for x in recs]):.2f} s "
                f"({time.time() - t:.0f} s wall)",
                flush=True,
            )

    per_mode = {}
    for m in modes:
        recs = [x for run in runs[m] for x in run]
        per_mode[m] = {
            "n_steps": len(recs),
            "step_seconds_median": median([x["step_seconds"] for x in recs]),
            **{f"{p}_median": median([x.get(p, 0.0) for x in recs]) for p in PHASES},
            "completion_tokens_median": median([x["completion_tokens"] for x in recs]),
        }

    def ratio(a: str, b: str, key=lambda x: x["step_seconds"]) -> float:
        """Median over rounds of (median step of mode a) / (median step of mode b), same round."""
        return median([median([key(x) for x in ra]) / median([key(x) for x in rb]) for ra, rb in zip(runs[a], runs[b])])

    others = [m for m in modes if m != "rule"]
    ratios = {m: ratio(m, "rule") for m in others}
    # per generated token too: step time varies with how long the sampled completions are
    per_tok = {m: ratio(m, "rule", lambda x: x["step_seconds"] / max(1, x["completion_tokens"])) for m in others}
    fixes = {
        m: {
            p: ratio(m.partition("+")[0], m, lambda x, p=p: x[p])
            for p in ("step_seconds", "generation", "ref_logprobs", "policy_update")
        }
        for m in modes
        if "+" in m and m.partition("+")[0] in modes
    }  # speed-up = before / after

    import torch

    n = non_embedding_params("smollm2-135m-instruct")
    peak = matmul_peak()
    all_recs = [x for m in modes if "+" not in m for run in runs[m] for x in run]  # fp32 runs only
    gen_flops = (
        median([2 * n * (x["prompt_tokens"] + x["completion_tokens"]) / x["generation"] for x in all_recs]) / 1e9
    )
    upd_flops = median([6 * n * x["padded_tokens"] / x["policy_update"] for x in all_recs]) / 1e9
    result = {
        "config": args.config,
        "rm": args.rm,
        "rounds": args.rounds,
        "steps_per_run": args.steps,
        "warmup_steps_dropped": 1,
        "omp_threads": os.environ.get("OMP_NUM_THREADS"),
        "torch_threads": torch.get_num_threads(),
        "per_mode": per_mode,
        "ratio_vs_rule": ratios,
        "ratio_vs_rule_per_completion_token": per_tok,
        "speedup_of_variant": fixes,
        "flops": {
            "policy_non_embedding_params": n,
            "matmul_peak_gflops": peak,
            "generation_gflops": gen_flops,
            "generation_utilisation": gen_flops / peak,
            "policy_update_gflops": upd_flops,
            "policy_update_utilisation": upd_flops / peak,
        },
        "raw": runs,
    }
    if "cooper" in ratios:
        result["targets"] = {"cooper/rule <= 1.05": {"measured": ratios["cooper"], "met": ratios["cooper"] <= 1.05}}
    print(json.dumps({k: v for k, v in result.items() if k != "raw"}, indent=1))
    write_result(args.name, result)


if __name__ == "__main__":
    main()

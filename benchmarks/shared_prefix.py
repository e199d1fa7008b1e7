"""Shared-prefix GRPO (issue 105): `cooper rl` with each group's prompt computed once vs every row's own, per stage,
side by side in one run, on configs/rl_cpu.yaml and at other group sizes and prompt lengths.

  python benchmarks/shared_prefix.py [--rounds 2] [--steps 3] [--settings rl_cpu G4 G16 fewshot micro32]
      [--allocator default|kept] [--baseline_allocator default|kept] [--name shared_prefix]

Every setting runs both variants (`--shared_prefix false`: TRL's forward of every row with the padding trimmed, the
path before this option; `true`: the default) as fresh processes from the same seed, alternating their order between
rounds, on the regime's warm-up policy (runs/sft-builtin100, experiments/rl_learns/run.py builds it) and filtered
prompts, rule reward (the stages measured do not depend on the reward). The first step (model warm-up) is dropped.
Per stage: seconds per optimizer step from timing.jsonl (generation incl. its prefill, reference log-probs, policy
update = the loss's forwards and backward), medians over the kept steps and rounds; the speed-up is the median over
rounds of the same-round ratios. Beside the times, the cost model: positions the log-prob forwards compute
(rl_summary's shared_prefix or padding_trimmer positions: [computed, TRL's padded batches]), the prefills shared, and
peak RSS. Writes benchmarks/results/NAME.json; `--cost_model --name NAME` prints a committed result's positions per
stage beside its time ratios (runs nothing).

The allocator: `--keep_freed_memory` of the shared runs (``--allocator``) and of the unshared ones
(``--baseline_allocator``), glibc's defaults for both unless asked (as the committed shared_prefix.json ran, before
that option existed); `--allocator kept --baseline_allocator default` compares the preset as it is now with the
preset before issue 105.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402
from cooper_rl.io import atomic_write_json  # noqa: E402

ROOT = Path(__file__).parent.parent
POLICY = "runs/sft-builtin100/policy"
PROMPTS = "experiments/rl_learns/data/train_filtered.jsonl"
FEWSHOT = (  # three worked examples before the question: a prompt ~4x as long as the regime's
    "Solve the problem. Examples:\n"
    "Q: Tom has 3 apples and buys 4 more. How many apples does he have? A: 3 + 4 = 7. The answer is \\boxed{{7}}.\n"
    "Q: A box holds 6 eggs. How many eggs are in 5 boxes? A: 6 * 5 = 30. The answer is \\boxed{{30}}.\n"
    "Q: Mia had 20 stickers and gave away 8. How many are left? A: 20 - 8 = 12. The answer is \\boxed{{12}}.\n"
    "Q: {question} A:"
)
SETTINGS = {  # flags on top of configs/rl_cpu.yaml; every setting trains on 64 rollouts per step
    # the loss in 4 micro-batches of 16 rows (the preset's before issue 105, as these settings were measured)
    "rl_cpu": ["--gradient_accumulation_steps", "4"],
    "G4": ["--gradient_accumulation_steps", "4", "--num_generations", "4", "--prompts_per_step", "16"],
    "G16": ["--gradient_accumulation_steps", "4", "--num_generations", "16", "--prompts_per_step", "4"],
    "fewshot": ["--gradient_accumulation_steps", "4", "--prompt_template", FEWSHOT],
    "micro32": ["--gradient_accumulation_steps", "2"],  # 2 micro-batches of 32 rows (4 groups): the preset now
}
TRACE_METRICS = ("reward_mean", "rule_accuracy", "completion_length")  # metrics.jsonl
TRACE_LOGS = ("loss", "kl", "entropy", "grad_norm")  # trainer_log.jsonl
STAGES = ("generation", "ref_logprobs", "old_logprobs", "policy_update", "step_seconds")


def trainer_history(out: Path) -> list[dict]:
    """TRL's per-step log (loss, KL, entropy, grad norm) from the run's last checkpoint, kept in out/ once read (the
    checkpoints are deleted after)."""
    kept = out / "trainer_history.json"
    if not kept.is_file():
        from cooper_rl.trainer_hooks import resolve_checkpoint  # the newest complete checkpoint

        ckpt = Path(resolve_checkpoint(out, "last"))
        history = json.loads((ckpt / "trainer_state.json").read_text())["log_history"]
        atomic_write_json(kept, history)
    return json.loads(kept.read_text())


ALLOCATOR = {"default": "false", "kept": "true"}  # --keep_freed_memory


def run(setting: str, shared: bool, out: Path, args) -> dict:
    """One `cooper rl` process; its per-stage seconds per kept step, positions computed and peak memory."""
    cmd = [str(ROOT / ".venv/bin/cooper"), "rl", "--config", "configs/rl_cpu.yaml", "--reward", "rule"]
    cmd += [
        "--policy",
        args.policy,
        "--datasets",
        PROMPTS,
        "--max_steps",
        str(args.steps + 1),
        "--save_steps",
        "100000",
    ]
    cmd += ["--eval_steps", "0", "--output_dir", str(out), "--shared_prefix", str(shared).lower(), *SETTINGS[setting]]
    cmd += ["--keep_freed_memory", ALLOCATOR[args.allocator if shared else args.baseline_allocator]]
    if not (out / "rl_summary.json").is_file():  # a finished run (a killed benchmark's) is not run again
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out.parent / f"{out.name}.log", "w") as f:
            subprocess.run(cmd, check=True, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
    recs = [json.loads(x) for x in (out / "timing.jsonl").read_text().splitlines()][1:]  # drop the warm-up step
    summary = json.loads((out / "rl_summary.json").read_text())
    cfg = json.loads((out / "rl_config.json").read_text())
    per_step = cfg["prompts_per_step"] * cfg["num_generations"]
    seconds = sum(r["step_seconds"] for r in recs)
    res = {
        "steps": len(recs),
        "per_stage_seconds": {s: median([r.get(s, 0.0) for r in recs]) for s in STAGES},
        "rollouts_per_hour": per_step * len(recs) / seconds * 3600,
        "peak_rss_gb": max(r.get("peak_rss_gb", 0.0) for r in recs),
        "prompt_tokens_per_step": median([r["prompt_tokens"] for r in recs]),
        "completion_tokens_per_step": median([r["completion_tokens"] for r in recs]),
        "padded_tokens_per_step": median([r["padded_tokens"] for r in recs]),
        # the cost model: positions the log-prob forwards computed, and what TRL's padded batches would have
        "positions": (summary.get("shared_prefix") or summary.get("padding_trimmer") or {}).get("positions"),
        "shared_prefix": summary.get("shared_prefix"),
        "shared_prefill": summary.get("shared_prefill"),
    }
    # the run step by step (warm-up step included): the same seed with and without sharing should agree within
    # float noise while the sampled tokens agree (issue 105's table)
    logs = {h["step"]: h for h in trainer_history(out) if "loss" in h}
    res["trace"] = [
        {"step": m["step"], **{k: m.get(k) for k in TRACE_METRICS}, **{k: logs.get(m["step"], {}).get(k) for k in TRACE_LOGS}}
        for m in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
    ]  # fmt: skip
    for d in ["policy", *(p.name for p in out.glob("checkpoint-*"))]:
        shutil.rmtree(out / d, ignore_errors=True)
    return res


def cost_model(result: dict) -> dict:
    """Per setting of a committed result: positions computed per optimizer step, by stage, without and with sharing
    (the first round's runs), beside the measured time ratios. Prefill: the rows' prompt tokens, or one prompt per
    group (G = the shared prefill's rows / prompts); decoding (the completion tokens) is the same either way. A
    log-prob pass (the reference, or the policy update's forward, whose backward repeats its positions): the positions
    each run's forwards computed (rl_summary), over every step of the run (the warm-up step included) and its passes."""
    out = {}
    for name, setting in result["settings"].items():
        u, s = setting["runs"]["unshared"][0], setting["runs"]["shared"][0]
        g = s["shared_prefill"]["rows"] / s["shared_prefill"]["prompts"]
        passes = (result["steps"] + 1) * (2 + (s["per_stage_seconds"]["old_logprobs"] > 0))
        prompt, completion = u["prompt_tokens_per_step"], u["completion_tokens_per_step"]
        out[name] = {
            "G": g,
            "prefill": [prompt, prompt / g],
            "decode": [completion, completion],
            "logprob_pass": [u["positions"][0] / passes, s["positions"][0] / passes],
            "trl_padded_pass": u["positions"][1] / passes,
            "time_ratio": setting["speedup"],
        }
    return out


def cost_table(result: dict) -> str:
    """cost_model as markdown: positions per step before → shared (ratio) beside the measured time ratios."""
    lines = [
        "| setting | G | prefill positions per step | decoded tokens | generation time ratio | positions per log-prob "
        "pass (reference; the update's forward and its backward) | reference time ratio | update time ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, c in cost_model(result).items():
        (p0, p1), (l0, l1), t = c["prefill"], c["logprob_pass"], c["time_ratio"]
        lines.append(
            f"| {name} | {c['G']:.0f} | {p0:,.0f} → {p1:,.0f} ({p0 / p1:.1f}x) | {c['decode'][0]:,.0f} (same) | "
            f"{t['generation']:.2f}x | {l0:,.0f} → {l1:,.0f} ({l0 / l1:.2f}x) | {t['ref_logprobs']:.2f}x | "
            f"{t['policy_update']:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="Rounds of the first setting (the others: one).")
    ap.add_argument("--steps", type=int, default=3, help="Optimizer steps measured per run (after one warm-up step).")
    ap.add_argument("--settings", nargs="+", default=["rl_cpu", "G4", "G16", "fewshot"], choices=list(SETTINGS))
    ap.add_argument("--policy", default=POLICY, help="The regime's warm-up policy.")
    ap.add_argument("--allocator", choices=list(ALLOCATOR), default="default", help="The shared runs' allocator.")
    ap.add_argument("--baseline_allocator", choices=list(ALLOCATOR), default="default", help="The unshared runs'.")
    ap.add_argument("--name", default="shared_prefix", help="Result name (benchmarks/results/NAME.json).")
    ap.add_argument("--work", default=None, help="Run directories (default runs/bench_NAME).")
    ap.add_argument("--cost_model", action="store_true", help="Print NAME.json's cost model per stage; run nothing.")
    args = ap.parse_args()
    if args.cost_model:
        print(cost_table(json.loads((ROOT / "benchmarks/results" / f"{args.name}.json").read_text())), end="")
        return
    args.work = args.work or f"runs/bench_{args.name}"
    if not (ROOT / args.policy).exists():
        sys.exit(f"{args.policy} is missing: build the regime's warm-up first (experiments/rl_learns/run.py)")
    results = {}
    for i, setting in enumerate(args.settings):
        rounds = args.rounds if i == 0 else 1
        runs = {"unshared": [], "shared": []}
        for r in range(rounds):
            for variant in ["unshared", "shared"] if r % 2 == 0 else ["shared", "unshared"]:
                t = time.time()
                res = run(setting, variant == "shared", Path(args.work) / f"{setting}-r{r}-{variant}", args)
                runs[variant].append(res)
                print(f"[bench] {setting} round {r} {variant}: {res['rollouts_per_hour']:.0f} rollouts/h, "
                      f"{json.dumps(res['per_stage_seconds'])} ({time.time() - t:.0f} s)", flush=True)  # fmt: skip

        def ratio(stage: str, runs=runs) -> float:  # unshared / shared seconds, same round, median over rounds
            return median([u["per_stage_seconds"][stage] / s["per_stage_seconds"][stage]
                           for u, s in zip(runs["unshared"], runs["shared"]) if s["per_stage_seconds"][stage] > 0])  # fmt: skip

        ref_update = median([
            (u["per_stage_seconds"]["ref_logprobs"] + u["per_stage_seconds"]["policy_update"])
            / (s["per_stage_seconds"]["ref_logprobs"] + s["per_stage_seconds"]["policy_update"])
            for u, s in zip(runs["unshared"], runs["shared"])
        ])  # fmt: skip
        results[setting] = {
            "flags": SETTINGS[setting],
            "runs": runs,
            "speedup": {s: ratio(s) for s in ("generation", "ref_logprobs", "policy_update", "step_seconds")},
            "speedup_ref_plus_update": ref_update,
            "rollouts_per_hour_ratio": median(
                [s["rollouts_per_hour"] / u["rollouts_per_hour"] for u, s in zip(runs["unshared"], runs["shared"])]
            ),  # fmt: skip
            "peak_rss_gb": {v: max(x["peak_rss_gb"] for x in rs) for v, rs in runs.items()},
        }
        atomic_write_json(Path(args.work) / "partial.json", results)  # a killed benchmark keeps its settings
    targets = {"rollouts_per_hour_ratio": 1.8, "speedup_ref_plus_update": 2.0}  # issue 105, on rl_cpu
    first = results[args.settings[0]]
    met = {k: first[k] >= v for k, v in targets.items()} | {
        "peak_memory_not_higher": first["peak_rss_gb"]["shared"] <= first["peak_rss_gb"]["unshared"]
    }
    allocators = {"shared": args.allocator, "unshared": args.baseline_allocator}
    write_result(
        args.name,
        {"settings": results, "targets": targets, "targets_met": met, "steps": args.steps, "allocators": allocators},
    )


if __name__ == "__main__":
    main()

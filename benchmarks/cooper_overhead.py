"""Cooper's overhead while the RM is actually updated: rule vs cooper step time at the small-batch CPU preset, from a
warm-started policy, with the MiniLM RM and with a decoder-LLM RM (SmolLM2-135M as a sequence classifier).

  python benchmarks/cooper_overhead.py [--rounds 2] [--generations 3] [--policy DIR] [--sft_steps 100]

The policy is a `cooper sft` warm-up of the embedded SmolLM2 (built-in worked solutions, made here once if
--policy does not exist), so most prompts have a rollout the rule verifier accepts and the Cooper step has
pairs to train on (the cold policy gets almost nothing right: the RM would never be updated). Variants
(fresh process each, same seed and preset; the order rotates between rounds):

    rule          --reward rule
    cooper_minilm --reward cooper --rm minilm-l6
    cooper_llm    --reward cooper --rm smollm2-135m-instruct   (a fresh 1-logit head on the decoder)

Each run covers --generations generation batches after a warm-up batch (dropped), as in throughput.py.
Overhead = median over rounds of (seconds per optimizer step of cooper) / (same of rule, same round); also per
generated token (the variants' policies drift apart after the first update, so their rollouts differ in length)
and from the reward phase alone (1 + extra reward-phase seconds / rule's step: what Cooper itself adds).
Valid pairs: RM updates with at least one valid pair and pairs per update (one update per generation batch),
from the runs' metrics.jsonl. Writes benchmarks/results/cooper_overhead.json and merges its headline keys into
throughput.json (cooper_over_rule_with_updates_minilm / _llm_rm, valid_pairs_per_step_median).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import RESULTS, machine, median, write_result  # noqa: E402
from cooper_rl.io import atomic_write_json  # noqa: E402
from throughput import run  # noqa: E402

ROOT = Path(__file__).parent.parent
VARIANTS = {
    "rule": ("rule", "minilm-l6", ""),
    "cooper_minilm": ("cooper", "minilm-l6", ""),
    "cooper_llm": ("cooper", "smollm2-135m-instruct", ""),
    "cooper_llm_fp32rm": ("cooper", "smollm2-135m-instruct", "--rm_bf16_autocast false"),
}


def warm_policy(path: Path, steps: int) -> Path:
    """The SFT warm-start policy at `path`/policy, trained now if missing (cooper sft, seed 0)."""
    if not (path / "sft_summary.json").is_file():
        cmd = [str(ROOT / ".venv/bin/cooper"), "sft", "--datasets", "builtin:train:2000:1,2", "--max_steps", str(steps)]
        cmd += ["--output_dir", str(path), "--bf16_autocast", "auto", "--seed", "0"]
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"[overhead] sft warm-up ({steps} steps) -> {path}", flush=True)
        with open(path.parent / f"{path.name}.log", "w") as f:
            subprocess.run(cmd, check=True, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
    return path / "policy"


def rm_updates(out: Path) -> list[dict]:
    """Per reward call (= one RM update per generation batch) after the warm-up batch: its Cooper step metrics."""
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    return rows[1:]  # the first generation batch is the dropped warm-up


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--generations", type=int, default=3, help="generation batches measured per run (after warm-up)")
    ap.add_argument("--config", default="configs/rl_cpu_small.yaml")
    ap.add_argument("--policy", default="runs/sft-builtin100", help="cooper sft output dir (made if missing)")
    ap.add_argument("--sft_steps", type=int, default=100)
    ap.add_argument("--variants", nargs="+", default=["rule", "cooper_minilm", "cooper_llm"], choices=list(VARIANTS))
    ap.add_argument("--work", default="benchmarks/results/overhead_runs")
    ap.add_argument("--from_runs", action="store_true", help="summarize the runs already in --work, run nothing")
    ap.add_argument(
        "--name", default="cooper_overhead", help="result file results/NAME.json (a re-measure of some variants)"
    )
    args = ap.parse_args()
    if "rule" not in args.variants:
        raise SystemExit("--variants must include rule (the baseline of the ratios)")
    policy = warm_policy(Path(args.policy), args.sft_steps)
    runs = {v: [] for v in args.variants}
    updates = {v: [] for v in args.variants}
    for r in range(args.rounds):
        order = args.variants[r % len(args.variants) :] + args.variants[: r % len(args.variants)]
        for v in order:
            reward, rm, extra = VARIANTS[v]
            ns = argparse.Namespace(
                config=args.config, reward=reward, rm=rm, generations=args.generations, from_runs=args.from_runs
            )
            out = Path(args.work) / f"round{r}-{v}"
            t = time.time()
            res = run(v, f"--policy {policy} {extra}".strip(), out, ns)
            spg = json.loads((out / "rl_config.json").read_text())["steps_per_generation"]
            res["rm_update_every_optimizer_steps"] = spg if reward == "cooper" else None
            res["seconds_per_step"] = res["seconds"] / res["steps"]
            runs[v].append(res)
            if reward == "cooper":
                updates[v] += rm_updates(out)
            print(f"round {r} {v}: {res['seconds_per_step']:.2f} s/step ({time.time() - t:.0f} s wall)", flush=True)

    def overhead(v: str) -> float:
        return median([a["seconds_per_step"] / b["seconds_per_step"] for a, b in zip(runs[v], runs["rule"])])

    def per_token(r: dict) -> float:  # seconds per generated token: the runs' rollouts differ in length
        return r["seconds"] / (r["completion_tokens_per_rollout"] * r["rollouts"])

    def overhead_per_token(v: str) -> float:
        return median([per_token(a) / per_token(b) for a, b in zip(runs[v], runs["rule"])])

    def overhead_reward_phase(v: str) -> float:
        """1 + (extra reward-phase seconds per step of v over rule) / rule's step: Cooper's own cost (RM scoring,
        negatives, RM update) with generation-length noise taken out."""
        return median(
            [
                1
                + (a["phase_seconds_per_step"]["reward"] - b["phase_seconds_per_step"]["reward"])
                / b["seconds_per_step"]
                for a, b in zip(runs[v], runs["rule"])
            ]
        )

    per_variant = {}
    for v, rs in runs.items():
        d = {
            "rm": VARIANTS[v][1],
            "extra_flags": VARIANTS[v][2],
            "seconds_per_step_median": median([x["seconds_per_step"] for x in rs]),
            "runs": rs,
        }
        if v != "rule":
            ups = updates[v]
            d["over_rule"] = overhead(v)
            d["over_rule_per_token"] = overhead_per_token(v)
            d["over_rule_reward_phase"] = overhead_reward_phase(v)
            d["over_rule_by_round"] = [a["seconds_per_step"] / b["seconds_per_step"] for a, b in zip(rs, runs["rule"])]
            d["rm_updates"] = len(ups)
            d["rm_updates_with_valid_pairs"] = sum(1 for u in ups if u.get("rm/n_valid", 0) > 0)
            d["valid_pairs_per_update_median"] = median([u.get("rm/n_valid", 0) for u in ups])
            d["pairs_per_update_median"] = median([u.get("rm/n_pairs", 0) for u in ups])
            d["rule_accuracy_median"] = median([u["rule_accuracy"] for u in ups])
        per_variant[v] = d
    result = {
        "config": args.config,
        "policy": str(policy),
        "sft_steps": args.sft_steps,
        "rounds": args.rounds,
        "generations_per_run": args.generations,
        "variants_alternated": args.variants,
        "variants": per_variant,
    }
    headline = {}
    if "cooper_minilm" in per_variant:
        headline["cooper_over_rule_with_updates_minilm"] = per_variant["cooper_minilm"]["over_rule"]
    if "cooper_llm" in per_variant:
        headline["cooper_over_rule_with_updates_llm_rm"] = per_variant["cooper_llm"]["over_rule"]
    cooper = [u.get("rm/n_valid", 0) for v in args.variants if v != "rule" for u in updates[v]]
    if cooper:
        headline["valid_pairs_per_step_median"] = median(cooper)  # per RM update (one per generation batch)
    result.update(headline)
    print(json.dumps({k: v for k, v in result.items() if k != "variants"}, indent=1))
    write_result(args.name, result)
    tp = RESULTS / "throughput.json"
    if tp.is_file() and headline:
        here = machine()
        before = json.loads(tp.read_text())
        old = before.pop("cooper_overhead_source", None)  # older files: one source file for all the keys
        keys = ("cooper_over_rule_with_updates_minilm", "cooper_over_rule_with_updates_llm_rm")
        sources = before.get("cooper_overhead_sources") or {
            k: old for k in keys + ("valid_pairs_per_step_median",) if old and k in before
        }
        merged = {
            **before,
            **headline,
            "cooper_overhead_sources": {**sources, **{k: f"{args.name}.json" for k in headline}},
            "cooper_overhead_machine": {k: here.get(k) for k in ("date", "cpu", "cpu_vector_flags", "bf16_native")},
        }
        atomic_write_json(tp, merged)


if __name__ == "__main__":
    main()

"""A VerifyRM in Cooper's reward call: one padded batch of whole rollouts vs each prompt's question + reference
prefix computed once and shared by its G rollouts (KV cache; VerifyRM.share_prefix, decoder backbones), and one
padded batch vs batches of similar length (length_batches; every backbone).

  python benchmarks/rm_prefix.py [--rm smollm2-135m-instruct] [--repeats 7] [--prompts 8] [--name rm_prefix]

What one Cooper reward call does with the RM at the small-batch CPU preset, timed on every path, the order rotating per repeat:
  score   the RM scores prompts x 4 rollouts (configs/rl_cpu_small.yaml: 2 prompts x 4 rollouts per step, 4 steps per
          generation batch = 8 prompts), no grad;
  update  one pairwise update on 2 (positive, negative) pairs (each pair shares its prompt's prefix), with grad.
Paths: plain_one_batch (the first implementation), plain (length batches), and on a decoder shared_one_batch (prefix
sharing as first built) and shared (prefix sharing + length batches: what the RM does now).
Inputs: real SmolLM2 completions, 4 per GSM8K train question (experiments/verifyrm/data/collected.jsonl, up to 256
new tokens) and the short completions of a warm-started policy: 4 rollouts per SVAMP question from the committed
warm-start rule run (experiments/first_comparison/results_sft/runs/rule, SFT policy, 128 new tokens at most). Reports
medians of seconds and of per-repeat ratios, real vs padded tokens per rollout, and the largest score difference
between the paths.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, median, write_result  # noqa: E402

ROOT = Path(__file__).parent.parent


def groups_of(rows: list[dict], g: int) -> list[list[dict]]:
    """Rows grouped by question, groups of exactly g (extra rows dropped, smaller groups skipped), file order."""
    by_q: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_q[r["question"]].append(r)
    return [v[:g] for v in by_q.values() if len(v) >= g]


def inputs(name: str, prompts: int) -> list[list[dict]]:
    """`prompts` groups of 4 rollouts (question, reference, completion) of one input set."""
    if name == "gsm8k":
        rows = [json.loads(x) for x in (ROOT / "experiments/verifyrm/data/collected.jsonl").read_text().splitlines()]
    else:  # the SFT policy's rollouts in the committed warm-start run (one step = 2 prompts x 4 rollouts)
        path = ROOT / "experiments/first_comparison/results_sft/runs/rule/rollouts.jsonl"
        rows = [json.loads(x) for x in path.read_text().splitlines()]
    groups = groups_of(rows, 4)[:prompts]
    if len(groups) < prompts:
        raise SystemExit(f"{name}: only {len(groups)} questions with 4 rollouts")
    return groups


def main():
    import torch

    from cooper_rl.cooper.batching import BATCH_OVERHEAD, common_prefix_length, length_batches
    from cooper_rl.cooper.reward_model import VerifyRM

    ap = argparse.ArgumentParser()
    ap.add_argument("--rm", default="smollm2-135m-instruct")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--name", default="rm_prefix", help="results/NAME.json")
    args = ap.parse_args()
    rm = VerifyRM.from_pretrained(args.rm, device="cpu")
    decoder = rm.share_prefix
    # path: (share_prefix, batch_overhead); one_batch = every rollout padded to the longest (before length_batches)
    paths = {"plain_one_batch": (False, 10**9), "plain": (False, BATCH_OVERHEAD)}
    if decoder:
        paths.update({"shared_one_batch": (True, 10**9), "shared": (True, BATCH_OVERHEAD)})
    rm.configure_optimizer(lr=0.0)  # lr 0: time the update without drifting the weights
    result = {"rm": args.rm, "max_length": rm.max_length, "prompts": args.prompts, "rollouts_per_prompt": 4}
    result["repeats"] = args.repeats
    for name in ("sft_svamp", "gsm8k"):
        groups = inputs(name, args.prompts)
        q = [r["question"] for g in groups for r in g]
        ref = [r["reference"] for g in groups for r in g]
        c = [r["completion"] for g in groups for r in g]
        ids = rm.encode(q, ref, c)
        shared_prefix = [common_prefix_length(ids[i : i + 4]) if decoder else 0 for i in range(0, len(ids), 4)]
        tokens_plain = sum(len(x) for x in ids)
        tokens_shared = tokens_plain - 3 * sum(shared_prefix)
        # pairs: rollouts 0 and 1 of the first two prompts as (positive, negative): timing only
        pq, pr = (
            [groups[0][0]["question"], groups[1][0]["question"]],
            [groups[0][0]["reference"], groups[1][0]["reference"]],
        )
        pos, neg = (
            [groups[0][0]["completion"], groups[1][0]["completion"]],
            [groups[0][1]["completion"], groups[1][1]["completion"]],
        )
        secs = {(k, p): [] for k in ("score", "update") for p in paths}
        scores = {}
        names = list(paths)
        for rep in range(args.repeats + 1):  # repeat 0 warms every path up and is dropped
            for path in names[rep % len(names) :] + names[: rep % len(names)]:  # the order rotates
                rm.share_prefix, rm.batch_overhead = paths[path]
                t = time.perf_counter()
                scores[path] = rm.score(q, ref, c, batch_size=64)
                t1 = time.perf_counter()
                rm.pairwise_update(pq, pr, pos, neg)
                t2 = time.perf_counter()
                if rep:
                    secs["score", path].append(t1 - t)
                    secs["update", path].append(t2 - t1)
        rm.share_prefix, rm.batch_overhead = decoder, BATCH_OVERHEAD

        def ratio(kind, a, b, secs=secs):
            """Median over repeats of seconds(a) / seconds(b); kind: score, update or call (both)."""
            sec = {p: [x + y for x, y in zip(secs["score", p], secs["update", p])] for p in (a, b)}
            if kind != "call":
                sec = {p: secs[kind, p] for p in (a, b)}
            return median([x / y for x, y in zip(sec[a], sec[b])])

        best = "shared" if decoder else "plain"
        lengths = [len(x) - (n if decoder else 0) for x, n in zip(ids, [s for s in shared_prefix for _ in range(4)])]
        result[name] = {
            "rollouts": len(c),
            "rm_tokens_per_rollout": {"plain": tokens_plain / len(c), "shared": tokens_shared / len(c)},
            "shared_prefix_tokens_median": median(shared_prefix) if decoder else 0,
            "forwarded_tokens_per_rollout": {  # real tokens in the (suffix) forward vs padded positions
                "real": sum(lengths) / len(c),
                "one_batch": max(lengths),
                "length_batches": sum(
                    len(b) * max(lengths[i] for i in b) for b in length_batches(lengths, BATCH_OVERHEAD)
                )
                / len(c),
            },
            "score_seconds": {p: median(secs["score", p]) for p in paths},
            "update_seconds": {p: median(secs["update", p]) for p in paths},
            "score_speedup": ratio("score", "plain_one_batch", best),  # today's path vs the first one
            "length_batches_score_speedup": ratio("score", f"{best}_one_batch", best),
            "update_speedup": ratio("update", "plain_one_batch", best),
            "reward_call_speedup": ratio("call", "plain_one_batch", best),
            "length_batches_reward_call_speedup": ratio("call", f"{best}_one_batch", best),
            "max_score_difference": max(
                abs(a - b) for p in paths for a, b in zip(scores["plain_one_batch"], scores[p])
            ),
        }
        print(name, json.dumps(result[name]), flush=True)
    result["torch_threads"] = torch.get_num_threads()
    result["machine"] = machine()
    write_result(args.name, result)


if __name__ == "__main__":
    main()

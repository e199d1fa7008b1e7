"""A decoder VerifyRM in Cooper's reward call: one forward per rollout vs each prompt's question + reference prefix
computed once and shared by its G rollouts (KV cache; VerifyRM.share_prefix, on for decoder backbones).

  python benchmarks/rm_prefix.py [--rm smollm2-135m-instruct] [--repeats 7] [--prompts 8]

What one Cooper reward call does with the RM at the CPU preset, timed both ways, alternated in each repeat:
  score   the RM scores prompts x 4 rollouts (configs/rl_cpu.yaml: 2 prompts x 4 rollouts per step, 4 steps per
          generation batch = 8 prompts), no grad;
  update  one pairwise update on 2 (positive, negative) pairs (each pair shares its prompt's prefix), with grad.
Inputs: real SmolLM2 completions, 4 per GSM8K train question (experiments/verifyrm/data/collected.jsonl, up to 256
new tokens) and the short completions of a warm-started policy: 4 rollouts per SVAMP question from the committed
warm-start rule run (experiments/reproduce/results_sft/runs/rule, SFT policy, 128 new tokens at most). Reports medians of seconds and of per-repeat
ratios (plain / shared), the token counts of both paths, and the largest score difference between them.
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
        path = ROOT / "experiments/reproduce/results_sft/runs/rule/rollouts.jsonl"
        rows = [json.loads(x) for x in path.read_text().splitlines()]
    groups = groups_of(rows, 4)[:prompts]
    if len(groups) < prompts:
        raise SystemExit(f"{name}: only {len(groups)} questions with 4 rollouts")
    return groups


def main():
    import torch

    from cooper_rl.cooper.reward_model import VerifyRM, common_prefix_length

    ap = argparse.ArgumentParser()
    ap.add_argument("--rm", default="smollm2-135m-instruct")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--prompts", type=int, default=8)
    args = ap.parse_args()
    rm = VerifyRM.from_pretrained(args.rm, device="cpu")
    assert rm.share_prefix, f"{args.rm} is not a decoder backbone: nothing to share"
    rm.configure_optimizer(lr=0.0)  # lr 0: time the update without drifting the weights
    result = {"rm": args.rm, "max_length": rm.max_length, "prompts": args.prompts, "rollouts_per_prompt": 4}
    result["repeats"] = args.repeats
    for name in ("sft_svamp", "gsm8k"):
        groups = inputs(name, args.prompts)
        q = [r["question"] for g in groups for r in g]
        ref = [r["reference"] for g in groups for r in g]
        c = [r["completion"] for g in groups for r in g]
        ids = rm.encode(q, ref, c)
        shared_prefix = [common_prefix_length(ids[i : i + 4]) for i in range(0, len(ids), 4)]
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
        secs = {(k, s): [] for k in ("score", "update") for s in (False, True)}
        scores = {}
        for rep in range(args.repeats + 1):  # repeat 0 warms both paths up and is dropped
            for share in (False, True) if rep % 2 == 0 else (True, False):
                rm.share_prefix = share
                t = time.perf_counter()
                scores[share] = rm.score(q, ref, c, batch_size=64)
                t1 = time.perf_counter()
                rm.pairwise_update(pq, pr, pos, neg)
                t2 = time.perf_counter()
                if rep:
                    secs["score", share].append(t1 - t)
                    secs["update", share].append(t2 - t1)
        rm.share_prefix = True
        result[name] = {
            "rollouts": len(c),
            "rm_tokens_per_rollout": {"plain": tokens_plain / len(c), "shared": tokens_shared / len(c)},
            "shared_prefix_tokens_median": median(shared_prefix),
            "score_seconds": {"plain": median(secs["score", False]), "shared": median(secs["score", True])},
            "update_seconds": {"plain": median(secs["update", False]), "shared": median(secs["update", True])},
            "score_speedup": median([a / b for a, b in zip(secs["score", False], secs["score", True])]),
            "update_speedup": median([a / b for a, b in zip(secs["update", False], secs["update", True])]),
            "reward_call_speedup": median(
                [
                    (a + b) / (x + y)
                    for a, b, x, y in zip(
                        secs["score", False], secs["update", False], secs["score", True], secs["update", True]
                    )
                ]
            ),
            "max_score_difference": max(abs(a - b) for a, b in zip(scores[False], scores[True])),
        }
        print(name, json.dumps(result[name]), flush=True)
    result["torch_threads"] = torch.get_num_threads()
    result["machine"] = machine()
    write_result("rm_prefix", result)


if __name__ == "__main__":
    main()

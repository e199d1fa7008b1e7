"""VerifyRM.score throughput: length-sorted dynamic batching vs naive fixed batching (input order).

  python benchmarks/rm_scoring.py [--n 512] [--batch_size 32] [--repeats 5]

Inputs: a realistic length mix — SmolLM2 completions collected for the VerifyRM experiment
(experiments/verifyrm/data/collected.jsonl, up to 256 new tokens) interleaved with short built-in worked
solutions — scored by a MiniLM-L6 VerifyRM (the embedded backbone) at its max length. The two batchings are
alternated in each repeat; examples/s medians and the median of per-repeat ratios are reported, and the
scores of both are checked to agree.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402

ROOT = Path(__file__).parent.parent


def length_mix(n: int) -> tuple[list[str], list[str], list[str]]:
    """(questions, references, completions): half policy samples, half built-in solutions, shuffled."""
    from cooper_rl.tasks import generate_problems

    rows = [json.loads(x) for x in (ROOT / "experiments/verifyrm/data/collected.jsonl").read_text().splitlines()]
    rows = rows[: n // 2]
    rows += [
        {"question": p.question, "reference": p.answer, "completion": p.solution}
        for p in generate_problems(n - len(rows), split="train", seed=5)
    ]
    random.Random(0).shuffle(rows)
    return [r["question"] for r in rows], [r["reference"] for r in rows], [r["completion"] for r in rows]


def main():
    import torch

    from cooper_rl.cooper.reward_model import VerifyRM

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--batch_size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rm", default="minilm-l6")
    args = ap.parse_args()
    rm = VerifyRM.from_pretrained(args.rm, device="cpu")
    q, r, c = length_mix(args.n)
    lengths = [len(x) for x in rm.encode(q, r, c)]
    rm.score(q[:32], r[:32], c[:32])  # warm-up
    rate = {True: [], False: []}
    scores = {}
    for _ in range(args.repeats):
        for sort in (True, False):
            t = time.perf_counter()
            scores[sort] = rm.score(q, r, c, batch_size=args.batch_size, sort_by_length=sort)
            rate[sort].append(len(q) / (time.perf_counter() - t))
    max_diff = max(abs(a - b) for a, b in zip(scores[True], scores[False]))
    # Cooper's RM update at the small-batch CPU preset's size: 2 prompts -> up to 2 (positive, negative) pairs
    rm.configure_optimizer(lr=0.0)  # lr 0: time the step without drifting the weights
    upd = []
    for i in range(args.repeats):
        j = 2 * i
        t = time.perf_counter()
        rm.pairwise_update(q[j : j + 2], r[j : j + 2], c[j : j + 2], c[j + 2 : j + 4])
        upd.append(time.perf_counter() - t)
    pad = {}
    for sort in (True, False):
        order = sorted(range(len(lengths)), key=lengths.__getitem__) if sort else list(range(len(lengths)))
        chunks = [[lengths[i] for i in order[s : s + args.batch_size]] for s in range(0, len(order), args.batch_size)]
        pad[sort] = sum(len(ch) * max(ch) for ch in chunks) / sum(lengths)
    result = {
        "n": len(q),
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "rm": args.rm,
        "max_length": rm.max_length,
        "tokens": {"mean": sum(lengths) / len(lengths), "min": min(lengths), "max": max(lengths)},
        "examples_per_s_sorted": median(rate[True]),
        "examples_per_s_naive": median(rate[False]),
        "speedup": median([a / b for a, b in zip(rate[True], rate[False])]),
        "padded_over_real_tokens": {"sorted": pad[True], "naive": pad[False]},
        "max_score_difference": max_diff,
        "torch_threads": torch.get_num_threads(),
        "pairwise_pairs": 2,
        "pairwise_update_seconds": median(upd),
    }
    result["targets"] = {"sorted >= 1.5x naive": {"measured": result["speedup"], "met": result["speedup"] >= 1.5}}
    print(json.dumps(result, indent=1))
    write_result("rm_scoring", result)


if __name__ == "__main__":
    main()

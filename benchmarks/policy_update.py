"""Policy forward/backward on CPU: fp32 vs bf16 autocast (fp32 weights and optimizer, bf16 matmuls on AMX).

  python benchmarks/policy_update.py [--batch 8] [--seq 218] [--repeats 3]

The RL-step profile shows the policy update (forward + backward + AdamW) and the reference log-probs at
~50% of the fp32 matmul peak; this CPU also has AMX bf16 units (bf16 matmul peak ~3x fp32). One forward +
backward of the embedded policy on a batch shaped like the small-batch CPU preset's (8 sequences x 218 tokens) is timed
in each configuration alternately; the loss difference shows the numerical cost.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402


def main():
    import torch

    from cooper_rl.models import load_causal_lm

    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=218)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    model, tok = load_causal_lm("smollm2-135m-instruct", device="cpu")
    model.train()
    torch.manual_seed(0)
    ids = torch.randint(100, len(tok) - 100, (args.batch, args.seq))

    def step(autocast: bool) -> tuple[float, float]:
        t = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        model.zero_grad(set_to_none=True)
        return time.perf_counter() - t, loss.item()

    step(False), step(True)  # warm-up
    times, losses = {"fp32": [], "bf16_autocast": []}, {}
    for _ in range(args.repeats):
        for name, ac in (("fp32", False), ("bf16_autocast", True)):
            dt, loss = step(ac)
            times[name].append(dt)
            losses[name] = loss
    result = {
        "batch": args.batch,
        "seq": args.seq,
        "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(),
        "seconds": {k: median(v) for k, v in times.items()},
        "speedup_bf16_autocast": median([a / b for a, b in zip(times["fp32"], times["bf16_autocast"])]),
        "loss": losses,
        "loss_rel_diff": abs(losses["fp32"] - losses["bf16_autocast"]) / abs(losses["fp32"]),
    }
    print(result)
    write_result("policy_update", result)


if __name__ == "__main__":
    main()

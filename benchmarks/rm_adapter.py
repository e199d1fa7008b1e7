"""What the shipped VerifyRM's LoRA form costs at scoring (issue 104): the adapter merged at load (static scoring) vs
kept as a trainable adapter (Cooper's online RM) vs a second load of the merged model (a plain SmolLM2-135M classifier,
the shape of round 7's full fine-tune: merged is that shape by construction, so this pair shows the noise floor), on
the same rows, alternated in every repeat.

  python benchmarks/rm_adapter.py [--rm verifyrm] [--n 256] [--repeats 3]

Rows: the first --n rows of the LaTeX suite (experiments/verifyrm/v4/latex_heldout.jsonl) and as many of the
robustness suite. Reports rows/s medians over repeats, the median per-repeat ratio to the full model, and the largest
score difference between the merged and the unmerged adapter. Writes benchmarks/results/rm_adapter.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import median, write_result  # noqa: E402

ROOT = Path(__file__).parent.parent


def main() -> None:
    import torch

    from cooper_rl.cooper.reward_model import VerifyRM

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rm", default="verifyrm")
    ap.add_argument("--n", type=int, default=256, help="Rows of each suite.")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for path in ("experiments/verifyrm/v4/latex_heldout.jsonl", "experiments/verifyrm/v3/robustness.jsonl"):
        rows += [json.loads(x) for x in (ROOT / path).read_text().splitlines()[: args.n]]
    q, r, c = ([x[k] for x in rows] for k in ("question", "reference", "completion"))
    merged = VerifyRM.from_pretrained(args.rm, device="cpu")
    adapter = VerifyRM.from_pretrained(args.rm, device="cpu", trainable_adapter=True)
    full = VerifyRM.from_pretrained(args.rm, device="cpu")  # a plain classifier of round 7's shape: the noise floor
    assert not merged.is_adapter and adapter.is_adapter
    variants = {"merged": merged, "adapter": adapter, "full": full}
    times = {k: [] for k in variants}
    scores = {}
    for rep in range(args.repeats):
        for name in list(variants)[rep % 3 :] + list(variants)[: rep % 3]:  # the order rotates
            t = time.perf_counter()
            with torch.inference_mode():
                scores[name] = variants[name].score(q, r, c)
            times[name].append(time.perf_counter() - t)
        print(f"[rm_adapter] repeat {rep}: " + ", ".join(f"{k} {len(rows) / v[-1]:.1f} rows/s" for k, v in times.items()), flush=True)  # fmt: skip
    result = {
        "rm": args.rm,
        "rows": len(rows),
        "rows_per_s": {k: median([len(rows) / t for t in v]) for k, v in times.items()},
        "seconds_ratio_to_full": {k: median([a / b for a, b in zip(v, times["full"])]) for k, v in times.items()},
        "max_score_diff_merged_vs_adapter": max(abs(a - b) for a, b in zip(scores["merged"], scores["adapter"])),
        "threads": torch.get_num_threads(),
    }
    print(json.dumps(result, indent=1))
    write_result("rm_adapter", result)


if __name__ == "__main__":
    main()

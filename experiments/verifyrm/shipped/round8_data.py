"""Round 8's training rows (issue 104 §2): round 7's rows plus the two kinds of text the shipped RM (round 7's recipe)
fails on outside its suites, both made from round 7's own training rows (training problems only; GSM8K test never):

- long worked solutions (longform.py, its `train` phrase bank): a sample of round 7's rows rewritten as several
  paragraphs or numbered steps with values met on the way, the row's own final answer (and label) last. The check of
  this kind (long_check.jsonl) is built from the held-out suites with the other phrase bank;
- `trap:prefix`: a correct GSM8K-style row whose final answer is cut to a proper prefix of the reference's digits
  (`#### 12` for 126, `\\boxed{1}`), label 0: the answer the shipped RM accepts in 167 of 176 probe rows
  (prefix_probe.py builds its probe from the held-out suite; no round 7 row has such an answer).

The rows are shuffled into round 7's with a fixed seed; the output's sha256 and counts go to --stats (committed).

  python experiments/verifyrm/shipped/round8_data.py --base runs/verifyrm-v7/train.jsonl --out runs/verifyrm-r8/train.jsonl \
      --stats experiments/verifyrm/shipped/round8.stats.json [--long 4000] [--prefix 400] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "experiments" / "verifyrm"))
import longform  # noqa: E402

from cooper_rl.cooper.negatives import prefix_values  # noqa: E402
from cooper_rl.io import atomic_write_json, file_sha256, read_jsonl, write_jsonl  # noqa: E402


def prefix_trap(row: dict, rng: random.Random) -> dict | None:
    """The row with its last written reference (not inside a longer number) cut to a proper prefix; None where the
    reference is not a whole number of 2+ digits written as such in the row's last line."""
    ref = row["reference"].strip()
    prefixes = prefix_values(ref)
    if not prefixes or not re.fullmatch(r"-?\d+", ref):
        return None
    text = row["completion"]
    last = text.rstrip().rsplit("\n", 1)[-1]
    hits = list(re.finditer(rf"(?<![\d.,]){re.escape(ref)}(?![\d.,]\d|\d)", last))
    if not hits:
        return None
    m = hits[-1]
    start = len(text.rstrip()) - len(last)
    cut = text[: start + m.start()] + rng.choice(prefixes) + text[start + m.end() :]
    return {**row, "completion": cut, "label": 0, "answer_type": "trap:prefix", "label_source": "construction"}


def build(base: list[dict], n_long: int, n_prefix: int, seed: int) -> tuple[list[dict], Counter]:
    """Round 7's rows + n_long long rows (half of each label where possible) + n_prefix prefix traps, shuffled."""
    rng = random.Random(seed)
    long_rows = longform.make_long(base, "train", per_problem=1, seed=seed)
    by_label = {lab: [r for r in long_rows if r["label"] == lab] for lab in (0, 1)}
    picked = [r for lab in (0, 1) for r in rng.sample(by_label[lab], min(n_long // 2, len(by_label[lab])))]
    candidates = [r for r in base if r["label"] == 1 and r["answer_type"].startswith("fmt:")]
    rng.shuffle(candidates)
    traps, seen = [], set()
    for r in candidates:
        if len(traps) >= n_prefix:
            break
        if r["question"] in seen:
            continue  # one per problem
        t = prefix_trap(r, rng)
        if t is not None:
            traps.append(t)
            seen.add(r["question"])
    rows = base + picked + traps
    rng.shuffle(rows)
    kinds = Counter(r["answer_type"].split(":")[0] for r in picked + traps)
    return rows, kinds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="runs/verifyrm-v7/train.jsonl", help="Round 7's training rows.")
    ap.add_argument("--out", default="runs/verifyrm-r8/train.jsonl")
    ap.add_argument("--stats", default=str(Path(__file__).parent / "round8.stats.json"), help="Counts + sha256.")
    ap.add_argument("--long", type=int, default=4000, help="Long rows added (half correct, half wrong).")
    ap.add_argument("--prefix", type=int, default=400, help="trap:prefix rows added (one per problem).")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    base = read_jsonl(args.base)
    rows, kinds = build(base, args.long, args.prefix, args.seed)
    write_jsonl(args.out, rows)
    stats = {
        "base": args.base,
        "base_sha256": file_sha256(args.base),
        "base_rows": len(base),
        "rows": len(rows),
        "sha256": file_sha256(args.out),
        "added": {
            "long": sum(r["answer_type"].startswith("long:") for r in rows),
            "long_correct": sum(r["answer_type"].startswith("long:") and r["label"] == 1 for r in rows),
            "trap:prefix": sum(r["answer_type"] == "trap:prefix" for r in rows),
        },
        "label_rate": sum(r["label"] for r in rows) / len(rows),
        "config": {"long": args.long, "prefix": args.prefix, "seed": args.seed},
    }
    if not Path(args.stats).is_file():  # a rebuild keeps the committed record (compare its sha256)
        atomic_write_json(args.stats, stats)
    print(f"[round8] {len(rows)} rows ({stats['added']}) -> {args.out}; sha256 {stats['sha256'][:16]}...; {kinds}")


if __name__ == "__main__":
    main()

"""Known negatives for `cooper_recal` (issue 106): the committed completions that issue 14's VerifyRM v3 collected on
training questions (GSM8K train, SVAMP train; the embedded SmolLM2 and the SFT policy, T = 0.6 and 1.0;
experiments/verifyrm/v3/samples_train_T*.jsonl), labelled by the lenient rule verifier.

They are text of the same two writers as the RM's labelled evaluation set (experiments/verifyrm/v3/heldout.jsonl:
their completions of GSM8K test questions 101-300), on other questions: no question of GSM8K test is kept (checked
against ../shared/data/gsm8k/test.jsonl when it is there, and against the labelled set always).

  python experiments/rl_learns/known_negatives.py    # writes data/known_negatives.jsonl and its .stats.json
"""

import argparse
import hashlib
import json
import os
from collections import Counter
from pathlib import Path

from cooper_rl.io import atomic_write_json, atomic_write_text
from cooper_rl.verify import verify_batch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
V3 = ROOT / "experiments" / "verifyrm" / "v3"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", nargs="+", default=[str(V3 / f"samples_train_T{t}.jsonl") for t in ("0.6", "1.0")])
    ap.add_argument("--exclude", nargs="+", default=[str(V3 / "heldout.jsonl"), str(ROOT.parent / "shared/data/gsm8k/test.jsonl")])  # fmt: skip
    ap.add_argument("--out", default=str(HERE / "data" / "known_negatives.jsonl"))
    args = ap.parse_args()

    excluded, checked = set(), []
    for path in map(Path, args.exclude):
        if path.is_file():
            checked.append(os.path.relpath(path, ROOT))
            excluded |= {json.loads(x)["question"].strip() for x in path.read_text().splitlines() if x.strip()}
    rows = []
    for path in map(Path, args.samples):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            r = json.loads(line)
            if r["question"].strip() in excluded:
                raise SystemExit(f"{path}: row {n}: a question of an excluded set ({r['problem_id']})")
            rows.append({k: r[k] for k in ("question", "reference", "completion", "source", "problem_id", "sample")})
    labels = verify_batch([r["completion"] for r in rows], [r["reference"] for r in rows], mode="lenient")
    for r, ok in zip(rows, labels):
        r["label"], r["label_source"] = int(ok), "rule:lenient"
    text = "".join(json.dumps(r) + "\n" for r in rows)
    atomic_write_text(Path(args.out), text)
    stats = {
        "rows": len(rows),
        "by_writer_label": {f"{w} / {lab}": c for (w, lab), c in sorted(Counter((r["source"], r["label"]) for r in rows).items())},
        "negatives": sum(1 - r["label"] for r in rows),
        "excluded_questions_checked_against": checked,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }  # fmt: skip
    atomic_write_json(Path(args.out + ".stats.json"), stats)
    print(json.dumps(stats, indent=1))


if __name__ == "__main__":
    main()

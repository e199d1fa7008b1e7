"""Rows labelled correct because the CAS read a reference that lists several answers as one value (issue 69).

College-math references such as `60,180` ("how many stamps did each collect?": 60 and 180), `325,950` or `-125,343`
(the roots of an equation) are lists, but Math-Verify, the rules and the CAS read a comma before exactly three digits
as a thousands separator: the value 60180. The rules and the CAS that labels the rows read a reference with several
parts separated by `;` as its first part. The `latex:cas` form renders that value (`60180`, `- 24 \\sqrt{34}`) and
is labelled correct although it is not the answer. This finds such rows in a data file (the held-out suite by
default; a training file too), counts them per category, and writes the suite's affected `latex:cas` rows relabelled 0 (answer_type `audit:list_as_number`,
`audit:first_part_only`) so that `cooper eval-rm` scores an RM on them (its accuracy there = the share it rejects):

    python experiments/verifyrm/ambiguous_refs.py [DATA.jsonl ...]   # default: experiments/verifyrm/v4/latex_heldout.jsonl
    python experiments/verifyrm/ambiguous_refs.py experiments/verifyrm/v4/latex_heldout.jsonl runs/verifyrm-v6/train.jsonl
                                                       # the committed record (round 6's data: run_v4.sh ROUND=6)
    cooper eval-rm --rm runs/verifyrm-v6/smollm2-s0 --data experiments/verifyrm/v6/ambiguous_refs.jsonl \\
        --output experiments/verifyrm/results/v6/eval_ambiguous_refs_smollm2_s0.json

Writes experiments/verifyrm/results/v6/ambiguous_refs.json (counts and the problems per file; the audits of files not
named are kept) and v6/ambiguous_refs.jsonl.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from cooper_rl.io import atomic_write_json, read_jsonl, write_jsonl
from cooper_rl.rm.latex_forms import ambiguous_reference as kind  # what `rm-data` now skips by default

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "experiments/verifyrm/v4/latex_heldout.jsonl"


def misread_cas(r: dict) -> bool:
    """A `latex:cas` row labelled correct whose reference the CAS misreads: the rendering of a value that is not it."""
    return r["answer_type"] == "latex:cas" and r["label"] == 1 and kind(r["reference"]) is not None


def audit(rows: list[dict]) -> dict:
    """Problems with such references (keyed by source, problem_id and reference: two problems may share a reference)
    and their rows per category (labels as built); cas_rows_labelled_correct counts rows."""
    problems, per_category = {}, Counter()
    for r in rows:
        k = kind(r["reference"])
        if k is None:
            continue
        key = f"{Path(r.get('source', '')).name}:{r.get('problem_id', '')}:{r['reference']}"  # not the machine's path
        p = problems.setdefault(key, {"kind": k, "question": r["question"][-160:], "rows": {}})
        p["rows"][r["answer_type"]] = r["label"]
        per_category[f"{r['answer_type']} (label {r['label']})"] += 1
    cas_correct = sum(map(misread_cas, rows))
    return {
        "rows": len(rows),
        "problems": len(problems),
        "by_kind": dict(Counter(p["kind"] for p in problems.values())),
        "cas_rows_labelled_correct": cas_correct,
        "rows_per_category": dict(sorted(per_category.items())),
        "references": problems,
    }


def main() -> None:
    paths = [Path(p).resolve() for p in sys.argv[1:]] or [SUITE]  # one key per file, wherever it is run from
    record = ROOT / "experiments/verifyrm/results/v6/ambiguous_refs.json"
    out = json.loads(record.read_text()) if record.is_file() else {}  # the other files' audits are kept
    for path in paths:
        rows = read_jsonl(path)
        out[str(path.relative_to(ROOT) if path.is_absolute() and path.is_relative_to(ROOT) else path)] = audit(rows)
        if path.resolve() == SUITE:
            probe = [{**r, "label": 0, "answer_type": f"audit:{kind(r['reference'])}"} for r in rows if misread_cas(r)]
            write_jsonl(ROOT / "experiments/verifyrm/v6/ambiguous_refs.jsonl", probe)
            print(
                f"{len(probe)} latex:cas rows of the suite relabelled 0 -> experiments/verifyrm/v6/ambiguous_refs.jsonl"
            )
    atomic_write_json(record, out)
    for name, a in out.items():
        print(f"{name}: {a['problems']} problems {a['by_kind']}, latex:cas rows labelled correct: "
              f"{a['cas_rows_labelled_correct']} of {a['rows']} rows")  # fmt: skip


if __name__ == "__main__":
    main()

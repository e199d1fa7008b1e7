"""Rows labelled correct because the CAS misread a reference (issue 69).

College-math references such as `60,180` ("how many stamps did each collect?": 60 and 180), `325,950` or `-125,343`
(the roots of an equation) are lists, but Math-Verify, the rules and the CAS read a comma before exactly three digits
as a thousands separator: the value 60180. The rules and the CAS that labels the rows read a reference with several
parts separated by `;` as its first part; others lose a part (`x=0, \\frac{5 \\pm \\sqrt{61}}{18}` read as 0) or read an
inequality, an interval or a pair as one number (`d=5, M=(-1, 3)` as 5). The `latex:cas` form renders that value
(`60180`, `0`) and is labelled correct although it is not the answer. `latex_forms.misread_reference` names such
references (asking the CAS; what `cooper rm-data` skips by default). This finds their rows in a data file (the
held-out suite by default; a training file too), counts them per category, writes the suite's affected `latex:cas`
rows relabelled 0 (answer_type `audit:<kind>`) so that `cooper eval-rm` can score an RM on them (its accuracy there =
the share it rejects), and rescores every RM whose per-row scores on the suite are committed (`eval-rm --scores`,
results/v*/scores_latex_heldout_*.jsonl.gz): its accuracy on those rows and on the suite relabelled.

    python experiments/verifyrm/ambiguous_refs.py [DATA.jsonl ...]   # default: experiments/verifyrm/v4/latex_heldout.jsonl
    python experiments/verifyrm/ambiguous_refs.py experiments/verifyrm/v4/latex_heldout.jsonl runs/verifyrm-v6/train.jsonl
                                                       # the committed record (round 6's data: run_v4.sh ROUND=6)
    cooper eval-rm --rm RM_DIR --data experiments/verifyrm/v6/ambiguous_refs.jsonl --output OUT.json
                                                       # an RM on the probe alone; round 6's seed 0 was scored so
                                                       # (results/v6/eval_ambiguous_refs_smollm2_s0.json) on the
                                                       # probe's first version: the 4 rows the shape alone names

Writes experiments/verifyrm/results/v6/ambiguous_refs.json (counts and the problems per file; the audits of files not
named are kept) and v6/ambiguous_refs.jsonl.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from cooper_rl.io import atomic_write_json, file_sha256, iter_jsonl, read_jsonl, write_jsonl
from cooper_rl.rm.latex_forms import misread  # what `rm-data` now skips by default

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "experiments/verifyrm/v4/latex_heldout.jsonl"
TIMEOUT = 10.0  # seconds per CAS reading (as rm-data's default)
_KINDS: dict[str, str | None] = {}


def kind(ref: str) -> str | None:
    """Why the CAS misreads reference `ref` (latex_forms.misread), or None; asked once per reference."""
    if ref not in _KINDS:
        _KINDS[ref] = misread(ref, TIMEOUT)
    return _KINDS[ref]


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


def rescore(suite: list[dict], suite_sha: str, paths: list[Path]) -> dict:
    """Per scores file of an RM on the suite (eval-rm --scores, its report beside it; one of another suite version is
    left out):
    its accuracy on the misread `latex:cas` rows relabelled 0, and on the whole suite as built and relabelled (the
    RM's and the strict rule's)."""
    misread = {i for i, r in enumerate(suite) if misread_cas(r)}
    out = {}
    for path in paths:
        report = json.loads(
            path.with_name(path.name.replace("scores_", "eval_").replace(".jsonl.gz", ".json")).read_text()
        )
        if report.get("data_sha256") != suite_sha or report["n"] != len(suite):  # (another version, or --limit)
            continue
        rows = [r for _, r in iter_jsonl(path)]
        entry = {"misread_rows": len(misread)}
        for judge, cut in (("rm", report["config"]["threshold"]), ("rule_strict", 0.5)):
            said = [int(r[judge] >= cut) for r in rows]
            relabelled = [0 if i in misread else r["label"] for i, r in enumerate(rows)]
            entry[judge] = {
                "rejects_misread": sum(1 - said[i] for i in misread),
                "suite_as_built": sum(s == r["label"] for s, r in zip(said, rows)) / len(rows),
                "suite_relabelled": sum(s == y for s, y in zip(said, relabelled)) / len(rows),
            }
        out[str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)] = entry
    return out


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
            scores = sorted((ROOT / "experiments/verifyrm/results").glob("v*/scores_latex_heldout_*.jsonl.gz"))
            out["rescored"] = rescore(rows, file_sha256(path), scores)
    atomic_write_json(record, out)
    for name, a in out.items():
        if name == "rescored":
            for f, e in a.items():
                print(f"{f}: RM rejects {e['rm']['rejects_misread']} of {e['misread_rows']} misread rows; suite "
                      f"{e['rm']['suite_as_built']:.2%} as built, {e['rm']['suite_relabelled']:.2%} relabelled")  # fmt: skip
            continue
        print(f"{name}: {a['problems']} problems {a['by_kind']}, latex:cas rows labelled correct: "
              f"{a['cas_rows_labelled_correct']} of {a['rows']} rows")  # fmt: skip


if __name__ == "__main__":
    main()

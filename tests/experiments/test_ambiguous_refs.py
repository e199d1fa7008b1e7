"""experiments/verifyrm/ambiguous_refs.py: which references the CAS misreads, and the audit's counts."""

import json
from pathlib import Path

from tests.experiments import load_script

from cooper_rl.io import write_jsonl

ar = load_script("ambiguous_refs", Path(__file__).resolve().parents[2] / "experiments/verifyrm")


def test_the_audit_counts_cas_rows_labelled_correct_per_problem():
    row = lambda ref, t, label: {"reference": ref, "question": "q", "answer_type": t, "label": label}  # noqa: E731
    rows = [
        row("60,180", "latex:cas", 1),
        row("60,180", "latex_trap:partial", 0),
        row("3;4", "latex:cas", 0),
        row("\\frac{3}{4}", "latex:cas", 1),
    ]
    a = ar.audit(rows)
    assert a["problems"] == 2 and a["cas_rows_labelled_correct"] == 1
    other = {"reference": "60,180", "question": "q2", "answer_type": "latex:cas", "label": 1, "problem_id": "7"}
    assert ar.audit(rows + [other])["problems"] == 3  # two problems sharing a reference are two
    assert a["rows_per_category"] == {
        "latex:cas (label 0)": 1,
        "latex:cas (label 1)": 1,
        "latex_trap:partial (label 0)": 1,
    }


def test_the_committed_audit_and_probe_rows_are_what_the_suite_holds():
    root = Path(__file__).resolve().parents[2]
    suite = ar.read_jsonl(ar.SUITE)
    committed = json.loads((root / "experiments/verifyrm/results/v6/ambiguous_refs.json").read_text())
    a = ar.audit(suite)
    assert committed["experiments/verifyrm/v4/latex_heldout.jsonl"] == json.loads(json.dumps(a))
    probe = ar.read_jsonl(root / "experiments/verifyrm/v6/ambiguous_refs.jsonl")
    assert len(probe) == a["cas_rows_labelled_correct"] == 7
    assert all(r["label"] == 0 and r["answer_type"].startswith("audit:") for r in probe)


def test_rescoring_relabels_the_misread_rows_from_committed_scores(tmp_path):
    row = lambda ref, t, label: {"reference": ref, "question": "q", "answer_type": t, "label": label}  # noqa: E731
    suite = [
        row("60,180", "latex:cas", 1),
        row("\\frac{3}{4}", "latex:cas", 1),
        row("\\frac{3}{4}", "latex_trap:sign", 0),
    ]
    paths = []
    # left out: a report of another suite version, and one of the suite's first rows only (--limit)
    for name, sha, n in (("now", "abc", 3), ("old", "other", 3), ("limited", "abc", 2)):
        scores = tmp_path / f"scores_latex_heldout_{name}.jsonl.gz"
        per_row = [
            {"row": i, "label": r["label"], "rm": p, "rule_strict": v}
            for i, (r, p, v) in enumerate(zip(suite[:n], (0.1, 0.9, 0.2), (1, 1, 0)))
        ]
        write_jsonl(scores, per_row)
        report = {"data_sha256": sha, "n": n, "config": {"threshold": 0.5}}
        (tmp_path / f"eval_latex_heldout_{name}.json").write_text(json.dumps(report))
        paths.append(scores)
    out = ar.rescore(suite, "abc", paths)
    assert list(out) == [str(paths[0])]
    e = out[str(paths[0])]
    assert e["misread_rows"] == 1
    assert e["rm"] == {"rejects_misread": 1, "suite_as_built": 2 / 3, "suite_relabelled": 1.0}
    assert e["rule_strict"] == {"rejects_misread": 0, "suite_as_built": 1.0, "suite_relabelled": 2 / 3}

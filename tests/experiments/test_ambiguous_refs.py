"""experiments/verifyrm/ambiguous_refs.py: which references the CAS misreads, and the audit's counts."""

from pathlib import Path

from tests.experiments import load_script

ar = load_script("ambiguous_refs", Path(__file__).resolve().parents[2] / "experiments/verifyrm")


def test_lists_and_multi_part_references_are_found_and_plain_values_are_not():
    assert ar.kind("60,180") == "list_as_number" and ar.kind("-125,343") == "list_as_number"
    assert ar.kind("1,234,567") == "list_as_number"  # a thousands number looks the same: the question decides
    assert ar.kind("324 ;(m-18)^{2}") == "first_part_only"
    for plain in ("60180", "\\frac{3}{4}", "(1, \\pi)", "1,2", "12,3456", "x \\ge 2"):
        assert ar.kind(plain) is None, plain


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
    assert a["rows_per_category"] == {
        "latex:cas (label 0)": 1,
        "latex:cas (label 1)": 1,
        "latex_trap:partial (label 0)": 1,
    }

"""docs/VERIFYRM.md's per-category table of the LaTeX suite against the committed evaluations it cites: a doc that
drifts from its numbers fails here."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments/verifyrm/results"
HEADER = "| category | rows | round 3's RM | round 4 | round 5 | strict rule | raw Math-Verify |"


def test_the_latex_category_table_is_what_the_committed_evaluations_say():
    lines = (ROOT / "docs/VERIFYRM.md").read_text().splitlines()
    start = lines.index(HEADER)
    table = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        table.append([c.strip().strip("*`") for c in line.strip("|").split("|")])
    evals = [
        json.loads((RESULTS / f).read_text())
        for f in (
            "v4/eval_latex_heldout_v3smollm2_s0.json",
            "v4/eval_latex_heldout_smollm2_s0.json",
            "v5/eval_latex_heldout_smollm2_s0.json",
        )
    ]
    v5 = evals[-1]
    expected = {
        "whole suite": [v5["judges"]["rm"]["n"]]
        + [e["judges"]["rm"]["accuracy"] for e in evals]
        + [v5["judges"]["rule_strict"]["accuracy"], v5["judges"]["math_verify"]["accuracy"]]
    }
    for cat, row in v5["per_answer_type"].items():
        expected[cat] = (
            [row["n"]] + [e["per_answer_type"][cat]["rm"] for e in evals] + [row["rule_strict"], row["math_verify"]]
        )
    assert [r[0] for r in table] == list(expected), "a category is missing or out of order"
    for name, *cells in table:
        n, *acc = expected[name]
        assert cells == [str(n)] + [f"{100 * a:.1f}" for a in acc], f"{name}: doc {cells}, evaluations {n} {acc}"

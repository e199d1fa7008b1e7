"""experiments/verifyrm/rounds_3_and_7.md's per-category table of the LaTeX suite against the committed evaluations it cites: a doc that
drifts from its numbers fails here."""

import json
from pathlib import Path

from tests.experiments import EXPERIMENTS, load_script, md_cells, md_tables

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments/verifyrm/results"
HEADER = (
    "| category | rows | round 3's RM | round 4 | round 5 | rows, corrected suite | round 6 | round 7 | strict rule | "
    "raw Math-Verify |"
)
report = load_script("report_v4", EXPERIMENTS / "verifyrm")  # its seeds and cells (pct1: one value, pct: mean ± sd)


def v7_summary() -> dict:
    """report_v4.py's summary of round 7 (results/v7/summary.json); it must cover every committed seed."""
    summary = json.loads((RESULTS / "v7/summary.json").read_text())["v7_smollm2"]
    found = report.load(RESULTS / "v7", "smollm2")  # {set: {seed: evaluation}}, as report_v4 reads them
    seeds = sorted({s for reps in found.values() for s in reps})
    assert summary["seeds"] == seeds, "rerun experiments/verifyrm/report_v4.py experiments/verifyrm/results/v7"
    return summary


def doc_table(starts: str) -> list[list[str]]:
    """The header and rows of experiments/verifyrm/rounds_3_and_7.md's one table whose header line starts so, as cells (names' markup
    stripped)."""
    (table,) = [
        t for t in md_tables((ROOT / "experiments/verifyrm/rounds_3_and_7.md").read_text()) if t[0].startswith(starts)
    ]
    return [[c.strip("*`") for c in md_cells(line)] for line in [table[0], *table[2:]]]


def test_the_latex_category_table_is_what_the_committed_evaluations_say():
    _, *table = doc_table(HEADER)
    evals = [
        json.loads((RESULTS / f).read_text())
        for f in (
            "v4/eval_latex_heldout_v3smollm2_s0.json",
            "v4/eval_latex_heldout_smollm2_s0.json",
            "v5/eval_latex_heldout_smollm2_s0.json",
        )
    ]
    # round 6 on the corrected suite, the rules beside it (the rounds before: the 2,491-row version)
    # round 7 on the corrected suite too (its mean over the seeds run, from report_v4.py's summary)
    v5, v6 = evals[-1], json.loads((RESULTS / "v6/eval_latex_heldout_smollm2_s0.json").read_text())
    v7 = v7_summary()["latex_heldout"]
    rules = ("rule_strict", "math_verify")
    for f in RESULTS.glob("v7/eval_latex_heldout_smollm2_s*.json"):  # the rows round 6 was scored on
        counts = {c: r["n"] for c, r in json.loads(f.read_text())["per_answer_type"].items()}
        assert counts == {c: r["n"] for c, r in v6["per_answer_type"].items()}, f"{f.name}: another suite"
    expected = {
        "whole suite": [str(v5["judges"]["rm"]["n"])]
        + [report.pct1(e["judges"]["rm"]["accuracy"]) for e in evals]
        + [str(v6["judges"]["rm"]["n"]), report.pct1(v6["judges"]["rm"]["accuracy"]), report.pct(v7["accuracy"])]
        + [report.pct1(v6["judges"][j]["accuracy"]) for j in rules]
    }
    for cat, row in v5["per_answer_type"].items():
        r6 = v6["per_answer_type"][cat]
        expected[cat] = (
            [str(row["n"])]
            + [report.pct1(e["per_answer_type"][cat]["rm"]) for e in evals]
            + [str(r6["n"]), report.pct1(r6["rm"]), report.pct(v7["per_category"][cat])]
            + [report.pct1(r6[j]) for j in rules]
        )
    assert [r[0] for r in table] == list(expected), "a category is missing or out of order"
    for name, *cells in table:
        assert cells == expected[name], f"{name}: doc {cells}, evaluations {expected[name]}"


def test_round_7s_per_seed_table_is_what_the_committed_evaluations_say():
    """Issue 69's one table: per seed, per category, time to train (each cell from results/v7, the mean from
    report_v4's summary)."""
    header, *rows = doc_table("| round 7, SmolLM2-135M |")
    table = {name: cells for name, *cells in rows}
    summary = v7_summary()
    seeds = [str(k) for k in summary["seeds"]]
    assert header[1:] == [f"seed {k}" for k in seeds] + ["mean ± sd"], "one column per committed seed, then the mean"
    per = summary["per_seed"]
    trains = {k: json.loads((RESULTS / f"v7/train_smollm2_s{k}.json").read_text()) for k in seeds}

    expected = {
        name: [report.pct1(per[k]["accuracy"][key]) for k in seeds] + [report.pct(summary[key]["accuracy"])]
        for name, key in (
            ("round 3's held-out", "heldout"),
            ("robustness suite", "robustness"),
            ("LaTeX suite", "latex_heldout"),
        )
    }
    expected["LaTeX suite AUROC"] = [f"{per[k]['latex_auroc']:.3f}" for k in seeds] + [
        report.num_sd(summary["latex_heldout"]["auroc"], 3)
    ]
    for cat, mean in sorted(summary["latex_heldout"]["per_category"].items()):
        expected[cat] = [report.pct1(per[k]["latex_per_category"][cat]) for k in seeds] + [report.pct(mean)]
    expected["training steps"] = [str(trains[k]["global_step"]) for k in seeds] + [""]
    expected["training minutes"] = [f"{trains[k]['train_seconds_total'] / 60:.0f}" for k in seeds] + [
        report.num_sd(summary["train"]["train_minutes"], 0)
    ]
    assert list(table) == list(expected), "a row is missing or out of order"
    for name, cells in table.items():
        assert cells == expected[name], f"{name}: doc {cells}, evaluations {expected[name]}"

"""docs/RESULTS.md's and the reward_hacking README's issue-15 tables against the committed report: every table the
report prints is copied verbatim, and the per-run held-out table (in experiments/reward_hacking/README.md) says what
each run's committed evaluations say (a doc that drifts from its numbers fails here)."""

import re
from pathlib import Path

from tests.experiments import load_script, md_cells, md_tables

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "experiments/reward_hacking/results"
rh = load_script("report")


def issue15_section() -> str:
    """The text of RESULTS.md's issue-15 section (from its heading to the next level-2 heading)."""
    doc = (ROOT / "docs/RESULTS.md").read_text()
    start = doc.index("## Can a static RM be hacked here")
    end = doc.find("\n## ", start + 1)
    return doc[start : end if end > 0 else None]


def test_the_reports_tables_in_results_md_are_copied_verbatim():
    """The main table stands in RESULTS.md, the per-evaluation table and the training signal in the experiment's
    README: each a verbatim copy of the report as it is now."""
    report = (RESULTS / "table.md").read_text()
    headers = {t[0] for t in md_tables(report)}
    in_results = [t for t in md_tables(issue15_section()) if t[0] in headers]
    readme = (ROOT / "experiments/reward_hacking/README.md").read_text()
    in_readme = [t for t in md_tables(readme) if t[0] in headers]
    assert any(t[0].startswith("| condition | seeds | rollouts/run |") for t in in_results)  # the main table
    assert len({t[0] for t in in_readme}) >= 3  # the main table, the per-evaluation table, the training signal
    for t in in_results + in_readme:
        assert "\n".join(t) in report, f"table not in table.md as it is now:\n{t[0]}\n{t[2]}"


def test_the_per_run_table_matches_each_runs_committed_evaluations():
    readme = (ROOT / "experiments/reward_hacking/README.md").read_text()
    (table,) = [t for t in md_tables(readme) if t[0].startswith("| run | step 0 | 100 |")]
    steps = [int(re.sub(r"\D", "", c) or 0) for c in md_cells(table[0])[1:]]
    assert steps == [0, 100, 200, 300, 400]
    named = set()
    for row in table[2:]:
        name, *cells = md_cells(row)
        condition, seed = name.rsplit(" s", 1)
        named.add(f"{condition}-s{seed}")
        evals = {e["step"]: rh.heldout(e) for e in rh.records(RESULTS / f"runs/{condition}-s{seed}/evals.jsonl")}
        for step, cell in zip(steps, cells, strict=True):
            if step in evals:
                assert cell == rh.pct(evals[step]), f"{name} step {step}: README {cell}, logs {rh.pct(evals[step])}"
            else:  # a step the committed logs do not have: no number may stand there
                assert not re.search(r"\d", cell), f"{name} step {step}: {cell} but the logs have no evaluation"
    # every committed run that was evaluated past step 0 has its row
    runs = {d.name for d in (RESULTS / "runs").iterdir() if len(rh.records(d / "evals.jsonl")) > 1}
    assert runs <= named, f"runs without a row in the README: {sorted(runs - named)}"


def test_the_rl_learns_comparison_in_results_md_is_the_reports_as_it_is_now():
    """RESULTS.md's issue-67 comparison table is report.py's, verbatim: a finished run whose logs land without the doc
    being updated fails here."""
    doc = (ROOT / "docs/RESULTS.md").read_text()
    start = doc.index("## RL that learns")
    section = doc[start : doc.index("\n## ", start + 1)]
    report = (ROOT / "experiments/rl_learns/results/table.md").read_text()
    for head in ("| condition | seeds | collapsed |", "| condition | RM accuracy"):  # held-out; RM and signal
        (reported,) = [t for t in md_tables(report) if t[0].startswith(head)]
        (copied,) = [t for t in md_tables(section) if t[0].startswith(head)]
        assert copied == reported, "RESULTS.md's comparison tables differ from results/table.md: rerun report.py"


def test_issue_106s_table_in_results_md_is_the_reports_as_it_is_now():
    """RESULTS.md's issue-106 block (per seed against the pre-registered targets, the judgement) is report.py's, as
    table.md has it now."""
    doc = (ROOT / "docs/RESULTS.md").read_text()
    block = doc.split("<!-- report.py:verifier -->\n", 1)[1].split("<!-- /report.py:verifier -->", 1)[0]
    report = (ROOT / "experiments/rl_learns/results/table.md").read_text()
    assert "| condition, seed |" in block and block in report, "RESULTS.md's issue-106 table differs: rerun report.py"


def test_the_rl_learns_monitor_rows_in_results_md_are_the_reports():
    """RESULTS.md's out-of-sample monitor table says what report.py's summary.json (every finished run) and
    monitor_retune.json (the runs finished after the retuning) say: runs, collapses flagged in time, healthy runs
    flagged, recall and precision."""
    import json

    doc = (ROOT / "docs/RESULTS.md").read_text()
    start = doc.index("## RL that learns")
    section = doc[start : doc.index("\n## ", start + 1)]
    (rows,) = [t[2:] for t in md_tables(section) if t[0].startswith("| monitor, runs |")]
    cells = [md_cells(r)[1:] for r in rows]
    res = ROOT / "experiments/rl_learns/results"
    every = json.loads((res / "summary.json").read_text())["monitor_out_of_sample"]
    test = json.loads((res / "monitor_retune.json").read_text())["test"]
    want = [
        [every["collapsed"] + every["not_collapsed"], every["collapsed_flagged_in_time"], every["collapsed"],
         every["not_collapsed_flagged"], every["not_collapsed"], every["recall"], every["precision"]],
    ] + [
        [t["collapsed"] + t["not_collapsed"], t["in_time"], t["collapsed"], t["false_flagged"], t["not_collapsed"],
         t["recall"], t["precision"]]
        for t in (test["frozen"], test["retuned"])
    ]  # fmt: skip
    assert cells == [
        [str(n), f"{a} of {b}", f"{c} of {d}", f"{rec:.2f}", f"{prec:.2f}"] for n, a, b, c, d, rec, prec in want
    ], "RESULTS.md's monitor table differs from summary.json / monitor_retune.json: update it"


def test_rl_learns_summary_holds_the_other_scripts_reports_as_they_are_now():
    """summary.json is the experiment's one file of numbers: it carries monitor_retune.py's, hack_transfer.py's,
    costs.py's and the RMs' records verbatim (a script rerun without report.py after it fails here)."""
    import json

    res = ROOT / "experiments/rl_learns/results"
    summary = json.loads((res / "summary.json").read_text())
    for name in ("monitor_retune", "hack_transfer", "costs", "rms"):
        assert summary[name] == json.loads((res / f"{name}.json").read_text()), f"rerun report.py after {name}"


def test_the_rm_replay_table_in_the_reward_hacking_readme_is_the_replays():
    """The reward_hacking README's replay table (labelled-set accuracy after the replayed RM updates, per arm and
    seed) says what rm_replay.py's summary.json says, one column per replayed seed."""
    import json

    readme = (ROOT / "experiments/reward_hacking/README.md").read_text()
    (table,) = [t for t in md_tables(readme) if t[0].startswith("| negatives replayed |")]
    rows = [md_cells(x) for x in table]
    seeds = [int(c.removeprefix("seed ")) for c in rows[0][1:]]
    arms = json.loads((RESULTS / "rm_replay/summary.json").read_text())["arms"]
    label = {"all (as the run had them)": "all"} | {
        f"{' + '.join(f'`{k}`' for k in a.removeprefix('only:').split('+'))} only": a for a in arms if a != "all"
    }
    assert {label[r[0]] for r in rows[2:]} == set(arms), "the table needs one row per replayed arm"
    for r in rows[2:]:
        runs = arms[label[r[0]]]["runs"]
        assert sorted(int(k.rsplit("-s", 1)[1]) for k in runs) == seeds, f"{r[0]}: one column per replayed seed"
        assert r[1:] == [f"{100 * runs[f'cooper_new-s{s}']['accuracy_end']:.1f}" for s in seeds], r[0]

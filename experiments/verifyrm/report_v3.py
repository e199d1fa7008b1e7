"""Summary of the VerifyRM v3 runs (run_v3.sh): mean +- sd over training seeds per backbone, next to the strict
rule verifier, the lenient one and raw Math-Verify, on the held-out and the robustness sets; targets checked.

usage: python experiments/verifyrm/report_v3.py experiments/verifyrm/results/v3
Writes summary.json and table.md into that directory.
"""

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from cooper_rl.io import atomic_write_json, atomic_write_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from stats import mean_sd as ms  # noqa: E402  (experiments/stats.py)
from stats import train_seconds  # noqa: E402

R = Path(sys.argv[1] if len(sys.argv) > 1 else "experiments/verifyrm/results/v3")
TARGETS = {
    "heldout_accuracy": 0.95,
    "heldout_auroc": 0.98,
    "robustness_accuracy": 0.95,
    "robustness_min_category": 0.90,
}
RULES = ("rule_strict", "rule_lenient", "math_verify")


def fmt(d, pct=True, digits=3):
    if d is None:
        return "-"
    if pct:
        return f"{100 * d['mean']:.1f} ± {100 * d['sd']:.1f}"
    return f"{d['mean']:.{digits}f} ± {d['sd']:.{digits}f}"


def group_accuracy(per_type: dict, judge: str, prefix: str) -> float | None:
    """Row-weighted accuracy of `judge` over the categories named prefix* (fmt: format variants, trap: traps)."""
    cats = [v for c, v in per_type.items() if c.startswith(prefix)]
    n = sum(v["n"] for v in cats)
    return sum(v["n"] * v[judge] for v in cats) / n if n else None


evals = defaultdict(dict)  # (set, backbone) -> seed -> report
for f in sorted(R.glob("eval_*_s*.json")):
    m = re.fullmatch(r"eval_(heldout|robustness)_(.+)_s(\d+)\.json", f.name)
    if m:
        evals[(m.group(1), m.group(2))][int(m.group(3))] = json.loads(f.read_text())
trains = defaultdict(dict)
for f in sorted(R.glob("train_*_s*.json")):
    m = re.fullmatch(r"train_(.+)_s(\d+)\.json", f.name)
    if m:
        trains[m.group(1)][int(m.group(2))] = json.loads(f.read_text())

backbones = sorted({b for _, b in evals})
summary = {"backbones": {}, "rules": {}, "targets": TARGETS}
for b in backbones:
    entry = {"train": {}}
    tr = trains.get(b, {})
    if tr:
        entry["train"] = {
            "seeds": sorted(tr),
            # every process of a run (stats.train_seconds; resumed before the total was recorded: unknown, left out)
            "train_minutes": ms([train_seconds(t) / 60 for t in tr.values() if train_seconds(t) is not None]),
            "resumed_seeds": sorted(s for s, t in tr.items() if train_seconds(t) is None),
            "val_accuracy": ms([t["val_accuracy"] for t in tr.values()]),
            "data_rows": sorted({t.get("data_rows") for t in tr.values()}),
            "data_sha256": sorted({t.get("data_sha256") for t in tr.values()}),
        }
    for s in ("heldout", "robustness"):
        reps = evals.get((s, b), {})
        if not reps:
            continue
        rm = [r["judges"]["rm"] for r in reps.values()]
        cats = sorted({c for r in reps.values() for c in r["per_answer_type"]})
        per_cat = {
            c: ms([r["per_answer_type"][c]["rm"] for r in reps.values() if c in r["per_answer_type"]]) for c in cats
        }
        entry[s] = {
            "seeds": sorted(reps),
            "accuracy": ms([m["accuracy"] for m in rm]),
            "auroc": ms([m["auroc"] for m in rm]),
            "ece": ms([m["ece"] for m in rm]),
            "per_category": per_cat,
            "min_category": ms(
                [min(r["per_answer_type"][c]["rm"] for c in r["per_answer_type"]) for r in reps.values()]
            ),
            "formats": ms([group_accuracy(r["per_answer_type"], "rm", "fmt:") for r in reps.values()]),
            "traps": ms([group_accuracy(r["per_answer_type"], "rm", "trap:") for r in reps.values()]),
        }
        any_rep = next(iter(reps.values()))
        summary["rules"][s] = {
            j: {
                "accuracy": any_rep["judges"][j]["accuracy"],
                "per_category": {c: v[j] for c, v in any_rep["per_answer_type"].items()},
                "formats": group_accuracy(any_rep["per_answer_type"], j, "fmt:"),
                "traps": group_accuracy(any_rep["per_answer_type"], j, "trap:"),
                "n": any_rep["n"],
            }
            for j in RULES
        }
    h, rb = entry.get("heldout"), entry.get("robustness")
    entry["targets_met"] = {
        "heldout_accuracy": h is not None and h["accuracy"]["mean"] >= TARGETS["heldout_accuracy"],
        "heldout_auroc": h is not None and h["auroc"]["mean"] >= TARGETS["heldout_auroc"],
        "robustness_accuracy": rb is not None and rb["accuracy"]["mean"] >= TARGETS["robustness_accuracy"],
        # on the mean over seeds of each category (the table's "worst category" is each seed's own minimum)
        "robustness_min_category": rb is not None
        and min(v["mean"] for v in rb["per_category"].values()) >= TARGETS["robustness_min_category"],
        # the issue: "above the rule verifier on the format variants" (the strict rule is the project's verifier)
        "formats_above_strict_rule": rb is not None
        and rb["formats"] is not None
        and rb["formats"]["mean"] > (summary["rules"]["robustness"]["rule_strict"]["formats"] or 0.0),
    }
    summary["backbones"][b] = entry

lines = [
    "| judge | held-out acc % | held-out AUROC | held-out ECE | robustness acc % | formats % | traps % "
    "| worst category % (per seed) | train min |"
]
lines.append("|---" * 9 + "|")
for b, e in summary["backbones"].items():
    h, rb = e.get("heldout", {}), e.get("robustness", {})
    seeds = len(e["train"].get("seeds", []))
    lines.append(
        f"| RM {b} ({seeds} seed{'s' if seeds != 1 else ''}) | {fmt(h.get('accuracy'))} "
        f"| {fmt(h.get('auroc'), False)} | {fmt(h.get('ece'), False)} | {fmt(rb.get('accuracy'))} "
        f"| {fmt(rb.get('formats'))} | {fmt(rb.get('traps'))} | {fmt(rb.get('min_category'))} "
        f"| {fmt(e['train'].get('train_minutes'), False, 0)}"
        f"{' (n=' + str(e['train']['train_minutes']['n']) + ')' if e['train'].get('train_minutes') else ''} |"
    )
for j in RULES:
    h = summary["rules"].get("heldout", {}).get(j)
    rb = summary["rules"].get("robustness", {}).get(j)
    worst = min(rb["per_category"].values()) if rb else None
    lines.append(
        f"| {j} | {100 * h['accuracy']:.1f} | - | - | {100 * rb['accuracy']:.1f} | {100 * rb['formats']:.1f} "
        f"| {100 * rb['traps']:.1f} | {100 * worst:.1f} | - |"
        if h and rb
        else f"| {j} |" + " - |" * 8
    )
for b, e in summary["backbones"].items():
    tr = e["train"]
    if tr:
        lines.append(
            f"\nRM {b}: seeds {tr['seeds']}, training data {tr['data_rows']} rows (sha256 "
            f"{', '.join(str(x)[:12] for x in tr['data_sha256'])}), validation accuracy {fmt(tr['val_accuracy'])} %; "
            f"targets met: {', '.join(k for k, v in e['targets_met'].items() if v) or 'none'}; "
            f"not met: {', '.join(k for k, v in e['targets_met'].items() if not v) or 'none'}."
        )
cats = sorted({c for e in summary["backbones"].values() for c in e.get("robustness", {}).get("per_category", {})})
if cats:
    lines += ["", "Robustness suite, accuracy % per category (RM: mean ± sd over seeds):", ""]
    lines.append(
        "| category | n | " + " | ".join(f"RM {b}" for b in summary["backbones"]) + " | " + " | ".join(RULES) + " |"
    )
    lines.append("|---" * (2 + len(summary["backbones"]) + len(RULES)) + "|")
    rules = summary["rules"]["robustness"]
    n = next(next(iter(v.values())) for (kind, _), v in evals.items() if kind == "robustness")["per_answer_type"]
    for c in cats:
        rm_cols = [fmt(e["robustness"]["per_category"].get(c)) for e in summary["backbones"].values()]
        rule_cols = [f"{100 * rules[j]['per_category'][c]:.1f}" for j in RULES]
        lines.append(f"| {c} | {n[c]['n']} | " + " | ".join(rm_cols + rule_cols) + " |")
atomic_write_json(R / "summary.json", summary)
atomic_write_text(R / "table.md", "\n".join(lines) + "\n")
print("\n".join(lines))

"""A candidate RM against its predictions and the decision rule of predictions.md (each written before its training):
the shipped RM and the candidate side by side on every check, each prediction held or not, and whether the candidate
replaces the shipped files. Two rules (RULES): round 8 against the first shipped RM, and rank 32 against round 8.

  python experiments/verifyrm/shipped/decide.py [--shipped experiments/verifyrm/results/shipped]
      [--candidate experiments/verifyrm/results/round8]
  python experiments/verifyrm/shipped/decide.py --rule rank32 --shipped experiments/verifyrm/results/round8 \
      --candidate experiments/verifyrm/results/round8_r32

Prints a markdown table; writes CANDIDATE/decision.json. Reads the evaluations build.sh committed (summary.json of
report_v4.py, the scores of the outside checks); a check not scored yet is reported as missing and decides nothing.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from package import SETS, outside_checks  # noqa: E402

from cooper_rl.io import atomic_write_json  # noqa: E402

# predictions.md, per rule: the suites' predicted ranges (low, high) in %; the outside checks' (accepted low, rejected
# low); the rule's floor per suite, points below the shipped RM ("drop") or an absolute accuracy ("floor")
RULES = {
    "round8": {  # "Round 8", written 2026-12-07 before its training
        "label": "round 8",
        "sets": {"heldout": (99.2, 99.9), "robustness": (98.5, 99.5), "latex_heldout": (93.0, 95.5)},
        "outside": {"svamp_cots": (98.0, 98.0), "long_check": (90.0, 90.0)},
        "drop": {"heldout": 0.3, "robustness": 0.3, "latex_heldout": 0.5},
        "floor": {},
    },
    "rank32": {  # "Rank 32: does a larger adapter recover the LaTeX suite?", 2026-12-07 11:45 UTC, before its training
        "label": "rank 32 (fp16)",
        "sets": {"heldout": (99.6, 99.9), "robustness": (99.4, 99.9), "latex_heldout": (94.5, 95.5)},
        "outside": {"long_check": (90.0, 90.0)},
        "drop": {"heldout": 0.3, "robustness": 0.3},
        "floor": {"latex_heldout": 94.93},  # round 7's three-seed mean (95.43) - 0.5
    },
}
PREFIX_MAX = 10.0  # % of the probe's prefix rows accepted (last digit dropped; first digit alone)


def accuracies(results: Path) -> dict:
    """{set: accuracy %} of the suites scored (report_v4.py's summary.json)."""
    summary = json.loads((results / "summary.json").read_text())[f"{results.name}_smollm2"]
    return {s: 100 * summary[s]["accuracy"]["mean"] for s in SETS if s in summary}


def prefix_accepted(results: Path) -> dict:
    """{'prefix': %, 'first_digit': %} of the prefix probe's cut answers the RM accepts (reward >= 0.5)."""
    path = results / "scores_prefix_probe_smollm2_s0.jsonl.gz"
    if not path.is_file():
        return {}
    with gzip.open(path, "rt") as f:
        rows = [json.loads(line) for line in f]
    out = {}
    for kind in ("prefix", "first_digit"):
        scores = [r["rm"] for r in rows if r["answer_type"] == f"probe:{kind}"]
        out[kind] = 100 * sum(s >= 0.5 for s in scores) / len(scores)
    return out


def decide(old: Path, new: Path, which: str = "round8") -> tuple[list[str], dict]:
    """(markdown lines, decision) of the candidate's evaluations in ``new`` against the shipped RM's in ``old``, by
    RULES[which]."""
    spec = RULES[which]
    acc_old, acc_new = accuracies(old), accuracies(new)
    out_old, out_new = outside_checks(old), outside_checks(new)
    pre_old, pre_new = prefix_accepted(old), prefix_accepted(new)
    lines = [f"| check | shipped | {spec['label']} | predicted | prediction | rule |", "|---|---|---|---|---|---|"]
    rule, held = {}, {}
    for s, (lo, hi) in spec["sets"].items():
        if s not in acc_new:
            lines.append(f"| {s} | {acc_old[s]:.1f} | missing | {lo}–{hi} | - | - |")
            continue
        held[s] = lo <= round(acc_new[s], 1) <= hi
        if s in spec["floor"]:
            rule[s], why = acc_new[s] >= spec["floor"][s] - 1e-9, f"below {spec['floor'][s]}"
        else:
            rule[s], why = acc_new[s] >= acc_old[s] - spec["drop"][s] - 1e-9, f"more than {spec['drop'][s]} below"
        lines.append(
            f"| {s} | {acc_old[s]:.1f} | {acc_new[s]:.1f} | {lo}–{hi} | {'held' if held[s] else 'missed'} "
            f"| {'ok' if rule[s] else why} |"
        )
    for name in spec["outside"]:  # the checks the rule's predictions named (later ones: the card and docs report them)
        a_lo, r_lo = spec["outside"][name]
        o = out_old.get(name)
        shipped = f"{100 * o[1]:.1f} / {100 * o[2]:.1f}" if o else "missing"
        if name not in out_new:
            lines.append(f"| {name} (accepted / rejected) | {shipped} | missing | ≥ {a_lo} / ≥ {r_lo} | - | - |")
            continue
        _, a, r = out_new[name]
        held[name] = 100 * a >= a_lo and 100 * r >= r_lo
        if name == "long_check":
            rule[name] = held[name]
        lines.append(
            f"| {name} (accepted / rejected) | {shipped} | {100 * a:.1f} / {100 * r:.1f} | ≥ {a_lo} / ≥ {r_lo} "
            f"| {'held' if held[name] else 'missed'} | {('ok' if rule[name] else 'missed') if name in rule else '-'} |"
        )
    if pre_new:
        held["prefix_probe"] = rule["prefix_probe"] = all(v <= PREFIX_MAX for v in pre_new.values())
        fmt = lambda p: " / ".join(f"{p[k]:.1f}" for k in ("prefix", "first_digit")) if p else "missing"  # noqa: E731
        verdict = "held" if held["prefix_probe"] else "missed"
        lines.append(
            f"| prefix probe (last digit dropped / first digit alone, % accepted) | {fmt(pre_old)} | {fmt(pre_new)} "
            f"| ≤ {PREFIX_MAX} / ≤ {PREFIX_MAX} | {verdict} | {'ok' if rule['prefix_probe'] else 'missed'} |"
        )
    else:
        lines.append("| prefix probe | - | missing | - | - | - |")
    complete = set(rule) == {*spec["sets"], "long_check", "prefix_probe"}
    replaces = complete and all(rule.values())
    verdict = (
        (f"{spec['label']} replaces the shipped files" if replaces else "the shipped RM stays")
        if complete
        else "undecided"
    )
    lines += ["", f"Decision rule (predictions.md): {verdict}."]
    decision = {"complete": complete, "replaces": replaces, "rule": rule, "predictions_held": held,
                "accuracy": {"shipped": acc_old, which: acc_new},
                "outside": {"shipped": out_old, which: out_new},
                "prefix_accepted": {"shipped": pre_old, which: pre_new}}  # fmt: skip
    return lines, decision


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shipped", default="experiments/verifyrm/results/shipped")
    ap.add_argument("--candidate", default="experiments/verifyrm/results/round8")
    ap.add_argument(
        "--rule", choices=sorted(RULES), default="round8", help="whose pre-registered rule (predictions.md)"
    )
    args = ap.parse_args()
    lines, decision = decide(Path(args.shipped), Path(args.candidate), args.rule)
    print("\n".join(lines))
    atomic_write_json(Path(args.candidate) / "decision.json", decision)


if __name__ == "__main__":
    main()

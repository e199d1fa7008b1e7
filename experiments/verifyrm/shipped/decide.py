"""Round 8 against its predictions and the decision rule of predictions.md (written before its training): the
shipped RM and round 8 side by side on every check, each prediction held or not, and whether round 8 replaces the
shipped files.

  python experiments/verifyrm/shipped/decide.py [--shipped experiments/verifyrm/results/shipped]
      [--candidate experiments/verifyrm/results/round8]

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

# predictions.md, round 8: (low, high) in %, per check; outside checks (accepted low, rejected low)
PREDICTED_SETS = {"heldout": (99.2, 99.9), "robustness": (98.5, 99.5), "latex_heldout": (93.0, 95.5)}
PREDICTED_OUTSIDE = {"svamp_cots": (98.0, 98.0), "long_check": (90.0, 90.0)}
PREFIX_MAX = 10.0  # % of the probe's prefix rows accepted (last digit dropped; first digit alone)
RULE_DROP = {"heldout": 0.3, "robustness": 0.3, "latex_heldout": 0.5}  # points below the shipped RM allowed


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


def decide(old: Path, new: Path) -> tuple[list[str], dict]:
    """(markdown lines, decision) of the candidate's evaluations in ``new`` against the shipped RM's in ``old``."""
    acc_old, acc_new = accuracies(old), accuracies(new)
    out_old, out_new = outside_checks(old), outside_checks(new)
    pre_old, pre_new = prefix_accepted(old), prefix_accepted(new)
    lines = ["| check | shipped | round 8 | predicted | prediction | rule |", "|---|---|---|---|---|---|"]
    rule, held = {}, {}
    for s, (lo, hi) in PREDICTED_SETS.items():
        if s not in acc_new:
            lines.append(f"| {s} | {acc_old[s]:.1f} | missing | {lo}–{hi} | - | - |")
            continue
        held[s] = lo <= round(acc_new[s], 1) <= hi
        rule[s] = acc_new[s] >= acc_old[s] - RULE_DROP[s] - 1e-9
        lines.append(
            f"| {s} | {acc_old[s]:.1f} | {acc_new[s]:.1f} | {lo}–{hi} | {'held' if held[s] else 'missed'} "
            f"| {'ok' if rule[s] else f'more than {RULE_DROP[s]} below'} |"
        )
    for name in PREDICTED_OUTSIDE:  # the checks round 8's rule named (later ones: the card and docs report them)
        a_lo, r_lo = PREDICTED_OUTSIDE[name]
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
    complete = set(rule) == {*PREDICTED_SETS, "long_check", "prefix_probe"}
    replaces = complete and all(rule.values())
    verdict = (
        ("round 8 replaces the shipped files" if replaces else "the shipped RM stays") if complete else "undecided"
    )
    lines += ["", f"Decision rule (predictions.md): {verdict}."]
    decision = {"complete": complete, "replaces": replaces, "rule": rule, "predictions_held": held,
                "accuracy": {"shipped": acc_old, "round8": acc_new},
                "outside": {"shipped": out_old, "round8": out_new},
                "prefix_accepted": {"shipped": pre_old, "round8": pre_new}}  # fmt: skip
    return lines, decision


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shipped", default="experiments/verifyrm/results/shipped")
    ap.add_argument("--candidate", default="experiments/verifyrm/results/round8")
    args = ap.parse_args()
    lines, decision = decide(Path(args.shipped), Path(args.candidate))
    print("\n".join(lines))
    atomic_write_json(Path(args.candidate) / "decision.json", decision)


if __name__ == "__main__":
    main()

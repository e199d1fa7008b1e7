"""Table of held-out accuracy at step 0 (baseline = the untrained policy, identical in every run) and at the
last evaluation of each run, plus RM accuracy, training signals, wall time, the hacking monitor's flags and
examples of rollouts the reward liked but the rule verifier rejected.

usage: python experiments/first_comparison/report.py RUNS_DIR RESULTS_DIR [UNTIL_STEP]
Every run is cut at the last evaluation step all runs reached (or UNTIL_STEP), so all have the same budget.
writes RESULTS_DIR/table.md, summary.json, examples.md
"""

import json
import sys
from collections import Counter
from pathlib import Path

from cooper_rl.io import read_jsonl  # noqa: E402


def jsonl(path):
    """Rows of a run log (missing file: [], a line cut by a kill: skipped)."""
    return read_jsonl(path, missing_ok=True)


runs, out = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def windows(metrics: list[dict], key: str, width: int = 10) -> list[tuple[int, float]]:
    """(last step of the window, mean of key) over consecutive windows of `width` steps."""
    return [
        (metrics[min(i + width, len(metrics)) - 1]["step"], mean(m[key] for m in metrics[i : i + width]))
        for i in range(0, len(metrics), width)
    ]


# Same budget for every run: everything is cut at the last evaluation step all runs have reached.
MODES = [
    m for m in ("rule", "model", "cooper") if jsonl(runs / m / "evals.jsonl") and jsonl(runs / m / "metrics.jsonl")
]
until = (
    int(sys.argv[3])
    if len(sys.argv) > 3
    else min((jsonl(runs / m / "evals.jsonl")[-1]["step"] for m in MODES), default=0)
)
upto = lambda rows: [r for r in rows if r.get("step") is not None and r["step"] <= until]

rows, summary, examples = [], {"budget_steps": until}, []
for mode in MODES:
    ev, metrics = upto(jsonl(runs / mode / "evals.jsonl")), upto(jsonl(runs / mode / "metrics.jsonl"))
    first, last = ev[0], ev[-1]
    if "baseline" not in summary and first["step"] == 0:
        summary["baseline"] = {"step": 0, "policy": first["policy"]}
    timing = upto(jsonl(runs / mode / "timing.jsonl"))
    tail = metrics[-20:]
    summary[mode] = {
        "step": last["step"],
        "steps_trained": metrics[-1]["step"] if metrics else 0,
        "policy": last["policy"],
        "rm": last.get("rm"),
        "rm_at_start": first.get("rm"),
        "rm_accuracy_by_eval": [(e["step"], e["rm"]["accuracy"]) for e in ev if e.get("rm")],
        "policy_by_eval": [(e["step"], {n: d["avg@k_strict"] for n, d in e["policy"].items()}) for e in ev],
        "train_rule_accuracy_last20": mean(m["rule_accuracy"] for m in tail),
        "train_reward_last20": mean(m["reward_mean"] for m in tail),
        "train_rule_accuracy_by_10_steps": windows(metrics, "rule_accuracy"),
        "train_reward_by_10_steps": windows(metrics, "reward_mean"),
        "hacking_warnings": [m["step"] for m in metrics if m.get("hacking_warning")],
        "wall_seconds": {
            "train_steps": sum(t["step_seconds"] for t in timing),
            "evals": sum(e.get("eval_seconds", 0) for e in ev),
            "median_step": sorted(t["step_seconds"] for t in timing)[len(timing) // 2] if timing else None,
        },
    }
    if mode == "cooper":  # the RM side: how many preference pairs it got and what it did with them
        invalid = Counter()
        for m in metrics:
            invalid.update(
                {k.removeprefix("rm/invalid/"): v for k, v in m.items() if k.startswith("rm/invalid/") and v}
            )
        losses = [m for m in metrics if m.get("rm/rm_loss") is not None]
        summary[mode]["rm_updates"] = {
            "pairs": sum(m.get("rm/n_pairs", 0) for m in metrics),
            "valid_pairs": sum(m.get("rm/n_valid", 0) for m in metrics),
            "steps_with_an_update": len(losses),
            "invalid_reasons": dict(invalid),
            "pair_loss_by_10_steps": windows(losses, "rm/rm_loss") if losses else [],
        }
    if mode in ("model", "cooper"):
        rollouts = upto(jsonl(runs / mode / "rollouts.jsonl"))
        if rollouts:
            n = rollouts[-1]["step"]
            quarter = [r for r in rollouts if r["step"] > 0.75 * n]
            fooled = [r for r in quarter if not r["verdict"]]
            summary[mode]["last_quarter"] = {
                "rollouts": len(quarter),
                "wrong": len(fooled),
                "wrong_with_reward_ge_0.5": sum(r["reward"] >= 0.5 for r in fooled),
                "mean_reward_wrong": mean(r["reward"] for r in fooled),
                "mean_reward_right": mean(r["reward"] for r in quarter if r["verdict"]),
            }
            seen = set()
            for r in sorted(fooled, key=lambda r: -r["reward"]):
                if r["completion"] not in seen and len(seen) < 3:  # three different texts per run
                    seen.add(r["completion"])
                    examples.append((mode, r))

runs_only = {k: v for k, v in summary.items() if isinstance(v, dict)}
names = sorted({n for v in runs_only.values() for n in v["policy"]})
short = lambda n: Path(n).stem if "/" in n else n
lines = [
    "| run | step | " + " | ".join(f"{short(n)} avg@k" for n in names) + " | mean |",
    "|---" * (len(names) + 3) + "|",
]
for key, v in runs_only.items():
    accs = [v["policy"][n]["avg@k_strict"] for n in names if n in v["policy"]]
    lines.append(
        f"| {key} | {v['step']} | "
        + " | ".join(f"{100 * a:.1f}%" for a in accs)
        + f" | {100 * sum(accs) / len(accs):.1f}% |"
    )
lines += [
    "",
    "Lenient avg@k (last number in the text when no marker) / mean new tokens per sample:",
    "",
    "| run | step | " + " | ".join(f"{short(n)}" for n in names) + " |",
    "|---" * (len(names) + 2) + "|",
]
for key, v in runs_only.items():
    lines.append(
        f"| {key} | {v['step']} | "
        + " | ".join(
            f"{100 * v['policy'][n]['avg@k_lenient']:.1f}% / {v['policy'][n]['mean_new_tokens']:.0f}"
            for n in names
            if n in v["policy"]
        )
        + " |"
    )
steps = sorted({st for v in runs_only.values() for st, _ in v.get("policy_by_eval", [])})
lines += [
    "",
    "Strict avg@k at every evaluation (" + " / ".join(short(n) for n in names) + "; mean):",
    "",
    "| run | " + " | ".join(f"step {st}" for st in steps) + " |",
    "|---" * (len(steps) + 1) + "|",
]
for key, v in runs_only.items():
    if "policy_by_eval" not in v:
        continue
    at = dict(v["policy_by_eval"])
    cell = lambda d: (
        " / ".join(f"{100 * d[n]:.1f}" for n in names) + f"; **{100 * sum(d[n] for n in names) / len(names):.1f}**"
    )
    lines.append(f"| {key} | " + " | ".join(cell(at[st]) if st in at else "" for st in steps) + " |")
table = "\n".join(lines)
print(table)
(out / "table.md").write_text(table + "\n")
(out / "summary.json").write_text(json.dumps(summary, indent=2))
ex = ["# Rollouts rewarded but wrong (last quarter of training, highest reward first)\n"]
for mode, r in examples:
    text = r["completion"] if len(r["completion"]) <= 700 else r["completion"][:700] + " …"
    ex.append(
        f"## {mode}, step {r['step']}: reward {r['reward']:.3f}, rule verdict wrong (reference {r['reference']})\n\n"
        f"**Question.** {r['question']}\n\n```text\n{text}\n```\n"
    )
(out / "examples.md").write_text("\n".join(ex))

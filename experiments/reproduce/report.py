"""Table of held-out accuracy at step 0 (baseline = the untrained policy, identical in every run) and at the
last evaluation of each run, plus RM accuracy and training signals.

usage: python experiments/reproduce/report.py RUNS_DIR RESULTS_DIR
"""

import json
import sys
from pathlib import Path

runs, out = Path(sys.argv[1]), Path(sys.argv[2])
rows, summary = [], {}
for mode in ("rule", "model", "cooper"):
    ev = [json.loads(x) for x in (runs / mode / "evals.jsonl").read_text().splitlines()] if (runs / mode / "evals.jsonl").is_file() else []
    if not ev:
        continue
    first, last = ev[0], ev[-1]
    if "baseline" not in summary and first["step"] == 0:
        summary["baseline"] = {"step": 0, "policy": first["policy"]}
    metrics = [json.loads(x) for x in (runs / mode / "metrics.jsonl").read_text().splitlines()]
    tail = metrics[-20:]
    summary[mode] = {"step": last["step"], "policy": last["policy"], "rm": last.get("rm"),
                     "rm_at_start": first.get("rm"),
                     "train_rule_accuracy_last20": sum(m["rule_accuracy"] for m in tail) / len(tail),
                     "train_reward_last20": sum(m["reward_mean"] for m in tail) / len(tail),
                     "hacking_warnings": [m["step"] for m in metrics if m.get("hacking_warning")]}
names = sorted({n for v in summary.values() for n in v["policy"]})
lines = ["| run | step | " + " | ".join(f"{Path(n).stem if '/' in n else n} avg@k" for n in names) + " | mean |",
         "|---" * (len(names) + 3) + "|"]
for key, v in summary.items():
    accs = [v["policy"][n]["avg@k_strict"] for n in names if n in v["policy"]]
    lines.append(f"| {key} | {v['step']} | " + " | ".join(f"{100 * a:.1f}%" for a in accs) + f" | {100 * sum(accs) / len(accs):.1f}% |")
table = "\n".join(lines)
print(table)
(out / "table.md").write_text(table + "\n")
(out / "summary.json").write_text(json.dumps(summary, indent=2))

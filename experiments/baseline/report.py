"""Markdown table of the baseline evaluation (reads experiments/baseline/results/*/summary.json)."""

import json
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
print(
    "| eval set | problems | k | avg@k strict | pass@k strict | avg@k lenient | pass@k lenient | answered (boxed/####) | mean new tokens |"
)
print("|---|---|---|---|---|---|---|---|---|")
for name in ("builtin", "gsm8k"):
    path = RESULTS / name / "summary.json"
    if not path.is_file():
        continue
    s = json.loads(path.read_text())
    for ds, m in s["per_dataset"].items():
        pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
        print(
            f"| {ds} | {m['n_problems']} | {m['k']} | {pct(m['avg@k_strict'])} | {pct(m['pass@k_strict'])} | "
            f"{pct(m['avg@k_lenient'])} | {pct(m['pass@k_lenient'])} | {pct(m['answered_rate'])} | {m['mean_new_tokens']:.0f} |"
        )

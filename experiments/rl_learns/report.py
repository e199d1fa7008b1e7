"""Issue 67's report: per run of experiments/rl_learns/results/runs (and issue 15's rule runs as the reference),
the learning signal, the training accuracy's slope, held-out gains with 95 % intervals and the speed.

  python experiments/rl_learns/report.py      # writes results/table.md, results/summary.json, results/learning.png

Per run:
  informative groups / step   GRPO groups with reward spread per optimizer step (from the logged rollouts: every
                              reward call's rollouts, G consecutive ones per prompt; learning_signal.py)
  zero-spread, all-wrong      shares of groups
  over warm-up                the rollouts' rule accuracy minus the warm-up policy's pass rate on the same prompts
                              (the filter's 8 samples per candidate, data/*.passrates.jsonl), first and last quarter
                              of reward calls: paired by prompt, so it does not move with which prompts a step drew
                              (the pass rates carry the filter's selection: compare the quarters, not with 0)
                              (runs whose rollouts are < 90 % on those candidates: -)
  train acc slope             least-squares slope of the rollouts' rule accuracy per reward call against the
                              rollouts trained on so far, in points per 1,000 rollouts
  held-out gain               last evaluation minus step 0 on each held-out set, paired by problem (95 % interval
                              over problems: one seed per run); issue 15's runs drew other built-in problems at
                              each evaluation: their built-in gain is unpaired (the two bootstrap errors added)
  s / 1k rollouts             seconds of training steps (timing.jsonl) per 1,000 rollouts trained on
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from cooper_rl.io import atomic_write_json, atomic_write_text, read_jsonl  # noqa: E402
from cooper_rl.learning_signal import learning_signal  # noqa: E402
from stats import bootstrap_se, ci95, eval_scores, slope_per_1000  # noqa: E402

COLLAPSE = 5.0  # points of held-out accuracy below step 0 (predictions.md §4, issue 67 §6)
PASSRATES = HERE / "data" / "train_filtered.jsonl.passrates.jsonl"
I15 = HERE.parent / "reward_hacking" / "results" / "runs"
SETS = {"builtin:test": "built-in test", "svamp_heldout": "SVAMP", "gsm8k_test": "GSM8K"}


def set_name(ds: str) -> str:
    """Short name of an evaluation set."""
    return next((v for k, v in SETS.items() if k in ds), ds)


def rollout_calls(d: Path) -> list[list[dict]]:
    """The logged rollouts of a run, one list per reward call, in order."""
    f = d / "rollouts.jsonl.gz"
    if not f.is_file():
        return []
    calls = defaultdict(list)
    for r in read_jsonl(f):  # a line cut by a kill is skipped
        calls[r["step"]].append(r)
    return [calls[s] for s in sorted(calls)]


def run_report(d: Path, label: str) -> dict:
    """The report's numbers for one run directory (module docstring)."""
    cfg = json.loads((d / "rl_config.json").read_text())
    timing = read_jsonl(d / "timing.jsonl", missing_ok=True)
    g, spg = cfg["num_generations"], cfg.get("steps_per_generation", 1)
    calls = rollout_calls(d)
    signal = [
        learning_signal([r["reward"] for r in c], [r["verdict"] for r in c], g, cfg.get("scale_rewards", "group"), spg)
        for c in calls
    ]
    signal = [s for s in signal if s]
    avg = lambda k: sum(s[k] for s in signal) / len(signal) if signal else None
    seen, xs, ys = 0, [], []  # the rule accuracy of each reward call's rollouts, against rollouts trained on
    for c in calls:
        seen += len(c)
        xs.append(seen)
        ys.append(100 * sum(r["verdict"] for r in c) / len(c))
    # paired by prompt: accuracy over the warm-up's pass rate on the same prompts, per reward call
    pr = {r["question"]: r["pass_rate"] for r in read_jsonl(PASSRATES, missing_ok=True)}
    covered = sum(r.get("question") in pr for c in calls for r in c)
    over = []
    if calls and covered >= 0.9 * sum(len(c) for c in calls):
        over = [
            100
            * sum(r["verdict"] - pr[r["question"]] for r in c if r.get("question") in pr)
            / max(1, sum(r.get("question") in pr for r in c))
            for c in calls
        ]
    quarter = max(1, len(over) // 4)
    evals = read_jsonl(d / "evals.jsonl", missing_ok=True)
    last = evals[-1]["step"] if evals else None
    start, end = eval_scores(d, 0), eval_scores(d, last) if last else None
    heldout = {}
    for e in evals:
        for ds, m in e["policy"].items():
            heldout.setdefault(set_name(ds), {})[e["step"]] = 100 * m["avg@k_strict"]
    gains = {}
    paired = cfg.get("eval_data_seed") is not None  # runs before it drew other built-in problems at each step
    if start and end:
        for ds in end:
            if ds not in start:
                continue
            if paired or not ds.startswith("builtin"):
                diff = {i: 100 * (end[ds][i] - start[ds][i]) for i in end[ds] if i in start[ds]}
                m = sum(diff.values()) / len(diff)
                gains[set_name(ds)] = {"gain": m, "ci95": ci95([m], [diff]), "paired": True}
            else:  # two independent draws of problems: the two bootstrap errors add
                a, b = (100 * sum(x[ds].values()) / len(x[ds]) for x in (start, end))
                se = (bootstrap_se([{i: 100 * v for i, v in start[ds].items()}]) ** 2 + bootstrap_se([{i: 100 * v for i, v in end[ds].items()}]) ** 2) ** 0.5  # fmt: skip
                gains[set_name(ds)] = {"gain": b - a, "ci95": (b - a - 1.96 * se, b - a + 1.96 * se), "paired": False}
    n_rollouts = sum(len(c) for c in calls)
    return {
        "label": label,
        "steps": json.loads((d / "rl_summary.json").read_text())["global_step"]
        if (d / "rl_summary.json").is_file()
        else max((r["step"] for r in timing), default=0),
        "rollouts": n_rollouts,
        "rollouts_per_step": cfg["prompts_per_step"] * g,
        "learning_rate": cfg["learning_rate"],
        "informative_groups_per_step": avg("informative_groups_per_step"),
        "zero_spread_groups": avg("zero_spread_groups"),
        "all_wrong_groups": avg("all_wrong_groups"),
        "train_accuracy_first_quarter": sum(ys[: max(1, len(ys) // 4)]) / max(1, len(ys) // 4) if ys else None,
        "train_accuracy_last_quarter": sum(ys[-max(1, len(ys) // 4) :]) / max(1, len(ys) // 4) if ys else None,
        "train_accuracy_slope_per_1k": slope_per_1000(xs, ys),
        "over_warmup_first_quarter": sum(over[:quarter]) / quarter if over else None,
        "over_warmup_last_quarter": sum(over[-quarter:]) / quarter if over else None,
        "over_warmup_slope_per_1k": slope_per_1000(xs, over) if over else None,
        "train_accuracy_curve": [xs, ys],
        "over_warmup_curve": over,
        "eval_steps": [e["step"] for e in evals],
        "heldout": heldout,
        "heldout_gain": gains,
        "seconds_per_1k_rollouts": 1000 * sum(t["step_seconds"] for t in timing) / n_rollouts if n_rollouts else None,
        "monitor": monitor_report(d, evals),
    }


def monitor_report(d: Path, evals: list[dict]) -> dict:
    """The monitor against the pre-registered collapse (predictions.md §4): held-out accuracy, mean of the
    evaluation sets, >= COLLAPSE points below step 0. {first_flag: the first step any monitor check fired,
    first_bad_eval: the first evaluation that far below, collapsed: the last one is, flagged_in_time: the first flag
    came at or before the first such evaluation}."""
    flags = [
        r["step"]
        for r in read_jsonl(d / "metrics.jsonl", missing_ok=True)
        if any(v for k, v in r.items() if k.startswith("monitor/") and isinstance(v, (int, float)))
    ]
    mean = {e["step"]: 100 * sum(m["avg@k_strict"] for m in e["policy"].values()) / len(e["policy"]) for e in evals}
    start = mean.get(0)
    bad = [s for s in sorted(mean) if s > 0 and start is not None and mean[s] <= start - COLLAPSE]
    last = max(mean) if mean else None
    return {
        "first_flag": flags[0] if flags else None,
        "flagged_calls": len(flags),
        "heldout_mean": mean,
        "first_bad_eval": bad[0] if bad else None,
        "collapsed": bool(last and start is not None and mean[last] <= start - COLLAPSE),
        "flagged_in_time": bool(bad and flags and flags[0] <= bad[0]),
    }


def monitor_table(rows: dict) -> str:
    """The monitor's out-of-sample record over this experiment's runs (not issue 15's): recall on collapsed runs,
    flags on the others."""
    own = {n: r for n, r in rows.items() if not n.startswith("i15") and len(r["monitor"]["heldout_mean"]) > 1}
    lines = [
        "| run | held-out mean by evaluation (step: %) | collapsed | first flag (step) | flagged calls | in time |",
        "|---|---|---|---|---|---|",
    ]
    for n, r in own.items():
        m = r["monitor"]
        ev = ", ".join(f"{s}: {v:.1f}" for s, v in sorted(m["heldout_mean"].items(), key=lambda x: int(x[0])))
        lines.append(
            f"| {n} | {ev} | {'yes' if m['collapsed'] else 'no'} | {fmt(m['first_flag'], '{}')} | "
            f"{m['flagged_calls']} | {'yes' if m['flagged_in_time'] else ('no' if m['first_bad_eval'] else '-')} |"
        )
    collapsed = [r["monitor"] for r in own.values() if r["monitor"]["first_bad_eval"] is not None]
    fine = [r["monitor"] for r in own.values() if r["monitor"]["first_bad_eval"] is None]
    lines += [
        "",
        f"Runs with an evaluation >= {COLLAPSE} points below step 0: {len(collapsed)}, flagged at or before it: "
        f"{sum(m['flagged_in_time'] for m in collapsed)} (target: all). Runs without: {len(fine)}, flagged anyway: "
        f"{sum(m['first_flag'] is not None for m in fine)} (target: none).",
    ]
    return "\n".join(lines) + "\n"


def figure(rows: dict, path: Path) -> None:
    """Training accuracy (moving average over a sixth of each run) and the built-in held-out accuracy (95 % interval
    over problems) against rollouts trained on, one colour per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cooper_rl.plot import moving_average

    fig, (a, o, b) = plt.subplots(1, 3, figsize=(16, 4.5))
    for i, (name, r) in enumerate(rows.items()):
        xs, ys = r["train_accuracy_curve"]
        if not xs:
            continue
        colour = f"C{i % 10}"
        style = ":" if name.startswith("i15") else "-"
        a.plot(xs, moving_average(ys, max(1, len(ys) // 6)), style, color=colour, label=name, lw=1.2)
        if r["over_warmup_curve"]:
            over = r["over_warmup_curve"]
            o.plot(xs, moving_average(over, max(1, len(over) // 6)), style, color=colour, label=name, lw=1.2)
        bt = r["heldout"].get("built-in test", {})
        if bt:
            steps = sorted(bt)
            x = [s * r["rollouts_per_step"] for s in steps]
            b.plot(x, [bt[s] for s in steps], style, marker="o", color=colour, label=name, lw=1.2)
            g = r["heldout_gain"].get("built-in test")
            if g and len(steps) > 1:  # the gain's interval, drawn on the last point
                lo, hi = g["ci95"]
                b.errorbar(
                    [x[-1]], [bt[steps[-1]]], yerr=[[-lo + g["gain"]], [hi - g["gain"]]], color=colour, capsize=3
                )
    a.set(xlabel="rollouts trained on", ylabel="rule accuracy of the rollouts (%)", title="training accuracy")
    o.set(
        xlabel="rollouts trained on",
        ylabel="points",
        title="training accuracy minus the warm-up's\non the same prompts",
    )
    b.set(
        xlabel="rollouts trained on",
        ylabel="avg@4 (%)",
        title="held-out: built-in test, 300 problems\n(bar: 95 % CI of the gain over step 0)",
    )
    b.legend(fontsize=7, loc="best")
    for ax in (a, o, b):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fmt(x, form="{:.1f}") -> str:
    """A number for the table, '-' for None."""
    return "-" if x is None else form.format(x)


def table(rows: dict) -> str:
    """The sweep table (markdown)."""
    head = (
        "| run | rollouts/step | lr | steps | informative groups/step | zero-spread | all-wrong | train acc "
        "(first → last quarter) | slope /1k | over warm-up (first → last quarter) | built-in test: start → end (gain, 95 % CI) | SVAMP gain | GSM8K gain "
        "| s/1k rollouts |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    out = []
    for name, r in rows.items():
        bt = r["heldout"].get("built-in test", {})
        g = r["heldout_gain"]

        def gain(s, g=g):
            if s not in g:
                return "-"
            lo, hi = g[s]["ci95"]
            return f"{g[s]['gain']:+.1f} ({lo:+.1f}, {hi:+.1f})"

        bts = f"{fmt(bt.get(0))} → {fmt(bt.get(max(bt) if bt else None))} ({gain('built-in test')})" if bt else "-"
        out.append(
            f"| {name} | {r['rollouts_per_step']} | {r['learning_rate']:g} | {r['steps']} | "
            f"{fmt(r['informative_groups_per_step'], '{:.2f}')} | {fmt(r['zero_spread_groups'], '{:.2f}')} | "
            f"{fmt(r['all_wrong_groups'], '{:.2f}')} | {fmt(r['train_accuracy_first_quarter'])} → "
            f"{fmt(r['train_accuracy_last_quarter'])} | {fmt(r['train_accuracy_slope_per_1k'], '{:+.2f}')} | "
            f"{fmt(r['over_warmup_first_quarter'], '{:+.1f}')} → {fmt(r['over_warmup_last_quarter'], '{:+.1f}')} | {bts} | "
            f"{gain('SVAMP')} | {gain('GSM8K')} | {fmt(r['seconds_per_1k_rollouts'], '{:.0f}')} |"
        )
    return head + "\n".join(out) + "\n"


def main():
    results = HERE / "results"
    rows = {}
    for s in range(3):  # the reference: issue 15's rule runs (2 prompts x G=4, unfiltered, lr 1e-5)
        if (I15 / f"rule-s{s}").is_dir():
            rows[f"i15 rule (issue 15) s{s}"] = run_report(I15 / f"rule-s{s}", "issue 15 rule")
    for d in sorted((results / "runs").glob("*-s*")):
        if (d / "rl_config.json").is_file():
            rows[d.name] = run_report(d, d.name)
    atomic_write_json(
        results / "summary.json",
        {k: {x: y for x, y in r.items() if not x.endswith("_curve")} for k, r in rows.items()},
    )
    figure(rows, results / "learning.png")
    atomic_write_text(
        results / "table.md",
        "# Regime sweep (rule reward; generated by report.py)\n\n"
        + table(rows)
        + "\n## The monitor, out of sample (thresholds frozen in monitor.yaml)\n\n"
        + monitor_table(rows),
    )
    print(table(rows))


if __name__ == "__main__":
    main()

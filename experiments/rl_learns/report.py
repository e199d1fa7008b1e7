"""Issue 67's report: per run of experiments/rl_learns/results/runs (and issue 15's rule runs as the reference),
the learning signal, the training accuracy's slope, held-out gains with 95 % intervals and the speed.

  python experiments/rl_learns/report.py      # writes results/table.md, summary.json, learning.png, comparison.png
                                              # (summary.json: {runs, pick, comparison, monitor_out_of_sample} and copies of
                                              # monitor_retune/hack_transfer/costs/rms.json: every number)
                                              # and the comparison table into docs/RESULTS.md between its markers

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
import statistics
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from cooper_rl.io import atomic_write_json, atomic_write_text, read_jsonl  # noqa: E402
from cooper_rl.learning_signal import learning_signal  # noqa: E402
from stats import bootstrap_se, ci95, slope_per_1000  # noqa: E402

sys.path.insert(0, str(HERE))
import verifier_kept  # noqa: E402
from comparison import comparison_figure, comparison_table, headline  # noqa: E402
from decisions import pick  # noqa: E402
from rundirs import COLLAPSE, SEEDS, finished_run, name_seed, run_name  # noqa: E402
from runlogs import (  # noqa: E402
    fmt,
    monitor_report,
    quarters,
    rm_pairs,
    rollout_calls,
    scores_at,
    set_name,
)

PASSRATES = HERE / "data" / "train_filtered.jsonl.passrates.jsonl"
I15 = HERE.parent / "reward_hacking" / "results" / "runs"
I15_ROW = "i15 rule (issue 15)"  # the name of issue 15's own rule runs' rows (not the i15_filter setting)


def rm_pairs_quarters(d: Path, steps: list[int], cooper: bool = False) -> list[float | None] | None:
    """A Cooper run's RM training pairs per reward call (a call with none counts 0), first and last quarter;
    [None, None] for a run without an RM side, None for a Cooper run (`cooper`) that has no rm_pairs log."""
    pairs = rm_pairs(d)
    if pairs is None:
        return None if cooper else [None, None]
    per_step = Counter(p["step"] for p in pairs)
    return quarters([per_step.get(s, 0) for s in steps])


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
    start, end = scores_at(d, 0), scores_at(d, last) if last else None
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
                gains[set_name(ds)] = {"mean": m, "ci95": ci95([m], [diff]), "paired": True}
            else:  # two independent draws of problems: the two bootstrap errors add
                a, b = (100 * sum(x[ds].values()) / len(x[ds]) for x in (start, end))
                se = sum(bootstrap_se([{i: 100 * v for i, v in x[ds].items()}]) ** 2 for x in (start, end)) ** 0.5
                gains[set_name(ds)] = {"mean": b - a, "ci95": (b - a - 1.96 * se, b - a + 1.96 * se), "paired": False}
    n_rollouts = sum(len(c) for c in calls)
    metrics = read_jsonl(d / "metrics.jsonl", missing_ok=True)
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
        # what the reward paid and what the rollouts looked like (first -> last quarter of the reward calls)
        "reward_quarters": quarters([r["reward_mean"] for r in metrics if "reward_mean" in r]),
        "completion_tokens_quarters": quarters([r["completion_length"] for r in metrics if "completion_length" in r]),
        "boxed_percent_quarters": quarters(
            [100 * sum("\\boxed" in r.get("completion", "") for r in c) / len(c) for c in calls]
        ),
        # the RM against the policy's wrong answers, and what its updates had to learn from (Cooper runs)
        "rm_fooled_quarters": quarters([r["rm_fooled_rate"] for r in metrics if r.get("rm_fooled_rate") is not None]),
        "rm_pairs_per_update_quarters": rm_pairs_quarters(
            d, [r["step"] for r in metrics], cfg.get("reward") == "cooper"
        ),
        "train_accuracy_curve": [xs, ys],
        "over_warmup_curve": over,
        "eval_steps": [e["step"] for e in evals],
        "heldout": heldout,
        "heldout_gain": gains,
        "seconds_per_1k_rollouts": 1000 * sum(t["step_seconds"] for t in timing) / n_rollouts if n_rollouts else None,
        # the step's torch threads (most steps'): 1 beside another run, 2 alone; costs compare at equal threads only
        "torch_threads": statistics.mode(t.get("torch_threads") for t in timing) if timing else None,
        "torch_threads_all": sorted({t.get("torch_threads") for t in timing if t.get("torch_threads")}),
        # what a step costs, median over steps (the step, and the RM side's parts the Cooper reward logs)
        "median_seconds": {"step": statistics.median(t["step_seconds"] for t in timing) if timing else None}
        | {
            k.removeprefix("time/"): statistics.median(r[k] for r in metrics if k in r)
            for k in ("time/rm_update", "time/recalibrate")
            if any(k in r for r in metrics)
        },
        "shared_prefix": cfg.get("shared_prefix", False),  # issue 105's shared-prefix forwards (absent: before them)
        "monitor": monitor_report(d, evals),
        "finished": finished_run(d),
        "rm_sha256": cfg.get("rm_sha256"),  # the RM build that scored the run (None: the rule)
        "peak_rss_gb": max((t["peak_rss_gb"] for t in timing if t.get("peak_rss_gb")), default=None),
    }


def checks(m: dict) -> str:
    """A run's monitor checks by the step each first fired at ('acc_fall 8, wrong_reward 6'), earliest first."""
    by = m.get("first_flag_by_check") or {}
    return ", ".join(f"{c} {s}" for c, s in sorted(by.items(), key=lambda x: (x[1], x[0]))) or "-"


def monitor_record(rows: dict) -> dict:
    """The monitor's out-of-sample record over this experiment's finished runs (not issue 15's; thresholds frozen
    before any of them ran): collapsed runs (§4's definition: the last evaluation) and how many were flagged at or
    before their first evaluation that far below step 0; runs that did not collapse and how many were flagged anyway;
    recall = collapses flagged in time / collapses, precision = flagged runs that collapsed / flagged runs."""
    own = [r["monitor"] for r in rows.values() if not r.get("issue15_reference") and r["finished"]]
    collapsed = [m for m in own if m["collapsed"]]
    fine = [m for m in own if not m["collapsed"]]
    flagged = [m for m in own if m["first_flag"] is not None]
    out = {
        "collapsed": len(collapsed),
        "collapsed_flagged_in_time": sum(m["flagged_in_time"] for m in collapsed),
        "not_collapsed": len(fine),
        "not_collapsed_flagged": sum(m["first_flag"] is not None for m in fine),
        "flagged": len(flagged),
    }
    out["recall"] = out["collapsed_flagged_in_time"] / len(collapsed) if collapsed else None
    out["precision"] = sum(m["collapsed"] for m in flagged) / len(flagged) if flagged else None
    return out


def monitor_table(rows: dict) -> str:
    """The monitor's out-of-sample record (monitor_record) as a table of this experiment's finished runs: each one's
    held-out mean by evaluation, whether it collapsed, its first flag and checks, and whether the flag came in time."""
    own = {n: r for n, r in rows.items() if not r.get("issue15_reference") and r["finished"]}
    lines = [
        "| run | held-out mean by evaluation (step: %) | collapsed | first flag (step) | checks (first step) | flagged "
        "calls | in time |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, r in own.items():
        m = r["monitor"]
        ev = ", ".join(f"{s}: {v:.1f}" for s, v in sorted(m["heldout_mean"].items(), key=lambda x: int(x[0])))
        lines.append(
            f"| {n} | {ev} | {'yes' if m['collapsed'] else 'no'} | {fmt(m['first_flag'], '{}')} | {checks(m)} | "
            f"{m['flagged_calls']} | {'yes' if m['flagged_in_time'] else ('no' if m['collapsed'] else '-')} |"
        )
    rec = monitor_record(rows)
    lines += [
        "",
        f"Collapsed runs (last evaluation >= {COLLAPSE} points below step 0, mean of the sets): {rec['collapsed']}, "
        f"flagged at or before their first evaluation that far below: {rec['collapsed_flagged_in_time']} "
        f"(target: all). Runs that did not collapse: {rec['not_collapsed']}, flagged anyway: "
        f"{rec['not_collapsed_flagged']} (target: none). Recall (collapses flagged in time): "
        f"{fmt(rec['recall'], '{:.2f}')}; precision (flagged runs that collapsed): {fmt(rec['precision'], '{:.2f}')} "
        f"({rec['flagged']} runs flagged).",
    ]
    return "\n".join(lines) + "\n"


def figure(rows: dict, path: Path) -> None:
    """Training accuracy (moving average over a sixth of each run) and the built-in held-out accuracy (95 % interval
    over problems) against rollouts trained on, one colour per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cooper_rl.plot import moving_average

    fig, ((a, o), (b, f)) = plt.subplots(2, 2, figsize=(15, 9.5))
    gains = []  # (name, colour, gain, ci95) of this experiment's runs, for the panel of gains
    own = [n for n, r in rows.items() if not r.get("issue15_reference")]
    tab20 = plt.get_cmap("tab20").colors
    palette = tab20[0::2] + tab20[1::2]  # 20 distinct colours, the dark ones first; issue 15's rule runs in greys
    greys = iter(("0.35", "0.55", "0.75"))
    for name, r in rows.items():
        xs, ys = r["train_accuracy_curve"]
        if not xs:
            continue
        i15 = name not in own
        place = None if i15 else own.index(name)
        colour = next(greys, "0.5") if i15 else palette[place % 20]
        style = ":" if i15 else "-"
        # the held-out points of runs that end at one budget would hide each other's intervals: each run's is drawn
        # a little to the side (by its place in the legend)
        dodge = 0 if i15 else (place - (len(own) - 1) / 2) * 25
        a.plot(xs, moving_average(ys, max(1, len(ys) // 6)), style, color=colour, label=name, lw=1.2)
        if r["over_warmup_curve"]:
            over = r["over_warmup_curve"]
            o.plot(xs, moving_average(over, max(1, len(over) // 6)), style, color=colour, label=name, lw=1.2)
        bt = r["heldout"].get("built-in test", {})
        if bt:
            steps = sorted(bt)
            x = [s * r["rollouts_per_step"] + (dodge if s else 0) for s in steps]
            b.plot(x, [bt[s] for s in steps], style, marker="o", color=colour, label=name, lw=1.2)
            g = r["heldout_gain"].get("built-in test")
            if g and len(steps) > 1:  # the gain's interval, drawn on the last point
                lo, hi = g["ci95"]
                b.errorbar(
                    [x[-1]], [bt[steps[-1]]], yerr=[[-lo + g["mean"]], [hi - g["mean"]]], color=colour, capsize=3
                )
                if not i15:
                    gains.append(
                        (f"{name} ({steps[-1] * r['rollouts_per_step']:,} rollouts)", colour, g["mean"], g["ci95"])
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
        title="held-out: built-in test, 300 problems (issue 15: 100)\n(bar: 95 % CI of the gain over step 0)",
    )
    o.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    i15_lines = [h for h in a.get_lines() if h.get_label() not in own]
    if i15_lines:  # the other runs are named in the next panel's legend
        a.legend(handles=i15_lines, fontsize=7, loc="lower right")
    gains.sort(key=lambda t: t[2])
    for y, (_, colour, gain, (lo, hi)) in enumerate(gains):
        f.errorbar([gain], [y], xerr=[[gain - lo], [hi - gain]], fmt="o", color=colour, capsize=3)
    f.set_yticks(range(len(gains)), [t[0] for t in gains], fontsize=8)
    f.axvline(0, color="k", lw=0.8)
    f.axvline(5, color="k", lw=0.8, ls="--")
    f.set(
        xlabel="points over step 0 (95 % CI over problems; one seed)",
        title="built-in test gain at the last evaluation\n(dashed: the target, +5 points)",
    )
    for ax in (a, o, b, f):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def table(rows: dict) -> str:
    """The sweep table (markdown)."""
    head = (
        "| run | rollouts/step | lr | steps | informative groups/step | zero-spread | all-wrong | train acc "
        "(first → last quarter) | slope /1k | over warm-up (first → last quarter) | built-in test: start → end (gain, 95 % CI) | SVAMP gain | GSM8K gain "
        "| s/1k rollouts |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    out = []

    def threads(r):  # the cost of a run with two torch threads (alone on the machine) is not the others'
        if len(r.get("torch_threads_all") or []) > 1:  # resumed with another thread count: a mixed cost
            return f" ({'/'.join(map(str, r['torch_threads_all']))} threads, mixed)"
        return f" ({r['torch_threads']} threads)" if r.get("torch_threads") not in (None, 1) else ""

    for name, r in rows.items():
        bt = r["heldout"].get("built-in test", {})
        g = r["heldout_gain"]

        def gain(s, g=g):
            if s not in g:
                return "-"
            lo, hi = g[s]["ci95"]
            return f"{g[s]['mean']:+.1f} ({lo:+.1f}, {hi:+.1f})"

        bts = f"{fmt(bt.get(0))} → {fmt(bt.get(max(bt) if bt else None))} ({gain('built-in test')})" if bt else "-"
        out.append(
            f"| {name} | {r['rollouts_per_step']} | {r['learning_rate']:g} | {r['steps']} | "
            f"{fmt(r['informative_groups_per_step'], '{:.2f}')} | {fmt(r['zero_spread_groups'], '{:.2f}')} | "
            f"{fmt(r['all_wrong_groups'], '{:.2f}')} | {fmt(r['train_accuracy_first_quarter'])} → "
            f"{fmt(r['train_accuracy_last_quarter'])} | {fmt(r['train_accuracy_slope_per_1k'], '{:+.2f}')} | "
            f"{fmt(r['over_warmup_first_quarter'], '{:+.1f}')} → {fmt(r['over_warmup_last_quarter'], '{:+.1f}')} | {bts} | "
            f"{gain('SVAMP')} | {gain('GSM8K')} | {fmt(r['seconds_per_1k_rollouts'], '{:.0f}')}{threads(r)} |"
        )
    return head + "\n".join(out) + "\n"


def condition_runs_table(rows: dict) -> str:
    """The comparison's runs (finished or not): steps logged, the RM build that scored them, the monitor's checks."""
    lines = [
        "| run | steps | finished | RM (sha256) | monitor: checks (first step) | reward (first → last quarter) | "
        "completion tokens | rollouts with a \\boxed answer, % | RM-fooled rate | RM pairs per update |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def q(key, r, form):
        if key == "rm_pairs_per_update_quarters" and key in r and r[key] is None:  # a Cooper run without that log
            return "not logged"
        a, b = r.get(key) or [None, None]
        return f"{fmt(a, form)} → {fmt(b, form)}"

    for n, r in rows.items():
        lines.append(
            f"| {n} | {r['steps']} | {'yes' if r['finished'] else 'no'} | {fmt(r.get('rm_sha256'), '{:.8}')} | "
            f"{checks(r['monitor'])} | {q('reward_quarters', r, '{:.2f}')} | "
            f"{q('completion_tokens_quarters', r, '{:.0f}')} | {q('boxed_percent_quarters', r, '{:.0f}')} | "
            f"{q('rm_fooled_quarters', r, '{:.2f}')} | {q('rm_pairs_per_update_quarters', r, '{:.1f}')} |"
        )
    return "\n".join(lines) + "\n"


def split_runs(rows: dict, settings: dict) -> tuple[dict, dict]:
    """The rows of the sweep's settings and those of the comparison's runs (settings.yaml `conditions`, NAME-sSEED):
    a comparison run is not a setting of the sweep, and gets its own table."""
    conditions = {n: r for n, r in rows.items() if "-s" in n and name_seed(n)[0] in settings.get("conditions", {})}
    return {n: r for n, r in rows.items() if n not in conditions}, conditions


DOC = HERE.parents[1] / "docs" / "RESULTS.md"


def tables_only(text: str) -> str:
    """The markdown tables of `text`, one blank line between them (what the doc's markers hold)."""
    blocks, cur = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            blocks.append("\n".join(cur))
            cur = []
    return "\n\n".join(blocks)


def sync_doc(doc: Path, name: str, text: str) -> bool:
    """Replace what stands between `<!-- report.py:name -->` and `<!-- /report.py:name -->` in `doc` by `text`
    (atomically); True if the file changed. A doc without exactly one pair of the markers, in order, is an error
    naming the file and the marker: the report never guesses where a table goes."""
    start, end = f"<!-- report.py:{name} -->", f"<!-- /report.py:{name} -->"
    old = doc.read_text()
    if old.count(start) != 1 or old.count(end) != 1 or old.index(start) > old.index(end):
        raise ValueError(f"{doc}: needs exactly one {start} followed by one {end} (found {old.count(start)} and {old.count(end)})")  # fmt: skip
    head, rest = old.split(start)
    new = head + start + "\n" + text.strip("\n") + "\n" + end + rest.split(end, 1)[1]
    if new != old:
        atomic_write_text(doc, new)
    return new != old


def main():
    results = HERE / "results"
    rows = {}
    for s in SEEDS:  # the reference: issue 15's rule runs (2 prompts x G=4, unfiltered, lr 1e-5)
        if (I15 / run_name("rule", s)).is_dir():
            rows[f"{I15_ROW} s{s}"] = run_report(I15 / run_name("rule", s), "issue 15 rule") | {
                "issue15_reference": True
            }
    for d in sorted((results / "runs").glob("*-s*")):
        if (d / "rl_config.json").is_file():
            rows[d.name] = run_report(d, d.name)
    import yaml

    settings = yaml.safe_load((HERE / "settings.yaml").read_text())
    costs = results / "costs.json"  # settings' costs measured side by side (see pick)
    chosen = pick(rows, settings, json.loads(costs.read_text())["pairs"] if costs.is_file() else None)
    comp = headline(settings, results / "runs", rows)
    atomic_write_json(  # every number of the experiment's report
        results / "summary.json",
        {
            "runs": {k: {x: y for x, y in r.items() if not x.endswith("_curve")} for k, r in rows.items()},
            "pick": chosen,
            "comparison": comp,
            "monitor_out_of_sample": monitor_record(rows),
            # the other scripts' reports, copied so that this file holds every number (rerun report.py after them)
            **{
                name: json.loads((results / f"{name}.json").read_text())
                for name in ("monitor_retune", "hack_transfer", "costs", "rms")
                if (results / f"{name}.json").is_file()
            },
        },
    )
    sweep, conditions = split_runs(rows, settings)
    hack = results / "hack_transfer.json"
    hacked = json.loads(hack.read_text())["rms"] if hack.is_file() else None
    # the judgement as pre-registered, on seeds 0-2 (comparison.headline), beside every finished seed
    kept = (
        verifier_kept.table(comp["conditions"], hacked, comp["decisions"]["issue106"]) + verifier_kept.cost_line(rows)
        if comp
        else "No comparison.\n"
    )
    figure(sweep, results / "learning.png")
    comparison_figure(settings, results / "runs", results / "comparison.png")
    atomic_write_text(
        results / "table.md",
        "# Regime sweep (rule reward; generated by report.py)\n\n"
        + table(sweep)
        + "\nThe pick by predictions.md's rule (seed 0, b64_long not a candidate): "
        + (f"**{chosen['pick']}** ({json.dumps(chosen)})" if chosen["pick"] else json.dumps(chosen))
        + "\n\n## The comparison where RL learns (§4, §5)\n\n"
        + comparison_table(comp)
        + (
            "\nEach comparison run (finished or not), as the sweep's table has them:\n\n"
            + table(conditions)
            + "\n"
            + condition_runs_table(conditions)
            if conditions
            else ""
        )
        + "\n## Issue 106: the RM kept a verifier (pre-registered; verifier_kept.py)\n\n"
        + kept
        + "\n## The monitor, out of sample (thresholds frozen in monitor.yaml)\n\n"
        + monitor_table(rows),
    )
    if sync_doc(DOC, "comparison", tables_only(comparison_table(comp))):
        print(f"updated the comparison table in {DOC}")
    if sync_doc(DOC, "verifier", kept):
        print(f"updated issue 106's table in {DOC}")
    print(table(sweep))


if __name__ == "__main__":
    main()

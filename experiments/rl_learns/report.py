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

import functools
import gzip
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from cooper_rl.io import atomic_write_json, atomic_write_text, read_jsonl  # noqa: E402
from cooper_rl.learning_signal import group_advantages, learning_signal  # noqa: E402
from stats import bootstrap_se, ci95, difference, eval_scores, mean, slope_per_1000  # noqa: E402

sys.path.insert(0, str(HERE))
import verifier_kept  # noqa: E402
from rundirs import COLLAPSE, HEADLINE_SEEDS, SEEDS, collapse, finished_run, heldout_means, name_seed, run_name  # noqa: E402

ARMS = ("cooper_paper", "cooper_paper_noscale")  # §4: the paper's Cooper and its intervention arm
PASSRATES = HERE / "data" / "train_filtered.jsonl.passrates.jsonl"
I15 = HERE.parent / "reward_hacking" / "results" / "runs"
I15_ROW = "i15 rule (issue 15)"  # the name of issue 15's own rule runs' rows (not the i15_filter setting)
SETS = {"builtin:test": "built-in test", "svamp_heldout": "SVAMP", "gsm8k_test": "GSM8K"}


def set_name(ds: str) -> str:
    """Short name of an evaluation set."""
    return next((v for k, v in SETS.items() if k in ds), ds)


def scores_at(d: Path, step: int) -> dict | None:
    """eval_scores of run d at `step`, keyed by the evaluation file's name, not its path (the samples record the
    absolute path: a run made in another checkout must pair with this one's)."""
    scores = eval_scores(d, step)
    if scores is None:
        return None
    named = {Path(ds).name if "/" in ds else ds: v for ds, v in scores.items()}
    if len(named) != len(scores):
        raise ValueError(f"{d} step {step}: two evaluation sets share a file name: {sorted(scores)}")
    return named


def rollout_calls(d: Path) -> list[list[dict]]:
    """The logged rollouts of a run, one list per reward call, in order."""
    f = d / "rollouts.jsonl.gz"
    if not f.is_file():
        return []
    calls = defaultdict(list)
    for r in read_jsonl(f):  # a line cut by a kill is skipped
        calls[r["step"]].append(r)
    return [calls[s] for s in sorted(calls)]


def quarters(ys: list[float]) -> list[float | None]:
    """[mean of the first quarter, mean of the last quarter] of a run's per-call values ([None, None]: none)."""
    if not ys:
        return [None, None]
    q = max(1, len(ys) // 4)
    return [sum(ys[:q]) / q, sum(ys[-q:]) / q]


def rm_pairs(d: Path) -> list[dict] | None:
    """The pairs a Cooper run's RM trained on (rm_pairs.jsonl[.gz], one line per pair); None without that log."""
    for name, opener in (("rm_pairs.jsonl.gz", gzip.open), ("rm_pairs.jsonl", open)):
        if (d / name).is_file():
            with opener(d / name, "rt") as f:
                return [json.loads(x) for x in f if x.strip()]
    return None


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
        "monitor": monitor_report(d, evals),
        "finished": finished_run(d),
        "rm_sha256": cfg.get("rm_sha256"),  # the RM build that scored the run (None: the rule)
        "peak_rss_gb": max((t["peak_rss_gb"] for t in timing if t.get("peak_rss_gb")), default=None),
    }


def monitor_report(d: Path, evals: list[dict]) -> dict:
    """The monitor against the pre-registered collapse (predictions.md §4): held-out accuracy, mean of the
    evaluation sets, >= COLLAPSE points below step 0. {first_flag: the first step any monitor check fired,
    first_bad_eval: the first evaluation that far below, collapsed: the last one is, flagged_in_time: the first flag
    came at or before the first such evaluation}."""
    flags, by_check = [], {}  # the steps any check fired at; each check's first step
    for r in read_jsonl(d / "metrics.jsonl", missing_ok=True):
        fired = [k.removeprefix("monitor/") for k, v in r.items() if k.startswith("monitor/") and _number(v) and v]
        if fired:
            flags.append(r["step"])
        for c in fired:
            by_check.setdefault(c, r["step"])
    mean = heldout_means(evals)
    c = collapse(mean)
    return {
        "first_flag": flags[0] if flags else None,
        "first_flag_by_check": by_check,
        "flagged_calls": len(flags),
        "heldout_mean": mean,
        **c,
        "flagged_in_time": bool(c["first_bad_eval"] is not None and flags and flags[0] <= c["first_bad_eval"]),
    }


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


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


def condition_runs(settings: dict, runs_dir: Path, seeds=HEADLINE_SEEDS) -> dict[str, dict[int, Path]]:
    """The finished run dirs of each comparison condition by seed among `seeds` (`rule`: the regime's runs), in
    settings.yaml's order; {} without a regime."""
    regime = settings.get("regime")
    if regime not in settings["settings"]:
        return {}
    dirs = {"rule": regime, **{c: c for c in settings.get("conditions", {})}}
    out = {}
    for cond, prefix in dirs.items():
        runs = {s: runs_dir / run_name(prefix, s) for s in seeds}
        out[cond] = {s: d for s, d in runs.items() if (d / "rl_config.json").is_file() and finished_run(d)}
    return out


# the comparison figure's panels: key -> (title, y label); evaluations (markers) or training steps (5-step averages)
PANELS = {
    "held": ("held-out: built-in test", "avg@k (%)"),
    "reward": ("training reward (the condition's own)", "mean reward"),
    "acc": ("rule accuracy of the rollouts", "%"),
    "length": ("completion length of the rollouts", "tokens"),
    "rm_acc": ("the RM on the labelled set: accuracy (solid), AUROC x 100 (dashed)", "%"),
    "rm_wrong": ("wrong rows of the labelled set the RM accepts", "%"),
}


def comparison_figure(settings: dict, runs_dir: Path, path: Path) -> bool:
    """The comparison over training, one colour per condition (thin: each seed; thick: the mean over seeds at the
    steps they share): PANELS. False (nothing written) before any condition has a finished run."""
    runs = {c: r for c, r in condition_runs(settings, runs_dir).items() if r}
    if not runs:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cooper_rl.plot import moving_average

    fig, grid = plt.subplots(2, 3, figsize=(17, 8.5))
    axes = dict(zip(PANELS, grid.flat))

    def where(key):  # (axis, line style): the RM's AUROC shares the accuracy panel, dashed
        return (axes["rm_acc"], "--") if key == "rm_auc" else (axes[key], "-")

    colours = plt.get_cmap("tab10").colors
    for i, (cond, by_seed) in enumerate(runs.items()):
        colour, curves = colours[i % 10], defaultdict(list)
        for d in by_seed.values():
            evals = {e["step"]: e for e in read_jsonl(d / "evals.jsonl")}  # a step evaluated again: its last
            per_step = {r["step"]: r for r in read_jsonl(d / "metrics.jsonl")}
            ms = sorted(per_step)
            built = {t: next((v["avg@k_strict"] for k, v in e["policy"].items() if "builtin:test" in k), None) for t, e in evals.items()}  # fmt: skip
            errors = {t: rm_errors(d, t) for t in evals}
            series = {  # (steps, values)
                "held": [(t, 100 * built[t]) for t in sorted(evals) if built[t] is not None],
                "rm_acc": [(t, 100 * evals[t]["rm"]["accuracy"]) for t in sorted(evals) if evals[t].get("rm")],
                "rm_auc": [
                    (t, 100 * evals[t]["rm"]["auroc"])
                    for t in sorted(evals)
                    if (evals[t].get("rm") or {}).get("auroc") is not None
                ],
                "rm_wrong": [(t, errors[t][0]) for t in sorted(evals) if errors[t] is not None],
            }
            for key, field, scale in (("reward", "reward_mean", 1), ("acc", "rule_accuracy", 100), ("length", "completion_length", 1)):  # fmt: skip
                xs = [t for t in ms if per_step[t].get(field) is not None]
                series[key] = list(zip(xs, moving_average([scale * per_step[t][field] for t in xs], 5)))
            for key, points in series.items():
                if points:  # rule has no RM
                    xs, ys = zip(*points)
                    marker = "o" if key in ("held", "rm_acc", "rm_auc", "rm_wrong") else None
                    ax, style = where(key)
                    ax.plot(xs, ys, style, color=colour, lw=0.7, alpha=0.45, marker=marker, ms=3)
                    curves[key].append(dict(points))
        for key, seeds in curves.items():
            shared = sorted(set.intersection(*(set(a) for a in seeds)))
            ax, style = where(key)
            ax.plot(shared, [mean(a[t] for a in seeds) for t in shared], style, color=colour, lw=2.2,
                    label=f"{cond} ({len(seeds)} seed{'s' if len(seeds) > 1 else ''})" if key != "rm_auc" else None)  # fmt: skip
    for key, (title, ylabel) in PANELS.items():
        axes[key].set(xlabel="step", ylabel=ylabel, title=title)
        axes[key].grid(alpha=0.3)
    axes["held"].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def set_mean(scores: dict) -> float:
    """The mean over evaluation sets of each set's mean per-problem score ({set: {problem: score}})."""
    sets = [v for v in scores.values() if v]
    return sum(sum(v.values()) / len(v) for v in sets) / len(sets)


def interval(per_seed: list[dict | None], bounds: tuple[float, float] = (-100.0, 100.0)) -> dict | None:
    """{mean, ci95, n_seeds} in points of per-seed scores ({set: {problem: fraction}}, or differences of them): the
    mean over seeds of set_mean, 95 % interval over seeds and problems (stats.ci95)."""
    per_seed = [p for p in per_seed if p and any(p.values())]
    if not per_seed:
        return None
    by_seed = [100 * set_mean(p) for p in per_seed]
    points = [{ds: {i: 100 * v for i, v in ps.items()} for ds, ps in p.items()} for p in per_seed]
    return {"mean": mean(by_seed), "ci95": ci95(by_seed, points, bounds), "n_seeds": len(by_seed), "by_seed": by_seed}


def per_set(per_seed: list[dict | None], bounds: tuple[float, float] = (-100.0, 100.0)) -> dict:
    """interval of each evaluation set alone and of their mean ("mean of sets"), keyed by the sets' short names
    (bounds: (0, 100) for accuracies, the default for differences)."""
    sets = sorted({ds for p in per_seed if p for ds in p})
    out = {set_name(ds): interval([{ds: p[ds]} for p in per_seed if p and ds in p], bounds) for ds in sets}
    return out | {"mean of sets": interval(per_seed, bounds)}


@functools.cache  # the comparison and its figure both ask; a report reads each evaluation once
def rm_errors(d: Path, step: int) -> tuple[float, float] | None:
    """(% of the labelled set's wrong rows the RM accepts, % of its right rows it rejects) at `step`, from the
    per-row scores (score >= 0.5 accepts), or None where they are missing. Accuracy alone hides a trade between the
    two: an RM can gain accuracy by accepting more, wrong rows included."""
    f = d / "eval" / f"step-{step}" / "rm_scores.json"
    if not f.is_file():
        return None
    r = json.loads(f.read_text())
    wrong = [sc >= 0.5 for sc, y in zip(r["scores"], r["labels"]) if not y]
    right = [sc < 0.5 for sc, y in zip(r["scores"], r["labels"]) if y]
    return 100 * sum(wrong) / max(1, len(wrong)), 100 * sum(right) / max(1, len(right))


def answer_kind(completion: str) -> str:
    """ "an answer" where the strict rule reads a final answer in `completion`, else "no answer"."""
    from cooper_rl.verify import extract_answer

    return "an answer" if extract_answer(completion, "strict") is not None else "no answer"


@functools.cache
def wrong_row_kinds(data: str) -> tuple[str | None, ...]:
    """Per row of the labelled set `data` (a path, relative to the repository or absolute): None for a right row,
    else the wrong row's kind: its `source` (what wrote it) and whether the strict rule reads a final answer in it."""
    kinds = []
    for i, r in enumerate(read_jsonl(HERE.parent.parent / data), 1):
        if "label" not in r or "completion" not in r:
            raise ValueError(f"{data}: row {i} has no label or completion")
        kinds.append(None if r["label"] else f"{r.get('source', '?')}, {answer_kind(r['completion'])}")
    return tuple(kinds)


@functools.cache
def rm_accepts_wrong_by_kind(d: Path, step: int) -> dict[str, float] | None:
    """{kind: % of the labelled set's wrong rows of that kind (wrong_row_kinds) the RM accepts at `step`}: does its
    threshold move on rows like the policy's own, or on others? None where the per-row scores are missing or name
    no set; a set that does not match their labels is an error."""
    f = d / "eval" / f"step-{step}" / "rm_scores.json"
    if not f.is_file():
        return None
    r = json.loads(f.read_text())
    if not r.get("data"):
        return None
    kinds = wrong_row_kinds(r["data"])
    if [k is None for k in kinds] != [bool(y) for y in r["labels"]]:
        raise ValueError(f"{f}: its labels are not those of {r['data']} (was the set rebuilt?)")
    accepted: dict[str, list[bool]] = defaultdict(list)
    for k, sc in zip(kinds, r["scores"], strict=True):
        if k is not None:
            accepted[k].append(sc >= 0.5)
    return {k: 100 * sum(v) / len(v) for k, v in sorted(accepted.items())}


def rm_negatives_answered(d: Path) -> dict | None:
    """What the co-optimized RM was taught to reject: {"pairs": pairs it trained on, "negative has an answer": % of
    their negatives in which the strict rule reads a final answer (answer_kind)} from rm_pairs.jsonl[.gz]; None for
    a run without that log."""
    pairs = rm_pairs(d)
    if pairs is None:
        return None
    answered = mean(answer_kind(p["negative"]) == "an answer" for p in pairs)
    return {"pairs": len(pairs), "negative has an answer": None if answered is None else 100 * answered}


def rm_change(d: Path, last: int) -> tuple[float | None, dict | None]:
    """(change of the RM's accuracy on rm_eval_data from step 0 to `last`, in points; {row: change}) from the
    per-row scores, or (None, None) where they are missing."""
    rows, labels = [], []
    for step in (0, last):
        f = d / "eval" / f"step-{step}" / "rm_scores.json"
        if not f.is_file():
            return None, None
        r = json.loads(f.read_text())
        if len(r["scores"]) != len(r["labels"]):
            raise ValueError(f"{f}: {len(r['scores'])} scores for {len(r['labels'])} labels")
        labels.append(r["labels"])
        rows.append([(sc >= 0.5) == bool(y) for sc, y in zip(r["scores"], r["labels"])])
    if labels[0] != labels[1]:  # rows are paired by position: the evaluation set must not change within a run
        raise ValueError(f"{d}: the RM evaluation set's labels at step 0 and step {last} differ (was it rebuilt?)")
    diff = {i: 100 * (int(b) - int(a)) for i, (a, b) in enumerate(zip(*rows))}
    return sum(diff.values()) / len(diff), diff


def mechanism(d: Path, cfg: dict) -> dict:
    """§4's mechanism metric and what else moved (a run with smaller advantages also moves less): share of the
    positive advantage given to rule-wrong rollouts over the first quarter of steps (one reward call each here; a
    step logged again counts once, its last record), the mean |advantage|
    (TRL's formula on the logged rewards), and the mean KL to the reference over the last quarter of steps."""
    per_step = {r["step"]: r for r in read_jsonl(d / "metrics.jsonl", missing_ok=True)}
    calls = [per_step[t].get("signal/pos_adv_to_wrong") for t in sorted(per_step)]
    q1 = calls[: max(1, len(calls) // 4)]
    g = cfg["num_generations"]
    adv = [
        abs(a)
        for c in rollout_calls(d)
        if len(c) % g == 0
        for a in group_advantages([r["reward"] for r in c], g, cfg.get("scale_rewards", "group"))
    ]
    log = [r for r in read_jsonl(d / "trainer_log.jsonl", missing_ok=True) if r.get("kl") is not None]
    kl = [r["kl"] for r in log]
    return {
        "kl_logged_to_step": log[-1]["step"] if log else None,  # TRL's log comes from the newest checkpoint
        "pos_adv_to_wrong_q1": mean(q1),
        "mean_abs_advantage": sum(adv) / len(adv) if adv else None,
        "kl_last_quarter": mean(kl[-max(1, len(kl) // 4) :]) if kl else None,
    }


def by_kind(runs: dict[int, Path], evals: dict[int, list[dict]]) -> dict[int, dict[str, float]]:
    """{step: {kind: mean over the seeds with per-row scores at that step of rm_accepts_wrong_by_kind, "n_seeds": how
    many}}."""
    out: dict[int, dict[str, list[float]]] = {}
    for s, d in runs.items():
        for step in sorted({e["step"] for e in evals[s]}):
            for k, v in (rm_accepts_wrong_by_kind(d, step) or {}).items():
                out.setdefault(step, {}).setdefault(k, []).append(v)
    return {
        st: {k: mean(v) for k, v in ks.items()} | {"n_seeds": max(len(v) for v in ks.values())}
        for st, ks in sorted(out.items())
    }


def comparison(settings: dict, runs_dir: Path, rows: dict, seeds=HEADLINE_SEEDS) -> dict | None:
    """The §4/§5 comparison in settings.yaml's regime over the finished runs of `seeds` in runs_dir (predictions.md's
    pre-registrations): per condition, held-out accuracy at the last evaluation, its gain over step 0 and its
    difference to rule (paired by seed and problem), collapses, the RM's accuracy over training and §4's
    mechanism; then the pre-registered decisions, once every condition has its three seeds. None without a regime."""
    regime = settings.get("regime")
    if regime not in settings["settings"]:
        return None
    ends, lasts, out = {}, {}, {}
    for cond, runs in condition_runs(settings, runs_dir, seeds).items():
        evals = {s: read_jsonl(d / "evals.jsonl") for s, d in runs.items()}
        last = {s: max(e["step"] for e in ev) for s, ev in evals.items()}
        lasts[cond] = last
        # a seed that ends at another step than rule's same seed (another budget) has no paired difference to rule
        unpaired = sorted(s for s in last if cond != "rule" and s in lasts["rule"] and last[s] != lasts["rule"][s])
        ends[cond] = {s: scores_at(d, last[s]) for s, d in runs.items()}
        starts = {s: scores_at(d, 0) for s, d in runs.items()}
        monitor = {s: monitor_report(d, evals[s]) for s, d in runs.items()}
        rm, refused = {}, {}
        for s, d in runs.items():
            try:
                rm[s] = rm_change(d, last[s])
            except ValueError as e:  # the RM's evaluation set changed within the run: no paired change
                rm[s], refused[s] = (None, None), str(e)
        rm_acc: dict[int, list] = {}
        rm_auroc: dict[int, list] = {}  # threshold-free: did the RM rank better, or only move its 0.5?
        for ev in evals.values():
            for step, e in {e["step"]: e for e in ev if e.get("rm")}.items():  # once per step (the last, if resumed)
                rm_acc.setdefault(step, []).append(100 * e["rm"]["accuracy"])
                if e["rm"].get("auroc") is not None:
                    rm_auroc.setdefault(step, []).append(e["rm"]["auroc"])
        with_rm = [s for s in runs if rm[s][1] is not None]
        errors: dict[int, list] = {}  # step: the seeds' (wrong accepted, right rejected)
        errors_by_seed: dict[int, dict] = {}
        for s, d in runs.items():
            for step in sorted({e["step"] for e in evals[s]}):
                if (e := rm_errors(d, step)) is not None:
                    errors.setdefault(step, []).append(e)
                    errors_by_seed.setdefault(s, {})[step] = {"wrong_accepted": e[0], "right_rejected": e[1]}
        cfgs = {s: json.loads((d / "rl_config.json").read_text()) for s, d in runs.items()}
        out[cond] = {
            "runs": [d.name for d in runs.values()],
            "seeds": sorted(runs),
            "rm_sha256": sorted({c.get("rm_sha256") for c in cfgs.values() if c.get("rm_sha256")}),
            "end": per_set(list(ends[cond].values()), bounds=(0.0, 100.0)),
            "gain": per_set([difference(ends[cond][s], starts[s]) for s in runs if starts[s] and ends[cond][s]]),
            "vs_rule": per_set(
                [
                    difference(ends[cond][s], ends["rule"][s])
                    for s in runs
                    if ends[cond][s] and ends.get("rule", {}).get(s) and s not in unpaired
                ]
            )
            if cond != "rule"
            else None,
            "unpaired_with_rule": unpaired,
            "collapsed": [s for s in runs if monitor[s]["collapsed"]],
            "builtin_gain_by_seed": {
                s: rows[d.name]["heldout_gain"].get("built-in test", {}).get("mean")
                for s, d in runs.items()
                if d.name in rows
            },
            "rm_accuracy_by_step": {st: mean(v) for st, v in sorted(rm_acc.items())},
            "rm_auroc_by_step": {st: mean(v) for st, v in sorted(rm_auroc.items())},
            "rm_auroc_seeds_by_step": {st: len(v) for st, v in sorted(rm_auroc.items())},
            "rm_errors_by_step": {  # means over the seeds with per-row scores at that step
                st: {
                    "wrong_accepted": mean(w for w, _ in v),
                    "right_rejected": mean(r for _, r in v),
                    "n_seeds": len(v),
                }
                for st, v in sorted(errors.items())
            },
            "rm_errors_by_seed": errors_by_seed,
            "rm_accepts_wrong_by_kind_by_step": by_kind(runs, evals),
            "rm_negatives_answered_by_seed": {s: rm_negatives_answered(d) for s, d in runs.items()},
            "rm_change": {
                "mean": mean(rm[s][0] for s in with_rm),
                "by_seed": {s: rm[s][0] for s in with_rm},
                "ci95": ci95([rm[s][0] for s in with_rm], [rm[s][1] for s in with_rm]) if with_rm else None,
                "refused": refused,
            },
            "mechanism": {s: mechanism(d, cfgs[s]) for s, d in runs.items()},
            "train_slope_by_seed": {
                s: rows[d.name]["train_accuracy_slope_per_1k"] for s, d in runs.items() if d.name in rows
            },
        }
    scaling = settings["settings"][regime]["flags"].get("scale_rewards", "group")  # cooper rl's default: group
    return {"regime": regime, "regime_scale_rewards": scaling, "conditions": out, "decisions": decisions(out)}


def headline(settings: dict, runs_dir: Path, rows: dict) -> dict | None:
    """The comparison over every finished seed (issue 106 §3: up to HEADLINE_SEEDS), with the decisions judged on
    seeds 0-2 only, as they were pre-registered, whatever seeds were added later."""
    comp = comparison(settings, runs_dir, rows)
    if comp is not None:
        comp["decisions"] = comparison(settings, runs_dir, rows, SEEDS)["decisions"]
    return comp


def decisions(c: dict) -> dict:
    """The pre-registered decisions (predictions.md §3 target, §4, §5), each None until its conditions have seeds 0-2
    finished, and undetermined while a number it uses rests on fewer seeds (a seed's samples or RM scores missing, or
    a seed not paired with rule's) rather than judged on a silently smaller mean. §4 checks its own inputs."""

    def three(x) -> bool:
        return bool(x) and x["n_seeds"] == 3

    def decide(names, judge, needs):
        if not all(c.get(n, {}).get("seeds") == [0, 1, 2] for n in names):
            return None
        if short := [what for what, ok in needs() if not ok]:
            return {"verdict": f"undetermined: fewer than 3 seeds in {'; '.join(short)}"}
        return judge()

    sets = ("built-in test", "SVAMP", "GSM8K")
    arms5 = ("model", "model_strong", "cooper_paper", "cooper_ref_bin")
    return {
        "regime_target": decide(
            ["rule"],
            lambda: regime_target(c["rule"]),
            lambda: [(f"rule's {t} gain", three(c["rule"]["gain"].get(t))) for t in sets],
        ),
        "section4": decide(["cooper_paper", "cooper_paper_noscale"], lambda: section4(c), lambda: []),
        "issue106": verifier_kept.judge(c),  # waits for its variants' own seeds
        "section5": decide(
            ["rule", *arms5],
            lambda: section5(c),
            lambda: (
                [(f"{n} - rule", three((c[n]["vs_rule"] or {}).get("mean of sets"))) for n in arms5]
                + [
                    (f"{n}'s RM change", len(c[n]["rm_change"]["by_seed"]) == 3)
                    for n in ("cooper_paper", "cooper_ref_bin")
                ]
            ),
        ),
    }


def no_significant_loss(gains) -> bool:
    """True if every gain ({..., "ci95": [lo, hi]}) has its CI's upper end >= 0 (predictions.md: nothing lost)."""
    return all(x and x["ci95"] and x["ci95"][1] >= 0 for x in gains)


def meets_target(built, others) -> bool:
    """§3's target: the built-in gain ({mean, ci95}) >= TARGET points with its CI above 0, and no significant loss on
    the other sets."""
    return bool(
        built and built["ci95"] and built["mean"] >= TARGET and built["ci95"][0] > 0 and no_significant_loss(others)
    )


def regime_target(rule: dict) -> dict:
    """§3's target judged on the regime's three seeds (predictions.md): meets_target on the mean gains over seeds,
    95 % CIs over seeds and problems."""
    g = rule["gain"]
    built, others = g.get("built-in test"), {s: g.get(s) for s in ("SVAMP", "GSM8K")}
    return {
        "built_in_gain": built,
        **{f"{s}_gain": x for s, x in others.items()},
        "meets_target": meets_target(built, others.values()),
    }


def section4(c: dict) -> dict:
    """predictions.md §4: the collapse mechanism, tested by removing the std scaling (cooper_paper_noscale)."""
    paper, noscale = c["cooper_paper"], c["cooper_paper_noscale"]
    q1 = {n: [c[n]["mechanism"][s]["pos_adv_to_wrong_q1"] for s in SEEDS] for n in ARMS}
    collapsed = {"cooper_paper": len(paper["collapsed"]), "cooper_paper_noscale": len(noscale["collapsed"])}
    out = {"pos_adv_to_wrong_q1": q1, "collapsed": collapsed, "predictions": None, "seeds_lower": None}
    if None in q1["cooper_paper"] + q1["cooper_paper_noscale"]:  # a missing log is not a failed prediction
        return out | {"verdict": "undetermined: pos_adv_to_wrong missing for a seed"}
    col_p, col_n = collapsed["cooper_paper"], collapsed["cooper_paper_noscale"]
    lower = [s for s in SEEDS if q1["cooper_paper_noscale"][s] < q1["cooper_paper"][s]]
    p = {
        "1_noscale_lower_pos_adv_to_wrong": len(lower) == 3,
        "2_noscale_no_collapse": col_n == 0,
        "3_paper_collapses": col_p >= 1,
    }
    fails1 = 3 - len(lower) >= 2
    if col_p == 0:  # no effect on collapse can show: prediction 1 alone is tested
        untestable = "collapse not testable (cooper_paper collapsed in no seed)"
        if fails1:
            verdict = "refuted (prediction 1 fails in 2 or more seeds)"
        elif p["1_noscale_lower_pos_adv_to_wrong"]:
            verdict = f"prediction 1 holds; {untestable}"
        else:
            verdict = f"prediction 1 fails in 1 seed; {untestable}"
        if col_n:  # not a test of the hypothesis (predictions.md), but the reader must see it
            verdict += f"; prediction 2 fails: cooper_paper_noscale collapsed in {col_n} seed(s)"
    elif p["1_noscale_lower_pos_adv_to_wrong"] and p["2_noscale_no_collapse"] and col_n < col_p:
        verdict = "supported"
    elif col_n >= col_p or fails1:
        verdict = "refuted"
    else:
        verdict = "neither supported nor refuted"
    return out | {"predictions": p, "seeds_lower": lower, "verdict": verdict}


def section5(c: dict) -> dict:
    """predictions.md §5: the issue's targets, judged for cooper_paper and cooper_ref_bin, and the predictions."""

    def vs_rule(n):
        return c[n]["vs_rule"]["mean of sets"] if c[n]["vs_rule"] else None

    def fine(n):  # no collapse, and within 3 points of rule
        d = vs_rule(n)
        return not c[n]["collapsed"] and d is not None and abs(d["mean"]) <= 3

    model_collapses = len(c["model"]["collapsed"])
    targets = {}
    for n in ("cooper_paper", "cooper_ref_bin"):
        d = vs_rule(n)
        targets[n] = {
            "a_ordering": model_collapses >= 2 and not c[n]["collapsed"],
            "b_rule_plus_2": bool(d and d["mean"] >= 2 and d["ci95"] and d["ci95"][0] > 0),
        }
    paper_rm = [v for v in c["cooper_paper"]["rm_change"]["by_seed"].values() if v is not None]
    ref_rm = c["cooper_ref_bin"]["rm_change"]["mean"]
    return {
        "targets": targets,
        "predictions": {
            "1_model_collapses": model_collapses >= 1,
            "2_model_strong_fine": fine("model_strong"),
            "3_cooper_ref_bin_fine": fine("cooper_ref_bin"),
            "4_rm_accuracy": sum(v < 0 for v in paper_rm) >= 2 and ref_rm is not None and ref_rm >= -2,
        },
    }


def comparison_table(comp: dict | None) -> str:
    """The comparison (markdown), or why there is none yet."""
    if comp is None:
        return "No comparison yet: settings.yaml's `regime` is not set (the sweep picks it).\n"

    def cell(x):
        if not x:
            return "-"
        ci = x["ci95"]
        return f"{x['mean']:.1f}" + (f" ({ci[0]:.1f}, {ci[1]:.1f})" if ci else "")

    def signed(x):
        if not x:
            return "-"
        ci = x["ci95"]
        return f"{x['mean']:+.1f}" + (f" ({ci[0]:+.1f}, {ci[1]:+.1f})" if ci else "")

    lines = [
        f"Regime `{comp['regime']}`; finished runs only; 95 % CIs over seeds and problems (with one seed, over problems only).",
        "",
        "| condition | seeds | collapsed | built-in test | SVAMP | GSM8K | mean of sets | gain over step 0 (mean of sets) | built-in gain | − rule (mean of sets) |",  # noqa: E501
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    signal = [  # the second table: the RM and the training signal, per condition (means over seeds)
        "| condition | RM accuracy: start → end (change, 95 % CI) | RM AUROC: start → end | RM accepts wrong / rejects right rows, %: start → end | pos. advantage to wrong, 1st quarter | mean abs advantage | KL, last quarter |",  # noqa: E501
        "|---|---|---|---|---|---|---|",
    ]
    for n, r in comp["conditions"].items():
        if not r["seeds"]:  # named under the tables instead
            continue
        acc = r["rm_accuracy_by_step"]
        ch = r["rm_change"]
        rm = "-"
        if acc:
            steps = sorted(acc, key=int)
            rm = f"{acc[steps[0]]:.1f} → {acc[steps[-1]]:.1f}"
            if ch["mean"] is not None:
                rm += f" ({ch['mean']:+.1f}" + (
                    f", {ch['ci95'][0]:+.1f} … {ch['ci95'][1]:+.1f})" if ch["ci95"] else ")"
                )
        auc = r.get("rm_auroc_by_step") or {}
        aucs = f"{auc[min(auc, key=int)]:.3f} → {auc[max(auc, key=int)]:.3f}" if auc else "-"
        err, errs = r["rm_errors_by_step"], "-"
        if err:
            first, last = (err[k] for k in (min(err, key=int), max(err, key=int)))
            errs = (
                f"{first['wrong_accepted']:.1f} / {first['right_rejected']:.1f} → "
                f"{last['wrong_accepted']:.1f} / {last['right_rejected']:.1f}"
            )
        mech = r["mechanism"].values()
        m = lambda k, form, mech=mech: fmt(mean(x[k] for x in mech), form)  # noqa: E731
        lines.append(
            f"| {n} | {len(r['seeds'])} | {len(r['collapsed'])} | {cell(r['end'].get('built-in test'))} | "
            f"{cell(r['end'].get('SVAMP'))} | {cell(r['end'].get('GSM8K'))} | {cell(r['end']['mean of sets'])} | "
            f"{signed(r['gain']['mean of sets'])} | {signed(r['gain'].get('built-in test'))} | "
            f"{signed((r['vs_rule'] or {}).get('mean of sets'))} |"
        )
        signal.append(
            f"| {n} | {rm} | {aucs} | {errs} | {m('pos_adv_to_wrong_q1', '{:.2f}')} | "
            f"{m('mean_abs_advantage', '{:.2f}')} | {m('kl_last_quarter', '{:.4f}')} |"
        )
    lines += ["", *signal]
    waiting = [n for n, r in comp["conditions"].items() if not r["seeds"]]
    if waiting:
        lines += ["", f"No finished run yet: {', '.join(f'`{n}`' for n in waiting)}."]
    if comp["regime_scale_rewards"] != "group":  # predictions.md, addendum of 2026-12-02
        lines += [
            "",
            f"**`rule` runs the regime's advantage scaling (`scale_rewards: {comp['regime_scale_rewards']}`), the "
            "model-based conditions but `cooper_paper_noscale` the paper's (the group's std): a condition − rule "
            "compares two scalings as well as two rewards.**",
        ]
    refused = {n: r["rm_change"]["refused"] for n, r in comp["conditions"].items() if r["rm_change"]["refused"]}
    if refused:
        lines += [
            "",
            f"**RM accuracy change not computed (the RM's evaluation set changed within the run):** {refused}",
        ]
    shas = {n: r["rm_sha256"] for n, r in comp["conditions"].items() if len(r["rm_sha256"]) > 1}
    if shas:
        lines += ["", f"**Runs of one condition started from different RMs:** {shas}"]
    d = comp["decisions"]
    t = d.get("regime_target")
    lines += [
        "",
        "§3's target on the regime's three seeds (built-in gain ≥ 5 points, CI above 0; SVAMP, GSM8K not "
        + (
            f"significantly below step 0): built-in {signed(t['built_in_gain'])}, SVAMP {signed(t['SVAMP_gain'])}, "
            f"GSM8K {signed(t['GSM8K_gain'])}: **{'met' if t['meets_target'] else 'not met'}**"
            if t and "meets_target" in t
            else f"significantly below step 0): {t['verdict'] if t else 'waiting for 3 seeds of rule'}"
        ),
    ]
    for section, waiting in (("section4", "both arms"), ("section5", "every condition")):
        verdict = json.dumps(_rounded(d[section])) if d[section] else f"waiting for 3 seeds of {waiting}"
        lines += ["", f"§{section[-1]} (pre-registered): {verdict}"]
    if d.get("issue106"):
        lines += ["", f"Issue 106, the RM kept a verifier (pre-registered, verifier_kept.py): {json.dumps(_rounded(d['issue106']))}"]  # fmt: skip
    return "\n".join(lines) + "\n"


TARGET = 5.0  # points of built-in-test gain (issue 67 §3)
LONG = "b64_long"  # another budget: not a candidate for the pick (predictions.md)


COST_NOISE = 0.05  # costs within 5 % are equal for the pick: b64 and b64_lr3e-6 (identical compute) differed by ~3 %


def side_by_side(names, pairs: list[dict]) -> tuple[dict, bool] | None:
    """The costs of `names` from side-by-side measurements (results/costs.json's pairs, each {setting: seconds per
    1,000 rollouts} of two settings measured together): (seconds, True) where one pair holds them all, else (costs
    relative to one setting measured beside each of the others, False); None where the pairs do not connect them.
    Costs of different measurements are never compared directly (the machine's speed varies between them)."""
    for p in reversed(pairs):  # the latest measurement first
        if set(names) <= set(p):
            return {n: p[n] for n in names}, True
    for ref in names:
        rel = {ref: 1.0}
        for n in names:
            p = next((p for p in reversed(pairs) if {ref, n} <= set(p)), None)
            if p is None:
                break
            rel[n] = p[n] / p[ref]
        else:
            return rel, False
    return None


def pick(rows: dict, settings: dict, measured: list[dict] | None = None) -> dict:
    """predictions.md's pick from the sweep's seed-0 runs: among the settings whose SVAMP and GSM8K gains are not
    significantly negative (their CI's upper end >= 0), the largest built-in-test gain; within 1 point of it, the
    cheaper (seconds per 1,000 rollouts; within COST_NOISE of the cheapest: the larger gain). Costs come from the
    runs where they ran with equal torch threads, else from `measured` (results/costs.json's pairs: side_by_side);
    None until every candidate finished or while such a measurement is missing. Also whether the pick meets the
    target on seed 0 and what b64_long says (predictions.md's rule 7: a pick below the target confirms at 6,400
    rollouts if b64_long reaches it)."""
    names = [n for n in settings["settings"] if n != LONG]
    runs = {n: rows.get(run_name(n, 0)) for n in names}
    waiting = [n for n, r in runs.items() if not (r and r["finished"])]
    if waiting:
        return {"pick": None, "waiting_for": waiting}

    def gain(r, s):
        return r["heldout_gain"].get(s)

    def no_loss(r):  # SVAMP and GSM8K not significantly below step 0
        return no_significant_loss(gain(r, s) for s in ("SVAMP", "GSM8K"))

    def meets(r):  # the target: >= 5 points on the built-in test, CI above 0, no significant loss elsewhere
        return meets_target(gain(r, "built-in test"), [gain(r, s) for s in ("SVAMP", "GSM8K")])

    ok = {n: r for n, r in runs.items() if no_loss(r)}
    if not ok:
        return {"pick": None, "waiting_for": [], "why": "every setting lost significantly on SVAMP or GSM8K"}
    best = max(gain(r, "built-in test")["mean"] for r in ok.values())
    close = {n: r for n, r in ok.items() if gain(r, "built-in test")["mean"] >= best - 1}
    long = rows.get(run_name(LONG, 0))
    out = {
        "pick": None,
        "waiting_for": [],
        "eligible": sorted(ok),
        "within_1_point": sorted(close),
        "b64_long_finished": bool(long and long["finished"]),
        "b64_long_meets_target": bool(long and long["finished"] and meets(long)),
    }
    threads = {n: r["torch_threads"] for n, r in close.items()}
    if len(set(threads.values())) == 1:  # wall-clock cost of the runs themselves (beside another job or alone)
        cost, seconds = {n: r["seconds_per_1k_rollouts"] for n, r in close.items()}, True
        out["cost_from"] = "runs"
    elif measured_costs := side_by_side(close, measured or []):  # predictions.md, addendum of 2026-12-02
        (cost, seconds), out["cost_from"] = measured_costs, "results/costs.json"
    else:
        out["why"] = (
            f"the settings within 1 point ran with different torch threads ({threads}): measure their cost "
            "side by side, one thread each, into results/costs.json: experiments/rl_learns/costs.py A B"
        )
        return out
    # cheaper means more than COST_NOISE cheaper (identical-compute runs differed by ~3 %); among the settings that
    # cost about the least, the largest gain (predictions.md, addendum of 2026-12-02)
    cheap = [n for n in close if cost[n] <= min(cost.values()) * (1 + COST_NOISE)]
    out["pick"] = max(cheap, key=lambda n: gain(close[n], "built-in test")["mean"])
    if seconds:
        out["seconds_per_1k_rollouts"] = {n: round(c) for n, c in cost.items()}
    else:
        out["cost_relative"] = {n: round(c, 3) for n, c in cost.items()}
    out["pick_meets_target_seed0"] = meets(runs[out["pick"]])
    return out


def _rounded(x, digits: int = 3):
    """x with every float rounded (a decision's JSON, readable in the table)."""
    if isinstance(x, float):
        return round(x, digits)
    if isinstance(x, dict):
        return {k: _rounded(v, digits) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v, digits) for v in x]
    return x


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
        + "\n## The monitor, out of sample (thresholds frozen in monitor.yaml)\n\n"
        + monitor_table(rows),
    )
    if sync_doc(DOC, "comparison", tables_only(comparison_table(comp))):
        print(f"updated the comparison table in {DOC}")
    print(table(sweep))


if __name__ == "__main__":
    main()

"""Issue 67 §4/§5 and issue 106: the comparison of reward conditions in the regime the sweep picked, per condition
over its finished seeds: held-out accuracy at the end, its gain over step 0 and its difference to `rule` (paired by
seed and problem, 95 % CIs), collapses, the RM on the labelled set over training (accuracy, AUROC, wrong rows
accepted by who wrote them) and §4's mechanism; its table and figure. The decisions it feeds: decisions.py."""

from __future__ import annotations

import functools
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from cooper_rl.io import read_jsonl  # noqa: E402
from cooper_rl.learning_signal import group_advantages  # noqa: E402
from stats import ci95, difference, mean  # noqa: E402

sys.path.insert(0, str(HERE))
from decisions import decisions  # noqa: E402
from rundirs import HEADLINE_SEEDS, SEEDS, finished_run, run_name  # noqa: E402
from runlogs import answer_kind, fmt, monitor_report, rm_pairs, rollout_calls, rounded, scores_at, set_name  # noqa: E402


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
        auroc_by_seed: dict[int, dict] = {}
        for s, ev in evals.items():
            for step, e in {e["step"]: e for e in ev if e.get("rm")}.items():  # once per step (the last, if resumed)
                rm_acc.setdefault(step, []).append(100 * e["rm"]["accuracy"])
                if e["rm"].get("auroc") is not None:
                    rm_auroc.setdefault(step, []).append(e["rm"]["auroc"])
                    auroc_by_seed.setdefault(s, {})[step] = e["rm"]["auroc"]
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
            "rm_auroc_by_seed": auroc_by_seed,
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
    not_run = [n for n, r in comp["conditions"].items() if not r["seeds"]]
    if not_run:
        lines += ["", f"No finished run yet: {', '.join(f'`{n}`' for n in not_run)}."]
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
        verdict = json.dumps(rounded(d[section])) if d[section] else f"waiting for 3 seeds of {waiting}"
        lines += ["", f"§{section[-1]} (pre-registered): {verdict}"]
    if d.get("issue106"):
        lines += ["", f"Issue 106, the RM kept a verifier (pre-registered, verifier_kept.py): {json.dumps(rounded(d['issue106']))}"]  # fmt: skip
    return "\n".join(lines) + "\n"

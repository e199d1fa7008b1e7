"""Issue 106's pre-registered judgement (predictions.md, "Cooper whose RM stays a verifier" and its second variant):
each variant of the RM update against `cooper_paper`, from comparison.py's comparison of seeds 0-2 (the judgement waits
until the variant and cooper_paper have all three, except that a finished seed that misses target 1 decides that target,
and so the variant's defeat, at once; seeds added later for the headline do not change it).

Targets (both variants):
  1. the labelled set's wrong rows the RM accepts stay <= its step-0 share + 2 points at every evaluation, every seed;
  2. its AUROC at the last evaluation (mean over seeds) is not below cooper_paper's;
  3. no seed collapses, and the mean of sets ends within 2 points of cooper_paper's (means over seeds).
A variant becomes the default of --reward cooper only if it meets all three; if both do, the one with the lower mean
share of wrong rows accepted at the last evaluation.
"""

from __future__ import annotations

import statistics

from runlogs import fmt

SEEDS = [0, 1, 2]  # the pre-registered seeds
EVALS = (25, 50)  # target 1's evaluations after step 0
MARGIN = 2.0  # target 1: points above the step-0 share
WITHIN = 2.0  # target 3: points of the mean of sets
VARIANTS = {  # the predictions.md numbers each variant's predictions name: wrong accepted at the end at most
    "cooper_rehearsal": {"seeds_meeting_1": 2, "wrong_accepted_end": 8.0},
    "cooper_recal": {"seeds_meeting_1": 3, "wrong_accepted_end": 6.0, "right_rejected_end": (0.2, 20.0)},
}


def _by_int(d: dict) -> dict:
    """A dict whose keys are seeds or steps, as ints (summary.json stores them as strings)."""
    return {int(k): v for k, v in d.items()}


def _end(d: dict):
    """The value at the last step of {step: value}, or None."""
    d = _by_int(d or {})
    return d[max(d)] if d else None


def target1(variant: dict) -> dict:
    """Per seed of SEEDS: the step-0 share of wrong rows accepted, the highest share at EVALS, and whether it stays
    <= +MARGIN (met None where an evaluation's per-row scores are missing)."""
    out, by_seed = {}, _by_int(variant["rm_errors_by_seed"])
    for seed in SEEDS:
        steps = _by_int(by_seed.get(seed, {}))
        if missing := [st for st in (0, *EVALS) if st not in steps]:
            out[seed] = {"met": None, "why": f"no RM scores per row at step(s) {missing}"}
            continue
        start, worst = steps[0]["wrong_accepted"], max(steps[st]["wrong_accepted"] for st in EVALS)
        out[seed] = {"start": start, "highest_later": worst, "met": worst <= start + MARGIN}
    return out


def judge_variant(name: str, c: dict) -> dict | None:
    """The targets and predictions of one variant, or None until it and cooper_paper have seeds 0-2 finished (or
    sooner, target 1 alone: missed, once a finished seed misses it). A number that rests on fewer than the 3 seeds (a
    seed's RM scores or samples missing) is None: undetermined."""
    v, paper = c.get(name), c.get("cooper_paper")
    waits = not v or not paper or v["seeds"] != SEEDS or paper["seeds"] != SEEDS
    pre = all(x is None or set(x["seeds"]) <= set(SEEDS) for x in (v, paper))  # not the headline's seeds 0-4
    t1 = target1(v) if v else {}
    if waits and pre and (missed := [s for s, x in t1.items() if x["met"] is False]):
        # target 1 holds only in every seed: one finished seed that misses it decides it, and so the decision (a
        # variant that misses a target cannot become the default); the other targets wait for the three seeds
        return {
            "seeds": v["seeds"],
            "target_1_by_seed": t1,
            "missed_before_3_seeds": missed,
            "auroc_end": None,
            "auroc_end_paper": None,
            "mean_of_sets_minus_paper": None,
            "collapsed": v["collapsed"],
            "targets": {
                "1_wrong_accepted_held": False,
                "2_auroc_not_below_paper": None,
                "3_no_collapse_within_2": None,
            },
            "all_targets_met": False,
            "predictions": {"seeds_meeting_target_1": None, "wrong_accepted_end_mean": None, "prediction_1": None},
        }
    if waits:
        return None

    def all3(x, n):  # x where it rests on the 3 seeds
        return x if x is not None and n == len(SEEDS) else None

    auc, auc_paper = (all3(_end(x["rm_auroc_by_step"]), _end(x.get("rm_auroc_seeds_by_step"))) for x in (v, paper))
    end, end_paper = (all3(x["end"]["mean of sets"], (x["end"]["mean of sets"] or {}).get("n_seeds")) for x in (v, paper))  # fmt: skip
    diff = end["mean"] - end_paper["mean"] if end and end_paper else None
    err, err_paper = (all3(_end(x["rm_errors_by_step"]), (_end(x["rm_errors_by_step"]) or {}).get("n_seeds")) for x in (v, paper))  # fmt: skip
    met1 = [x["met"] for x in t1.values()]
    targets = {  # target 1: one seed's miss decides it; otherwise every seed must be known
        "1_wrong_accepted_held": False if False in met1 else None if None in met1 else True,
        "2_auroc_not_below_paper": auc >= auc_paper if auc is not None and auc_paper is not None else None,
        "3_no_collapse_within_2": (not v["collapsed"] and abs(diff) <= WITHIN) if diff is not None else None,
    }
    p = VARIANTS[name]
    predictions = {
        "seeds_meeting_target_1": sum(bool(x["met"]) for x in t1.values()),
        "wrong_accepted_end_mean": err["wrong_accepted"] if err else None,
        "prediction_1": (
            sum(bool(x["met"]) for x in t1.values()) >= p["seeds_meeting_1"]
            and err is not None
            and err["wrong_accepted"] <= p["wrong_accepted_end"]
        ),
        "auroc_end_minus_paper": auc - auc_paper if auc is not None and auc_paper is not None else None,
        "auroc_within_0.01": abs(auc - auc_paper) <= 0.01 if auc is not None and auc_paper is not None else None,
    }
    if "right_rejected_end" in p and err and err_paper:
        lo, hi = p["right_rejected_end"]
        predictions["right_rejected_end_mean"] = err["right_rejected"]
        predictions["right_rejected_above_paper_at_most_20"] = err_paper["right_rejected"] < err["right_rejected"] <= hi  # fmt: skip
    # every target met: True; one missed: False (whatever the others); otherwise undetermined
    met = False if False in targets.values() else True if all(targets.values()) else None
    return {
        "seeds": v["seeds"],
        "target_1_by_seed": t1,
        "auroc_end": auc,
        "auroc_end_paper": auc_paper,
        "mean_of_sets_minus_paper": diff,
        "collapsed": v["collapsed"],
        "targets": targets,
        "all_targets_met": met,
        "predictions": predictions,
    }


def judge(c: dict) -> dict:
    """{variant: judge_variant, ..., "default": the variant the decision rule makes the default, or None}."""
    out = {n: judge_variant(n, c) for n in VARIANTS}
    if waiting := [n for n, j in out.items() if j is None]:
        return out | {"default": f"waiting for 3 seeds of {', '.join(waiting)}"}
    if open_ := [n for n, j in out.items() if j["all_targets_met"] is None]:
        return out | {"default": f"undetermined: a number of {', '.join(open_)} rests on fewer than 3 seeds"}
    winners = [n for n, j in out.items() if j and j["all_targets_met"]]
    ends = {n: out[n]["predictions"]["wrong_accepted_end_mean"] for n in winners}
    out["default"] = min(winners, key=lambda n: ends[n]) if winners else None
    return out


def table(c: dict, hack: dict | None = None, judged: dict | None = None) -> str:
    """Per seed of cooper_paper and each variant (every finished seed, the headline's 3-4 too): the labelled set's
    wrong rows the RM accepts at step 0, 25 and 50 and whether target 1 holds, its right rows rejected and AUROC at the
    end, the mean of sets, collapse, and (hack: hack_transfer.json's `rms`) the share of the static RM's hacked
    rule-wrong rollouts the final RM accepts; then each variant's judgement: `judged` (judge() of the comparison of
    seeds 0-2, as summary.json's decisions hold it), or judge(c) (markdown)."""
    hack = hack or {}
    start = (hack.get("weak (start)") or {}).get("wrong_accepted")
    lines = [
        "| condition, seed | RM accepts wrong rows, %: step 0 → 25 → 50 | target 1 (≤ step 0 + 2) | RM rejects right rows, "
        "% (step 50) | RM AUROC (step 50) | mean of sets (step 50) | collapsed | static RM's hacked rollouts accepted, "
        f"% (end; the weaker RM: {fmt(start)}) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in ("cooper_paper", *VARIANTS):
        r = c.get(name)
        if not r or not r["seeds"]:
            continue
        errors, aucs = _by_int(r["rm_errors_by_seed"]), _by_int(r.get("rm_auroc_by_seed") or {})
        ends = (r["end"].get("mean of sets") or {}).get("by_seed") or []
        ends = dict(zip(r["seeds"], ends)) if len(ends) == len(r["seeds"]) else {}
        t1 = target1(r)
        for seed in r["seeds"]:
            e = _by_int(errors.get(seed, {}))
            wrong = " → ".join(fmt((e.get(st) or {}).get("wrong_accepted")) for st in (0, *EVALS))
            met = (t1.get(seed) or {}).get("met")
            auc = _end(aucs.get(seed))
            lines.append(
                f"| {name} s{seed} | {wrong} | {'-' if met is None else 'met' if met else 'missed'} | "
                f"{fmt((e.get(max(e)) or {}).get('right_rejected') if e else None)} | "
                f"{'-' if auc is None else f'{auc:.3f}'} | {fmt(ends.get(seed))} | "
                f"{'yes' if seed in r['collapsed'] else 'no'} | "
                f"{fmt((hack.get(f'{name}-s{seed} (end)') or {}).get('wrong_accepted'))} |"
            )
    j = judged if judged is not None else judge(c)
    lines.append("")
    for name in VARIANTS:
        v = j[name]
        if v is None:
            missing = [n for n in (name, "cooper_paper") if not set(SEEDS) <= set((c.get(n) or {}).get("seeds", []))]
            lines.append(f"- `{name}`: not judged yet (waiting for seeds 0-2 of {' and '.join(missing)}).")
            continue
        t = v["targets"]
        said = {None: "undetermined", True: "met", False: "missed"}
        if early := v.get("missed_before_3_seeds"):
            lines.append(
                f"- `{name}`: target 1 missed in seed{'s' * (len(early) > 1)} {', '.join(map(str, early))} before seeds "
                "0-2 finished (it holds only in every seed): it cannot become the default; targets 2 and 3 not judged."
            )
            continue
        lines.append(
            f"- `{name}`: target 1 {said[t['1_wrong_accepted_held']]}, target 2 (AUROC {fmt(v['auroc_end'], '{:.3f}')} against "
            f"cooper_paper's {fmt(v['auroc_end_paper'], '{:.3f}')}) {said[t['2_auroc_not_below_paper']]}, target 3 (mean of sets "
            f"{fmt(v['mean_of_sets_minus_paper'], '{:+.1f}')} against cooper_paper, collapsed {len(v['collapsed'])}) "
            f"{said[t['3_no_collapse_within_2']]}."
        )
    lines.append(f"- The default of `--reward cooper` by the decision rule: {j['default'] or 'neither variant'}.")
    return "\n".join(lines) + "\n"


def cost_line(rows: dict) -> str:
    """What a step of cooper_paper and each variant costs: the median, over their finished runs that had 2 torch
    threads at every step (a run beside another has 1; on this project's 2-core machines, 2 is a run alone, though
    other work may have shared the cores), of each run's median step and RM-side seconds (report.run_report's
    `median_seconds`; markdown)."""
    parts = []
    for name in ("cooper_paper", *VARIANTS):
        runs = [
            r
            for n, r in rows.items()
            if n.rsplit("-s", 1)[0] == name and r["finished"] and r["torch_threads_all"] == [2]
        ]
        if not runs:
            continue
        keys = set.intersection(*(set(r["median_seconds"]) for r in runs))
        med = {k: statistics.median(r["median_seconds"][k] for r in runs) for k in keys}
        shared = {r["shared_prefix"] for r in runs}
        rm = [f"{label} {med[k]:.0f} s" for k, label in (("rm_update", "RM update"), ("recalibrate", "recalibration")) if k in med]  # fmt: skip
        parts.append(
            f"`{name}` {med['step']:.0f} s ("
            + "".join(f"{x}, " for x in rm)
            + f"{len(runs)} run{'s' * (len(runs) > 1)}"
            + ("" if shared == {True} else ", before the shared-prefix forwards" if shared == {False} else ", mixed")
            + ")"
        )
    head = "- Seconds per step, median of the finished runs with 2 torch threads at every step: "
    return (head + "; ".join(parts) + ".\n") if parts else ""

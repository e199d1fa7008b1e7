"""The pre-registered decisions of issue 67 (predictions.md), judged from the comparison's numbers: the regime's
pick (the sweep) and its §3 target, §4 (the collapse mechanism, by intervention), §5 (the comparison's targets and
predictions) and issue 106's (verifier_kept.py). Each waits for its seeds; none is judged on fewer than it names (but
issue 106's target 1, which holds only in every seed: one finished seed's miss decides it)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import verifier_kept  # noqa: E402
from rundirs import SEEDS, run_name  # noqa: E402

ARMS = ("cooper_paper", "cooper_paper_noscale")  # §4: the paper's Cooper and its intervention arm
TARGET = 5.0  # points of built-in-test gain (issue 67 §3)
LONG = "b64_long"  # another budget: not a candidate for the pick (predictions.md)
COST_NOISE = 0.05  # costs within 5 % are equal for the pick: b64 and b64_lr3e-6 (identical compute) differed by ~3 %


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

"""Which negatives made `cooper_new`'s RM worse at verifying? An intervention on the RM side alone (issue 67, §5).

In issue 15, `cooper_new`'s co-optimized RM fell from 83.8 % to 49-58 % on the fixed labelled set by step 100 (all
three seeds) while its pairwise loss fell and it accepted every rule-wrong rollout. Its pairs came from four kinds of
negative (corrupt, mined, truncate, masterkey). This script replays the RM's side of such a run on the policy's
committed rollouts -- the same reward calls, the same positives (rule-verified rollouts), the same update
(`cooper_step`: one pairwise step per reward call, the run's RM optimizer settings), from the same starting RM -- but
with the negatives restricted to an ARM: all kinds (does the replay reproduce the drop?), one kind alone, or all
but one kind. Nothing of the policy is rerun: what differs between arms is only which pairs the RM learns from.

usage: python experiments/reward_hacking/rm_replay.py [--runs cooper_new-s0 ...] [--arms all only:mined ...]
                                                       [--calls 25] [--eval-every 5] [--rm runs/verifyrm-weak]
reads  results/runs/RUN/{rl_config.json,rollouts.jsonl.gz} and the run's rm_eval_data (the fixed labelled set)
writes results/rm_replay/RUN.ARM.jsonl, one line per evaluation of the RM on the labelled set (after 0, EVAL_EVERY,
       ... CALLS reward calls: calls 1..25 are optimizer steps 1..97, i.e. the run's step-100 evaluation) plus one
       line per reward call (its pairs per kind, loss); written when the arm is done (an arm is ~10 min: a killed
       replay reruns only unfinished arms). Thresholds and predictions: results/rm_replay/PREREGISTRATION.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from cooper_rl.cooper.negatives import NegativeMix, make_negative_generator
from cooper_rl.cooper.reward_model import VerifyRM
from cooper_rl.cooper.step import cooper_step
from cooper_rl.io import atomic_write_json, atomic_write_text, weights_sha256
from cooper_rl.rm.data import load_rm_rows
from cooper_rl.rm.evaluate import binary_metrics, labelled_scores

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from stats import mean_sd, pct_sd, records  # noqa: E402  (experiments/stats.py)

sys.path.insert(0, str(HERE))
from check_artifacts import rm_differences, rm_metrics  # noqa: E402  (an RM rebuilt on another CPU)

RUNS = HERE / "results" / "runs"
OUT = HERE / "results" / "rm_replay"
# the pre-registered design (results/rm_replay/PREREGISTRATION.md)
RUNS_REPLAYED = ("cooper_new-s0", "cooper_new-s1", "cooper_new-s2")
KINDS = ("corrupt", "mined", "truncate", "masterkey")
ARMS = ("all", *(f"only:{k}" for k in KINDS), "only:corrupt+mined", "only:truncate+masterkey")
CALLS = 25  # reward calls 1-25: the run's steps 1-97, before its step-100 evaluation


def arm_kinds(arm: str, kinds: list[str]) -> list[str]:
    """The negative kinds of an arm: 'all', 'only:K' or 'without:K', K one of the run's kinds or several joined by
    '+' ('only:corrupt+mined')."""
    if arm == "all":
        return list(kinds)
    how, _, named = arm.partition(":")
    named = named.split("+")
    if how not in ("only", "without") or not set(named) <= set(kinds) or len(set(named)) != len(named):
        raise ValueError(f"arm {arm!r}: use all, only:K or without:K with K in {kinds} (several joined by +)")
    return [k for k in kinds if (k in named) == (how == "only")]


def arm_negatives(arm: str, cfg: dict) -> NegativeMix:
    """The arm's negative generator: the run's own mix (built as cooper rl builds it) restricted to the arm's
    kinds, so each kept kind draws as it did in the run."""
    mix = make_negative_generator(cfg["negatives"], seed=cfg["seed"])
    if not isinstance(mix, NegativeMix):  # a run with one kind
        mix = NegativeMix({cfg["negatives"].strip(): mix})
    keep = arm_kinds(arm, mix.kinds)
    return NegativeMix({k: g for k, g in zip(mix.kinds, mix.members) if k in keep})


def reward_calls(run: Path) -> list[list[dict]]:
    """The run's reward calls in order, each its logged rollouts (question, reference, completion, verdict)."""
    calls: dict[int, list[dict]] = {}
    for r in records(run / "rollouts.jsonl"):
        calls.setdefault(r["step"], []).append(r)
    return [calls[s] for s in sorted(calls)]


def rm_eval(rm: VerifyRM, rows: list[dict], batch_size: int) -> dict:
    """The RM's metrics on the labelled rows, with its mean P(correct) on the correct and on the wrong rows (scores
    pushed up together, or apart?)."""
    probs = labelled_scores(rm, rows, batch_size)
    m = binary_metrics([r["label"] for r in rows], probs)  # as the run's own evaluation
    for label, name in ((1, "mean_p_correct_rows"), (0, "mean_p_wrong_rows")):
        ps = [p for p, r in zip(probs, rows) if int(r["label"]) == label]
        m[name] = sum(ps) / len(ps) if ps else None
    return m


def same_rm(run: Path, cfg: dict, rm_path: str) -> dict | None:
    """None if rm_path is the RM the run started from by sha256; where it was rebuilt on another CPU, what shows it
    equal within float rounding (check_artifacts.py's criterion on the run's step-0 RM evaluation: every
    thresholded metric equal, AUROC and ECE within rounding); SystemExit for another RM."""
    sha = weights_sha256(rm_path)
    if sha is None:
        raise SystemExit(f"{rm_path}: no RM weights (model.safetensors)")
    if not cfg.get("rm_sha256") or sha == cfg["rm_sha256"]:
        return None
    step0 = next((r for r in records(run / "evals.jsonl") if r.get("step") == 0 and "rm" in r), None)
    diff = ["no step-0 RM evaluation to compare"]
    if step0 is not None:
        got = rm_metrics(rm_path, cfg["rm_eval_data"], cfg["rm_batch_size"], cfg["rm_max_length"], sha)
        diff = rm_differences(got, step0["rm"])
    if diff:
        raise SystemExit(
            f"{rm_path} is not the RM {run.name} started from "
            f"(sha256 {sha[:12]} != {cfg['rm_sha256'][:12]}; {'; '.join(diff)})"
        )
    return {"sha256": sha, "run_sha256": cfg["rm_sha256"], "auroc": got["auroc"], "run_auroc": step0["rm"]["auroc"]}


def replay(run: Path, arm: str, rm_path: str, calls: int, eval_every: int, start: dict | None = None) -> list[dict]:
    """The arm's log lines: evaluations of the RM (kind "eval") and its reward calls (kind "call"); `start`: the
    starting RM's evaluation when known (the same for every arm of a run)."""
    cfg = json.loads((run / "rl_config.json").read_text())
    kinds = [k.strip() for k in cfg["negatives"].split(",")]
    if cfg.get("reference_positives") or {"api", "local"} & set(kinds):
        raise SystemExit(
            f"{run.name}: reference positives and assistant negatives are not replayed (only rollout pairs)"
        )
    logged = {m["step"]: m for m in records(run / "metrics.jsonl")}  # the run's own record of each reward call
    todo = reward_calls(run)[:calls]
    if len(todo) < calls:
        raise SystemExit(f"{run.name}: {len(todo)} reward calls logged in rollouts.jsonl(.gz), {calls} asked")
    rounding = same_rm(run, cfg, rm_path)
    torch.manual_seed(cfg["seed"])
    rm = VerifyRM.from_pretrained(rm_path, max_length=cfg["rm_max_length"], device="cpu")
    rm.autocast = cfg.get("rm_bf16_autocast", False)
    rm.configure_optimizer(lr=cfg["rm_learning_rate"], weight_decay=cfg["rm_weight_decay"], warmup_steps=cfg["rm_warmup_steps"])  # fmt: skip
    negatives = arm_negatives(arm, cfg)
    rows = load_rm_rows(cfg["rm_eval_data"])
    bs = cfg["rm_batch_size"]
    log = [{"kind": "eval", "call": 0, "arm": arm, "rm": start or rm_eval(rm, rows, bs)}]
    if rounding:
        log[0]["rm_equal_within_rounding"] = rounding
    for c, rollouts in enumerate(todo, 1):
        q, r, t, v = ([x[k] for x in rollouts] for k in ("question", "reference", "completion", "verdict"))
        t0 = time.perf_counter()
        scores = rm.score(q, r, t, batch_size=bs)  # what `mined` ranks by: this RM before this call's update
        out = cooper_step(rm, negatives, q, r, t, v, cfg["pairs_per_prompt"], scores=scores)
        # fidelity: the run's RM scored these rollouts before its update (the logged reward, or rm_score beside a
        # 0/1 reward), and logged its pairs per kind
        gap = sum(abs(a - x.get("rm_score", x["reward"])) for a, x in zip(scores, rollouts)) / len(scores)
        run_log = logged.get(rollouts[0]["step"], {})
        run_pairs = {k.removeprefix("rm/"): v for k, v in run_log.items() if k.startswith(("rm/valid/", "rm/n_valid"))}
        log.append(
            {"kind": "call", "call": c, "step": rollouts[0]["step"], "seconds": time.perf_counter() - t0, **out,
             "score_gap_to_run": gap, "run": run_pairs}
        )  # fmt: skip
        if c % eval_every == 0 or c == len(todo):
            log.append(
                {"kind": "eval", "call": c, "step": rollouts[0]["step"], "arm": arm, "rm": rm_eval(rm, rows, bs)}
            )
            print(f"[replay] {run.name} {arm} call {c}: accuracy {log[-1]['rm']['accuracy']:.3f}", flush=True)
    return log


def arm_file(out: Path, run: str, arm: str) -> Path:
    """Where an arm's log goes: results/rm_replay/RUN.ARM.jsonl (':' -> '_', '+' -> '-')."""
    return out / f"{run}.{arm.replace(':', '_').replace('+', '-')}.jsonl"


def fidelity(calls: list[dict]) -> dict:
    """How closely the `all` arm repeats its run: the RM scores of the rollouts before each update against the run's
    logged ones (mean absolute difference, at the first call and over all), and the calls whose valid pairs per kind
    are those the run logged."""
    same = []
    for c in calls:
        pairs = {k: v for k, v in c.items() if k.startswith("valid/") or k == "n_valid"}
        if pairs == c["run"]:
            same.append(c["call"])
    return {
        "score_gap_first_call": calls[0]["score_gap_to_run"],
        "score_gap_mean": sum(c["score_gap_to_run"] for c in calls) / len(calls),
        "calls_with_the_runs_pairs": len(same),
        "first_call_pairs_match": bool(same) and same[0] == 1,
        "calls": len(calls),
    }


def report(out: Path = OUT) -> dict:
    """summary.json and table.md of the replayed arms, with the pre-registered predictions judged
    (PREREGISTRATION.md) once the whole design is in (ARMS x RUNS, CALLS calls each): per arm and run the accuracy,
    predicted-positive rate and mean P(correct) of the correct and of the wrong rows at call 0 and at the last call,
    the RM updates taken (calls with a valid pair) and pairs learnt from; the drop's mean and sd over runs and its
    share of `all`'s; for `all`, the fidelity to the run's own log."""
    arms: dict[str, dict[str, dict]] = {}
    for f in sorted(out.glob("*.jsonl")):
        log = [json.loads(x) for x in f.read_text().splitlines()]
        evals = [x for x in log if x["kind"] == "eval"]
        calls = [x for x in log if x["kind"] == "call"]
        run = f.name.split(".")[0]
        first, last = evals[0], evals[-1]
        keys = ("accuracy", "predicted_positive_rate", "mean_p_correct_rows", "mean_p_wrong_rows")
        arms.setdefault(first["arm"], {})[run] = {
            "calls": last["call"],
            **{f"{k}_start": first["rm"][k] for k in keys},
            **{f"{k}_end": last["rm"][k] for k in keys},
            "drop": first["rm"]["accuracy"] - last["rm"]["accuracy"],
            "rm_updates": sum(c["n_valid"] > 0 for c in calls),
            "pairs": sum(c["n_valid"] for c in calls),
            "curve": [(e["call"], e["rm"]["accuracy"]) for e in evals],
            **({"fidelity": fidelity(calls)} if first["arm"] == "all" and calls else {}),
        }
    summary: dict = {"arms": {}}
    for arm, runs in arms.items():
        drops = [r["drop"] for r in runs.values()]
        ppr = [r["predicted_positive_rate_end"] - r["predicted_positive_rate_start"] for r in runs.values()]
        summary["arms"][arm] = {"runs": runs, "drop": mean_sd(drops), "ppr_rise": mean_sd(ppr)}
    complete = all(
        set(arms.get(a, {})) == set(RUNS_REPLAYED) and all(r["calls"] == CALLS for r in arms[a].values()) for a in ARMS
    )
    if complete:  # judged on the whole design only; 1-3 decide nothing when the replay misses the drop (0)
        drop = {a: summary["arms"][a]["drop"]["mean"] for a in ARMS}
        half = drop["all"] / 2
        big = [a for a in ARMS if a != "all" and drop[a] >= half]
        faithful = all(r["fidelity"]["first_call_pairs_match"] and r["fidelity"]["score_gap_first_call"] <= 1e-3 for r in arms["all"].values())  # fmt: skip
        valid = drop["all"] >= 0.15 and faithful
        summary["all_arm_faithful_at_first_call"] = faithful
        summary["predictions"] = {
            "0_replay_reproduces_the_drop": valid,
            "1_answerless_negatives_did_it": (drop["only:truncate+masterkey"] >= half > drop["only:corrupt+mined"])
            if valid
            else None,
            "2_scores_up_together": all(summary["arms"][a]["ppr_rise"]["mean"] >= 0.2 for a in big + ["all"])
            if valid
            else None,
            "3_one_answerless_kind_alone": max(drop["only:truncate"], drop["only:masterkey"]) >= half
            if valid
            else None,
        }
    lines = [
        "| arm | runs | accuracy: start → end (mean) | drop, points (mean ± sd) | share of `all`'s drop "
        "| RM updates (pairs) | predicted-positive rate | P(correct): correct rows | P(correct): wrong rows |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    all_drop = summary["arms"].get("all", {}).get("drop")
    for arm, v in summary["arms"].items():
        rs = list(v["runs"].values())
        m = lambda k, rs=rs: sum(r[k] for r in rs) / len(rs)  # noqa: E731
        share = f"{v['drop']['mean'] / all_drop['mean']:.2f}" if all_drop and all_drop["mean"] else "-"
        lines.append(
            f"| `{arm}` | {len(rs)} | {100 * m('accuracy_start'):.1f} → {100 * m('accuracy_end'):.1f} "
            f"| {pct_sd(v['drop'])} | {share} | {m('rm_updates'):.1f} ({m('pairs'):.0f}) "
            f"| {m('predicted_positive_rate_start'):.2f} → {m('predicted_positive_rate_end'):.2f} "
            f"| {m('mean_p_correct_rows_start'):.2f} → {m('mean_p_correct_rows_end'):.2f} "
            f"| {m('mean_p_wrong_rows_start'):.2f} → {m('mean_p_wrong_rows_end'):.2f} |"
        )
    lines += ["", "Means over the runs replayed; RM updates: reward calls with at least one valid pair (of the calls)."]
    fid = {run: r["fidelity"] for run, r in arms.get("all", {}).items() if "fidelity" in r}
    if fid:
        lines += ["", "Fidelity of the `all` arm to the runs' own logs:", ""]
        for run, f in fid.items():
            lines.append(
                f"- {run}: RM scores before the first update within {f['score_gap_first_call']:.1e} of the run's "
                f"(mean over {f['calls']} calls {f['score_gap_mean']:.1e}); the run's valid pairs per kind in "
                f"{f['calls_with_the_runs_pairs']} of {f['calls']} calls"
            )
    if "predictions" in summary:
        said = {True: "holds", False: "does not hold", None: "undecided (the replay does not reproduce the drop)"}
        lines += ["", "Pre-registered predictions (PREREGISTRATION.md):", ""]
        lines += [f"- {k}: {said[ok]}" for k, ok in summary["predictions"].items()]
    atomic_write_json(out / "summary.json", summary)
    atomic_write_text(out / "table.md", "\n".join(lines) + "\n")
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--runs", nargs="+", default=list(RUNS_REPLAYED))
    ap.add_argument("--arms", nargs="+", default=list(ARMS))
    ap.add_argument("--calls", type=int, default=CALLS, help="reward calls to replay (25: the run's steps 1-97)")
    ap.add_argument("--eval-every", type=int, default=5, help="evaluate the RM every N reward calls (and at the last)")
    ap.add_argument(
        "--rm",
        default="runs/verifyrm-weak",
        help="the RM the runs started from (sha256, or equal within rounding: same_rm)",
    )
    ap.add_argument("--out", type=Path, default=OUT, help="where the arms' logs and the report go")
    ap.add_argument("--report-only", action="store_true", help="no replay: table.md and summary.json from the logs")
    args = ap.parse_args()
    if args.report_only:
        report(args.out)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    for run in args.runs:
        for arm in args.arms:
            out = arm_file(args.out, run, arm)
            if out.is_file():
                done = [json.loads(x) for x in out.read_text().splitlines()][-1]["call"]
                if done != args.calls:
                    raise SystemExit(f"{out} replayed {done} calls, not {args.calls}: remove it to replay again")
                continue
            # the starting RM's evaluation, from an arm of this run already replayed (the same RM: checked in replay)
            first = sorted(args.out.glob(f"{run}.*.jsonl"))
            start = json.loads(first[0].read_text().splitlines()[0])["rm"] if first else None
            log = replay(RUNS / run, arm, args.rm, args.calls, args.eval_every, start)
            atomic_write_text(out, "".join(json.dumps(x) + "\n" for x in log))
            report(args.out)


if __name__ == "__main__":
    main()

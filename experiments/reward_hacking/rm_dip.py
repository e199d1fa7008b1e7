"""Which pairs made `cooper_new`'s co-optimized RM worse at verifying at step 100 (issue 67 §5; issue 15's runs)?

The RM's accuracy on the fixed labelled set fell from 83.8 % to ~54 % at step 100 in cooper_new and came back by
step 200. This script answers, from the committed logs only (no model is loaded):
  1. per run and evaluation, the RM's metrics on the labelled set and the confusion counts behind them (which side
     of the labelled set moved: wrong rows accepted or correct rows rejected; AUROC: a ranking failure or only a
     threshold shift). Per-row scores are not logged, so which rows flipped cannot be told (see NOT LOGGED).
  2. per run and window of reward calls, the RM's training pairs as logged (valid pairs per kind of negative, loss,
     prompts with a positive), and the RM's scores of the policy's rollouts before each update (rollouts.jsonl.gz:
     how the RM's state moved between evaluations, at every reward call).
  3. beside it, the pre-registered replay's result (rm_replay.py: the RM side rerun with one kind of negative at a
     time), read from its arm logs results/rm_replay/*.jsonl, and whether its `all` arm ends where the run's own
     step-100 evaluation did.
NOT LOGGED (what a rerun or replay would have to write to name rows and pairs): the RM's score of each labelled row
at each evaluation; per RM update, each pair's kind, negative text, scores before the update and loss (the runs log
only per-kind counts of valid pairs and the mean loss of the call).
usage: python experiments/reward_hacking/rm_dip.py     writes results/rm_dip.json and prints a summary
"""

import gzip
import json
import re
from pathlib import Path

from cooper_rl.rm.evaluate import binary_metrics

HERE = Path(__file__).resolve().parent
RUNS = HERE / "results" / "runs"
ROOT = HERE.parent.parent
CONDITIONS = ("cooper_new", "cooper", "cooper_ref", "cooper_ref_bin")  # cooper_new and its Cooper contrasts
KINDS = ("corrupt", "mined", "truncate", "masterkey")
ANSWERLESS = ("truncate", "masterkey")  # negatives with no final answer at all
BLOCK = 20  # steps per block of reward calls: 5 calls (one every 4 optimizer steps), as rm_replay's eval_every=5
BOXED = re.compile(r"\\boxed\{\s*[^{}\s]")  # a non-empty \boxed{...}: "has a final answer" (approximate extractor)


def jsonl(path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(x) for x in f if x.strip()]


def auroc(pos, neg):
    """P(score of a rule-right rollout > score of a rule-wrong one), ties half (Mann-Whitney; cooper's
    binary_metrics); None without both."""
    if not pos or not neg:
        return None
    return binary_metrics([1] * len(pos) + [0] * len(neg), list(pos) + list(neg))["auroc"]


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def rm_evals(run, n_pos, n, wrong_by_source):
    """The RM's labelled-set metrics at every evaluation, with confusion counts recovered from recall and the
    predicted-positive rate (both exact ratios over the 600 rows), and per source of wrong rows the fewest of its
    rows that must have been accepted (the accepted wrong rows the other sources cannot hold)."""
    out = {}
    for e in jsonl(run / "evals.jsonl"):
        m = e.get("rm")
        if not m:
            continue
        tp = round(m["recall"] * n_pos)
        fp = round(m["predicted_positive_rate"] * n) - tp
        out[e["step"]] = {
            k: m[k] for k in ("accuracy", "predicted_positive_rate", "recall", "precision", "auroc", "ece")
        }
        out[e["step"]] |= {"correct_rows_accepted": tp, "correct_rows_rejected": n_pos - tp,
                           "wrong_rows_accepted": fp, "wrong_rows_rejected": n - n_pos - fp,
                           "wrong_rows_accepted_at_least": {k: max(0, fp - (n - n_pos - c))
                                                            for k, c in wrong_by_source.items()}}  # fmt: skip
    return out


def windows(run, width):
    """Per window of `width` steps (1-width, width+1-2*width, ...): the RM's logged pairs (metrics.jsonl) and its
    scores of the policy's rollouts before that call's update (rollouts.jsonl.gz)."""
    met = {m["step"]: m for m in jsonl(run / "metrics.jsonl")}
    rolls = {}
    for r in jsonl(run / "rollouts.jsonl.gz"):
        rolls.setdefault(r["step"], []).append(r)
    out = {}
    for w0 in range(0, max(met), width):
        steps = [s for s in sorted(met) if w0 < s <= w0 + width]
        ms = [met[s] for s in steps]
        rs = [r for s in steps for r in rolls.get(s, [])]
        score = lambda r: r.get("rm_score", r["reward"])  # noqa: E731  (the *_bin runs' reward is the 0/1 of it)
        right = [score(r) for r in rs if r["verdict"]]
        wrong = [score(r) for r in rs if not r["verdict"]]
        wrong_ans = [score(r) for r in rs if not r["verdict"] and BOXED.search(r["completion"])]
        wrong_none = [score(r) for r in rs if not r["verdict"] and not BOXED.search(r["completion"])]
        pairs = {k: sum(m.get(f"rm/valid/{k}", 0) for m in ms) for k in KINDS}
        n_valid = sum(m.get("rm/n_valid", 0) for m in ms)
        if not any(pairs.values()):  # a one-kind run (cooper: corrupt) logs no per-kind counts
            pairs["corrupt"] = n_valid
        out[f"{w0 + 1}-{w0 + width}"] = {
            "calls": len(ms),
            "calls_with_pairs": sum(m.get("rm/n_valid", 0) > 0 for m in ms),
            "valid_pairs": n_valid,
            "pairs_per_kind": pairs,
            "answerless_share": sum(pairs[k] for k in ANSWERLESS) / n_valid if n_valid else None,
            "reference_positives": sum(m.get("rm/reference_positives", 0) for m in ms),
            "rm_loss": mean([m.get("rm/rm_loss") for m in ms]),  # mean over calls that updated
            "prompts_with_rollout_positive": mean([m.get("rm/positive_rate") for m in ms]),
            "rule_accuracy": mean([m["rule_accuracy"] for m in ms]),
            "rm_fooled_rate": mean([m.get("rm_fooled_rate") for m in ms]),
            "rollouts_right": len(right),
            "rollouts_wrong": len(wrong),
            "score_right": mean(right),
            "score_wrong": mean(wrong),
            "auroc_right_vs_wrong": auroc(right, wrong),
            "wrong_with_answer": len(wrong_ans),
            "score_wrong_with_answer": mean(wrong_ans),
            "accepted_wrong_with_answer": mean([s >= 0.5 for s in wrong_ans]),
            "score_wrong_without_answer": mean(wrong_none),
        }
    return out


def main():
    rows = jsonl(ROOT / "experiments/verifyrm/v3/heldout.jsonl")  # rl_config.json's rm_eval_data (checked below)
    n, n_pos = len(rows), sum(int(r["label"]) for r in rows)
    sources = {}  # which rows: label, kind and source, and how many carry a \boxed answer (the policy's format)
    for r in rows:
        x = sources.setdefault(f"label {r['label']}: {r['answer_type']} from {r['source'].split('/')[-1]}", [0, 0])
        x[0], x[1] = x[0] + 1, x[1] + bool(BOXED.search(r["completion"]))
    sources = {k: {"rows": a, "boxed": b} for k, (a, b) in sources.items()}
    wrong_by_source = {k: v["rows"] for k, v in sources.items() if k.startswith("label 0")}
    res = {"labelled_set": {"path": "experiments/verifyrm/v3/heldout.jsonl", "n": n, "correct": n_pos,
                            "composition": sources}, "runs": {}, "means": {}}  # fmt: skip
    for cond in CONDITIONS:
        for run in sorted(RUNS.glob(f"{cond}-s*")):
            cfg = json.loads((run / "rl_config.json").read_text())
            assert cfg["rm_eval_data"] == res["labelled_set"]["path"], run
            res["runs"][run.name] = {
                "negatives": cfg["negatives"], "pairs_per_prompt": cfg["pairs_per_prompt"],
                "reference_positives": cfg.get("reference_positives", False), "rm_sha256": cfg["rm_sha256"][:8],
                "rm_evals": rm_evals(run, n_pos, n, wrong_by_source),
                "windows_100": windows(run, 100), "blocks_20": windows(run, BLOCK),
            }  # fmt: skip
        # means over the seeds of a condition (each seed evaluated at that step)
        runs = [v for k, v in res["runs"].items() if k.rsplit("-s", 1)[0] == cond]
        steps = sorted({s for v in runs for s in v["rm_evals"]})
        res["means"][cond] = {
            s: {k: mean([v["rm_evals"][s][k] for v in runs if s in v["rm_evals"]])
                for k in ("accuracy", "auroc", "predicted_positive_rate", "wrong_rows_accepted", "correct_rows_rejected")}
            for s in steps
        }  # fmt: skip
    # the intervention (rm_replay.py: the run's RM side replayed with only some kinds of negative), where it has been
    # run: per arm and run, the RM on the labelled set every 5 calls (its mean P(correct) on the correct and on the
    # wrong rows: the score-level view the runs' own evaluations do not log) and its loss at every call
    res["replay"] = {}
    for f in sorted((HERE / "results/rm_replay").glob("*.jsonl")):
        log = jsonl(f)
        arm, run = log[0]["arm"], f.name.split(".")[0]
        keys = ("accuracy", "auroc", "predicted_positive_rate", "mean_p_correct_rows", "mean_p_wrong_rows")
        res["replay"].setdefault(arm, {})[run] = {
            "evals": {x["call"]: {k: x["rm"][k] for k in keys} for x in log if x["kind"] == "eval"},
            "rm_loss": [x["rm_loss"] for x in log if x["kind"] == "call"],
            "pairs": sum(x["n_valid"] for x in log if x["kind"] == "call"),
        }
    # does the replay's `all` arm (calls 1-25) end where the run's own step-100 evaluation did?
    res["replay_all_vs_run_step100"] = {
        run: {k: (x["evals"][25][k], res["runs"][run]["rm_evals"][100][k]) for k in ("accuracy", "auroc")}
        for run, x in res["replay"].get("all", {}).items() if 25 in x["evals"]
    }  # fmt: skip
    (HERE / "results/rm_dip.json").write_text(json.dumps(res, indent=1) + "\n")

    # the summary printed: every number is in rm_dip.json
    f = lambda x, d=1, s=100: "-" if x is None else f"{s * x:.{d}f}"  # noqa: E731
    print("RM on the labelled set per run: accuracy % / AUROC / wrong rows accepted (of", n - n_pos,
          ") / correct rows rejected (of", n_pos, ")")  # fmt: skip
    for name, v in res["runs"].items():
        print(f"  {name:18s}", "  ".join(f"{s}: {f(e['accuracy'])}/{f(e['auroc'], 3, 1)}/{e['wrong_rows_accepted']}"
                                        f"/{e['correct_rows_rejected']}" for s, e in v["rm_evals"].items()))  # fmt: skip
    for cond, m in res["means"].items():
        print(f"  mean {cond:13s}", "  ".join(f"{s}: {f(e['accuracy'])}/{f(e['auroc'], 3, 1)}" for s, e in m.items()))
    print("Pairs per 100-step window: valid pairs (corrupt/mined/truncate/masterkey, answerless share %), loss,"
          " rollout AUROC right-vs-wrong, mean score right/wrong, fooled %")  # fmt: skip
    for name, v in res["runs"].items():
        for w, x in list(v["windows_100"].items())[:2]:
            p = x["pairs_per_kind"]
            print(f"  {name:18s} {w:8s} {x['valid_pairs']:4d} ({p['corrupt']}/{p['mined']}/{p['truncate']}/"
                  f"{p['masterkey']}, {f(x['answerless_share'], 0)}) loss {f(x['rm_loss'], 3, 1)}"
                  f" auroc {f(x['auroc_right_vs_wrong'], 2, 1)} score {f(x['score_right'], 2, 1)}/"
                  f"{f(x['score_wrong'], 2, 1)} fooled {f(x['rm_fooled_rate'], 0)}")  # fmt: skip
    print(
        "Replay (rm_replay.py), per arm and run: labelled-set accuracy % / AUROC / mean P(correct) on correct vs"
        " wrong rows, at calls 0 -> 15 -> 25"
    )
    print("  replay `all` at call 25 vs the run at step 100 (accuracy, AUROC):", res["replay_all_vs_run_step100"])
    for arm, runs in res["replay"].items():
        for run, x in runs.items():
            e = x["evals"]
            print(
                f"  {arm:24s} {run}: "
                + " -> ".join(
                    f"{f(e[c]['accuracy'])}/{f(e[c]['auroc'], 2, 1)}/{f(e[c]['mean_p_correct_rows'], 2, 1)} vs "
                    f"{f(e[c]['mean_p_wrong_rows'], 2, 1)}"
                    for c in (0, 15, 25)
                    if c in e
                )
            )


if __name__ == "__main__":
    main()

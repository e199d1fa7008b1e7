"""What a run's logs say, read one way by the report, the comparison and the decisions (issue 67; light to import:
no torch): each evaluation's per-problem scores, the rollouts of each reward call, the pairs a Cooper RM trained on,
the monitor's flags against the pre-registered collapse; and the number formats of the tables."""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from cooper_rl.io import read_jsonl  # noqa: E402
from stats import eval_scores  # noqa: E402

sys.path.insert(0, str(HERE))
from rundirs import collapse, heldout_means  # noqa: E402

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


def answer_kind(completion: str) -> str:
    """ "an answer" where the strict rule reads a final answer in `completion`, else "no answer"."""
    from cooper_rl.verify import extract_answer

    return "an answer" if extract_answer(completion, "strict") is not None else "no answer"


def rounded(x, digits: int = 3):
    """x with every float rounded (a decision's JSON, readable in the table)."""
    if isinstance(x, float):
        return round(x, digits)
    if isinstance(x, dict):
        return {k: rounded(v, digits) for k, v in x.items()}
    if isinstance(x, list):
        return [rounded(v, digits) for v in x]
    return x


def fmt(x, form="{:.1f}") -> str:
    """A number for the table, '-' for None."""
    return "-" if x is None else form.format(x)

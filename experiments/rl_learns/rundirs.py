"""The runs' directories (runs/rl_learns/ and results/runs/): their names, seeds and when a run is finished; shared by
run.py (the driver) and report.py, and light to import (no torch, no transformers)."""

from __future__ import annotations

import json
from pathlib import Path

from cooper_rl.io import read_jsonl

SEEDS = (0, 1, 2)  # every condition of the comparison (issue 67 §5: >= 3 seeds)
HEADLINE_SEEDS = (0, 1, 2, 3, 4)  # issue 106 §3: the headline's conditions at 5 seeds (the decisions stay on SEEDS)
COLLAPSE = 5.0  # points of held-out accuracy below step 0 (predictions.md §4, issue 67 §6)


def run_name(name: str, seed: int) -> str:
    """A run's directory name: NAME-sSEED."""
    return f"{name}-s{seed}"


def name_seed(run: str) -> tuple[str, int]:
    """(NAME, SEED) of a run's directory name NAME-sSEED (run_name's inverse)."""
    name, _, seed = run.rpartition("-s")
    if not name or not seed.isdigit():
        raise ValueError(f"a run's directory is NAME-sSEED, not {run!r}")
    return name, int(seed)


def finished_run(d: Path, max_steps: int | None = None) -> bool:
    """Whether the run in `d` reached max_steps (default: its rl_config.json's): its summary says so, or it has an
    evaluation at max_steps (a run stopped after its last evaluation, before it wrote the summary, trained and was
    evaluated in full)."""
    if max_steps is None:
        max_steps = json.loads((d / "rl_config.json").read_text())["max_steps"]
    summary = d / "rl_summary.json"
    if summary.is_file() and json.loads(summary.read_text())["global_step"] >= max_steps:
        return True
    return any(e["step"] >= max_steps for e in read_jsonl(d / "evals.jsonl", missing_ok=True))


def heldout_means(evals: list[dict]) -> dict[int, float]:
    """{step: held-out accuracy, mean over the evaluation sets, % (strict avg@k)} of a run's evaluation records; a
    step evaluated twice keeps its last."""
    return {e["step"]: 100 * sum(m["avg@k_strict"] for m in e["policy"].values()) / len(e["policy"]) for e in evals}


def collapse(mean: dict[int, float]) -> dict:
    """The pre-registered collapse (predictions.md §4) of held-out means by step: {collapsed: the last evaluation after
    step 0 is >= COLLAPSE points below step 0, first_bad_eval: the first evaluation that far below (None if none)}."""
    start, steps = mean.get(0), sorted(s for s in mean if s > 0)
    bad = [s for s in steps if start is not None and mean[s] <= start - COLLAPSE]
    return {
        "collapsed": bool(steps and start is not None and mean[steps[-1]] <= start - COLLAPSE),
        "first_bad_eval": bad[0] if bad else None,
    }

"""Statistics shared by the experiment reports: per-problem evaluation scores, and means with 95 % intervals that
count both the run-to-run spread (over seeds) and the sampling of the evaluation problems.

A held-out evaluation of a run (cooper rl's EvalCallback) samples k completions per problem; a problem's score is
the share of them the strict rule accepts. For a quantity measured per seed (an accuracy, or a gain between two
evaluations of one run, paired by problem), the 95 % interval of its mean over n seeds has the half-width

    sqrt( (t_{0.975, n-1} * sd_seeds / sqrt(n))^2 + (1.96 * se_problems)^2 )

with se_problems the bootstrap standard error, over problems, of the seed-averaged per-problem value (the same
problem draw for every seed). One seed: the problem term alone.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
from scipy import stats


def problem_scores(samples: Path) -> dict[str, dict[str, float]]:
    """{dataset: {problem id: share of its samples the strict rule accepts}} of one evaluation's samples file
    (samples.jsonl or its gzipped copy)."""
    opener = gzip.open if samples.suffix == ".gz" else open
    hits: dict[str, dict[str, list[bool]]] = {}
    with opener(samples, "rt") as f:
        for line in f:
            r = json.loads(line)
            hits.setdefault(r["dataset"], {}).setdefault(r["id"], []).append(bool(r["correct"]))
    return {ds: {i: float(np.mean(v)) for i, v in ps.items()} for ds, ps in hits.items()}


def eval_scores(run_dir: Path, step: int) -> dict[str, dict[str, float]] | None:
    """problem_scores of a run's evaluation at `step` (committed gzipped samples or the run dir's own), or None."""
    for name in ("samples.jsonl.gz", "samples.jsonl"):
        f = run_dir / "eval" / f"step-{step}" / name
        if f.is_file():
            return problem_scores(f)
    return None


def bootstrap_se(per_seed: list[dict[str, float]], draws: int = 2000, seed: int = 0) -> float | None:
    """Bootstrap standard error, over problems, of the mean over problems of the seed-averaged value (per_seed: one
    {problem id: value} per seed; the problems all seeds have are resampled)."""
    ids = sorted(set.intersection(*(set(p) for p in per_seed))) if per_seed else []
    if not ids:
        return None
    x = np.array([[p[i] for i in ids] for p in per_seed]).mean(axis=0)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(draws, len(x)))].mean(axis=1)
    return float(means.std(ddof=1))


def ci95(by_seed: list[float], per_seed_problems: list[dict[str, float]] | None = None) -> tuple[float, float] | None:
    """(low, high) 95 % interval of the mean of by_seed (module docstring); None with one seed and no problems."""
    n = len(by_seed)
    if n == 0:
        return None
    m = float(np.mean(by_seed))
    seed_term = stats.t.ppf(0.975, n - 1) * np.std(by_seed, ddof=1) / np.sqrt(n) if n > 1 else 0.0
    se = bootstrap_se(per_seed_problems) if per_seed_problems else None
    if n == 1 and se is None:
        return None
    half = float(np.hypot(seed_term, 1.96 * (se or 0.0)))
    return m - half, m + half


def slope_per_1000(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ys against xs, times 1,000 (e.g. training accuracy per 1,000 rollouts)."""
    if len(xs) < 2 or len(set(xs)) < 2:
        return None
    return float(stats.linregress(xs, ys).slope * 1000)

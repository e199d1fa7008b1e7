"""Reporting code shared by the experiments' reports: run logs, per-problem evaluation scores, means with 95 %
intervals that count both the run-to-run spread (over seeds) and the sampling of the evaluation problems, slopes,
and markdown table cells.

A held-out evaluation of a run (cooper rl's EvalCallback) samples k completions per problem; a problem's score is
the share of them the strict rule accepts. For a quantity measured per seed (an accuracy, or a difference between
two evaluations or two conditions, paired by problem), the 95 % interval of its mean over n seeds has the half-width

    sqrt( (t_{0.975, n-1} * sd_seeds / sqrt(n))^2 + (1.96 * se_problems)^2 )

with se_problems the bootstrap standard error, over problems, of the seed-averaged per-problem value (the same
problem draw for every seed; over several evaluation sets, each set resampled on its own and the sets' means
averaged, as the reported accuracy is). One seed: the problem term alone; no per-problem values: the seed term
alone. Somewhat conservative: the seeds' spread already holds part of the sampling noise the problem term counts.
"""

from __future__ import annotations

import gzip
import json
import statistics
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from scipy import stats

from cooper_rl.io import read_jsonl

Scores = dict  # {problem id: value} (one evaluation set) or {evaluation set: {problem id: value}}


def records(path: Path) -> list[dict]:
    """The records of a .jsonl file, or of its .jsonl.gz beside it (as committed run logs keep them); [] when neither
    is there (cooper_rl.io.read_jsonl: a last line cut by a kill is skipped, any other bad line names file and row)."""
    return read_jsonl(path, missing_ok=True) or read_jsonl(Path(f"{path}.gz"), missing_ok=True)


def mean(xs: Iterable[float | None]) -> float | None:
    """The mean of the values that are not None; None when there are none."""
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def scores_of(rows: Iterable[dict]) -> dict[str, dict[str, float]]:
    """{dataset: {problem id: share of its samples the strict rule accepts}} of evaluation samples (rows with
    dataset, id, correct)."""
    hits: dict[str, dict[str, list[bool]]] = {}
    for r in rows:
        hits.setdefault(r["dataset"], {}).setdefault(r["id"], []).append(bool(r["correct"]))
    return {ds: {i: sum(v) / len(v) for i, v in ps.items()} for ds, ps in hits.items()}


def problem_scores(samples: Path) -> dict[str, dict[str, float]]:
    """scores_of one evaluation's samples file (samples.jsonl or its gzipped copy)."""
    opener = gzip.open if samples.suffix == ".gz" else open
    with opener(samples, "rt") as f:
        return scores_of(json.loads(line) for line in f)


def eval_scores(run_dir: Path, step: int) -> dict[str, dict[str, float]] | None:
    """problem_scores of a run's evaluation at `step` (committed gzipped samples or the run dir's own), or None."""
    for name in ("samples.jsonl.gz", "samples.jsonl"):
        f = run_dir / "eval" / f"step-{step}" / name
        if f.is_file():
            return problem_scores(f)
    return None


def difference(a: dict, b: dict) -> dict:
    """Per-problem scores a - b ({dataset: {id: score}}) on the datasets and problems both have."""
    return {ds: {i: a[ds][i] - b[ds][i] for i in a[ds] if i in b[ds]} for ds in a if ds in b}


def _order(x) -> tuple:
    """A sort key for ids of one or mixed types (ints in numeric order, strings in text order)."""
    return type(x).__name__, x


def _by_set(p: Scores) -> dict:
    """Scores as {evaluation set: {problem id: value}} (a flat {id: value} is one set)."""
    return p if p and all(isinstance(v, dict) for v in p.values()) else {"": p}


def bootstrap_se(per_seed: list[Scores], draws: int = 2000, seed: int = 0) -> float | None:
    """Bootstrap standard error, over problems, of the seed-averaged value's mean over problems (per_seed: one
    {problem id: value} per seed, or one {evaluation set: {problem id: value}}: then the mean over the sets of each
    set's mean, each set resampled on its own). The problems every seed has are resampled, the same draw for all
    seeds; None if there are none."""
    if not per_seed:
        return None
    nested = [_by_set(p) for p in per_seed]
    sets = sorted(set.intersection(*(set(p) for p in nested)), key=_order)
    values = []  # per set: the seed-averaged value of each problem every seed has
    for ds in sets:
        ids = sorted(set.intersection(*(set(p[ds]) for p in nested)), key=_order)
        if ids:
            values.append(np.array([[p[ds][i] for i in ids] for p in nested]).mean(axis=0))
    if not values:
        return None
    rng = np.random.default_rng(seed)
    means = sum(x[rng.integers(0, len(x), size=(draws, len(x)))].mean(axis=1) for x in values) / len(values)
    return float(means.std(ddof=1))


def ci95(
    by_seed: list[float],
    per_seed_problems: list[Scores] | None = None,
    bounds: tuple[float, float] | None = None,
) -> tuple[float, float] | None:
    """(low, high) 95 % interval of the mean of by_seed (module docstring), clipped to bounds if given (an accuracy:
    (0, 1); a difference of two: (-1, 1)); None with no seed, or one seed and no per-problem values."""
    n = len(by_seed)
    if n == 0:
        return None
    m = float(np.mean(by_seed))
    seed_term = stats.t.ppf(0.975, n - 1) * np.std(by_seed, ddof=1) / np.sqrt(n) if n > 1 else 0.0
    se = bootstrap_se(per_seed_problems) if per_seed_problems else None
    if n == 1 and se is None:
        return None
    half = float(np.hypot(seed_term, 1.96 * (se or 0.0)))
    lo, hi = m - half, m + half
    return (max(bounds[0], lo), min(bounds[1], hi)) if bounds else (lo, hi)


def slope_per_1000(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ys against xs, times 1,000 (e.g. training accuracy per 1,000 rollouts)."""
    if len(xs) < 2 or len(set(xs)) < 2:
        return None
    return float(stats.linregress(xs, ys).slope * 1000)


def pct(x: float | None, digits: int = 1) -> str:
    """A fraction as a percentage ('0.1234' -> '12.3'), '-' when missing."""
    return "-" if x is None else f"{100 * x:.{digits}f}"


def mean_sd(values: Iterable[float | None]) -> dict | None:
    """{mean, sd, n, values} of the values that are not None (sd 0 for one value); None when there are none."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": statistics.mean(values), "sd": sd, "n": len(values), "values": values}


def num_sd(d: dict | None, digits: int = 1, scale: float = 1.0) -> str:
    """A mean_sd (times scale) as 'mean ± sd' with `digits` decimals (the mean alone for one value), '-' when
    missing."""
    if d is None:
        return "-"
    return f"{scale * d['mean']:.{digits}f}" + (f" ± {scale * d['sd']:.{digits}f}" if d["n"] > 1 else "")


def pct_sd(d: dict | None) -> str:
    """A mean_sd as 'mean ± sd' in percent (the mean alone for one value), '-' when missing."""
    return num_sd(d, 1, 100)


def num(x: float | None, digits: int = 0) -> str:
    """A number with `digits` decimals, '-' when missing."""
    return "-" if x is None else f"{x:.{digits}f}"


def md_table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    """A markdown table's lines: the header, its rule, a line per row of cells."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]


def train_seconds(t: dict) -> float | None:
    """A training record's (train_metrics.json, rl_summary.json, sft_summary.json) time to train over all its
    processes (None: resumed from a checkpoint written before the total was recorded)."""
    if "train_seconds_total" in t:
        return t["train_seconds_total"]
    return None if t.get("resumed_from") else t["train_seconds"]

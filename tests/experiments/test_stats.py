"""experiments/stats.py: per-problem scores, intervals over seeds and problems, slopes, table cells."""

import gzip
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "experiments"))
from stats import bootstrap_se, ci95, difference, eval_scores, md_table, pct, problem_scores, slope_per_1000  # noqa: E402


def test_problem_scores_read_plain_and_gzipped_samples(tmp_path):
    rows = [{"dataset": "a", "id": "p1", "correct": c} for c in (True, False, True, True)]
    rows += [{"dataset": "a", "id": "p2", "correct": False}]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (tmp_path / "eval" / "step-5").mkdir(parents=True)
    (tmp_path / "eval" / "step-5" / "samples.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    assert eval_scores(tmp_path, 5) == {"a": {"p1": 0.75, "p2": 0.0}}
    assert eval_scores(tmp_path, 6) is None
    (tmp_path / "s.jsonl").write_text(text)
    assert problem_scores(tmp_path / "s.jsonl") == eval_scores(tmp_path, 5)


def test_intervals_widen_with_seed_spread_and_problem_noise():
    same = {f"p{i}": 0.5 for i in range(50)}
    assert bootstrap_se([same]) == 0.0  # every problem alike: no problem term
    assert ci95([0.5], [same]) == (0.5, 0.5)
    noisy = {f"p{i}": float(i % 2) for i in range(50)}
    lo, hi = ci95([0.5], [noisy])
    assert lo < 0.5 < hi and hi - lo == pytest.approx(2 * 1.96 * 0.5 / 50**0.5, rel=0.15)  # ~ the binomial SE
    lo3, hi3 = ci95([0.4, 0.5, 0.6])  # seeds only: t(2) = 4.30
    assert (hi3 - lo3) / 2 == pytest.approx(4.303 * 0.1 / 3**0.5, rel=1e-3)
    assert ci95([0.5]) is None and ci95([]) is None


def test_slope_per_1000():
    assert slope_per_1000([100, 200, 300], [10, 12, 14]) == pytest.approx(20.0)
    assert slope_per_1000([100], [10]) is None


def test_several_evaluation_sets_are_resampled_each_on_its_own_and_intervals_can_be_clipped():
    noisy = {f"p{i}": float(i % 2) for i in range(50)}
    flat = bootstrap_se([noisy])
    # two sets: the mean of the two sets' means, each set resampled on its own (half the variance of one set)
    two = bootstrap_se([{"a": noisy, "b": {f"q{i}": float(i % 2) for i in range(50)}}])
    assert two == pytest.approx(flat / 2**0.5, rel=0.15)
    # a set of one problem adds no noise, but halves the weight of the other
    assert bootstrap_se([{"a": noisy, "b": {"x": 0.3}}]) == pytest.approx(flat / 2, rel=0.15)
    # per seed, the problems every seed has: a second seed's problems outside the first's are left out
    assert bootstrap_se([{"a": noisy}, {"a": noisy | {"extra": 1.0}}]) == pytest.approx(flat)
    assert bootstrap_se([{"a": {}}]) is None
    a, b = {"s": {"p": 0.5, "q": 0.25}}, {"s": {"p": 0.25, "r": 1.0}, "t": {"p": 1.0}}
    assert difference(a, b) == {"s": {"p": 0.25}}
    lo, hi = ci95([0.01, 0.02, 0.0], bounds=(0.0, 1.0))
    assert lo == 0.0 and 0.02 < hi < 1.0  # an accuracy's interval stops at 0
    assert ci95([0.01, 0.02, 0.0])[0] < 0  # unclipped (a difference in points, as rl_learns reports)


def test_table_cells():
    assert pct(0.1234) == "12.3" and pct(None) == "-" and pct(0.5, 0) == "50"
    assert md_table(["a", "b"], [["1", "2"]]) == ["| a | b |", "|---|---|", "| 1 | 2 |"]

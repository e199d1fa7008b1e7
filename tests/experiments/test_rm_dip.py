"""rm_dip.py: its AUROC is the pairwise probability (ties half), and the confusion counts it recovers from the logged
ratios add up to the logged accuracy on every committed evaluation."""

import itertools
import random

from tests.experiments import HACKING, load_script

dip = load_script("rm_dip")


def test_auroc_is_the_pairwise_probability_with_ties_half():
    rng = random.Random(0)
    pos = [rng.choice([0.1, 0.5, 0.5, 0.9, 0.3]) for _ in range(17)]
    neg = [rng.choice([0.1, 0.5, 0.2, 0.9]) for _ in range(11)]
    brute = sum((p > n) + 0.5 * (p == n) for p, n in itertools.product(pos, neg)) / (len(pos) * len(neg))
    assert abs(dip.auroc(pos, neg) - brute) < 1e-12
    assert dip.auroc([1.0, 2.0], [0.0]) == 1.0 and dip.auroc([0.0], [1.0, 2.0]) == 0.0
    assert dip.auroc([], [1.0]) is None


def test_recovered_counts_match_the_logged_accuracy():
    rows = dip.jsonl(HACKING.parent / "verifyrm/v3/heldout.jsonl")
    n, n_pos = len(rows), sum(int(r["label"]) for r in rows)
    checked = 0
    for run in sorted((HACKING / "results/runs").glob("cooper*-s*")):
        for step, e in dip.rm_evals(run, n_pos, n, {"all wrong rows": n - n_pos}).items():
            assert e["correct_rows_accepted"] + e["correct_rows_rejected"] == n_pos
            assert min(e["wrong_rows_accepted"], e["wrong_rows_rejected"], e["correct_rows_accepted"]) >= 0
            right = e["correct_rows_accepted"] + e["wrong_rows_rejected"]
            assert abs(right / n - e["accuracy"]) < 1e-9, (run.name, step)
            checked += 1
    assert checked >= 20  # every committed Cooper run's evaluations (10 runs, several evaluations each)

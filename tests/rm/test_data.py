import random

from cooper_rl import verify
from cooper_rl.rm.data import verification_rows


def test_verification_rows_separate_only_by_answer():
    from cooper_rl.tasks import generate_problems

    rng = random.Random(0)
    n_pos = n_neg = 0
    for p in generate_problems(60, seed=3):
        rows = verification_rows(p.question, p.answer, p.solution, rng, wrong_reference_rate=1.0)
        pos, *negs = rows
        assert verify.verify(pos["completion"], pos["reference"], "lenient") and pos["reference"] == p.answer
        for n in negs:  # same style as the positive, and wrong against its reference
            assert n["source"].split(":")[1] == pos["source"].split(":")[1]
            assert not verify.verify(n["completion"], n["reference"], "lenient")
        n_pos, n_neg = n_pos + 1, n_neg + len(negs)
    assert n_pos == 60 and n_neg >= 100

import json
import random
from pathlib import Path

import pytest

from cooper_rl import verify
from cooper_rl.cooper.negatives import corrupt_solution, wrong_values

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def test_wrong_values_never_equal_reference():
    for ref in ["0", "1", "18", "-4", "2.5", "1000"]:
        vals = wrong_values(ref, random.Random(0))
        assert vals and all(not verify.answers_match(v, ref) for v in vals)


def test_corruption_is_consistent_and_wrong():
    sol = "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 eggs.\nShe makes 9 * 2 = $<<9*2=18>>18 a day.\n#### 18"
    neg = corrupt_solution(sol, "18", random.Random(1))
    assert neg is not None and not verify.verify(neg, "18", "lenient")
    wrong = verify.extract_answer(neg, "strict")
    assert f"<<9*2={wrong}>>{wrong}" in neg  # the intermediate result changed with the final answer
    assert neg.split("\n")[0] == sol.split("\n")[0]  # earlier steps untouched
    assert abs(len(neg) - len(sol)) <= 6


def test_boxed_and_non_numeric():
    neg = corrupt_solution("So 3 + 4 = 7. The answer is \\boxed{7}.", "7")
    assert neg is not None and verify.extract_answer(neg) != "7" and not verify.verify(neg, "7")
    assert corrupt_solution("The answer is \\boxed{x^2}.", "x^2") is None
    assert corrupt_solution("no answer here", "3") is None


def test_on_real_solutions_judged_against_reference():
    path = SHARED / "svamp" / "train.jsonl"
    if not path.is_file():
        pytest.skip("shared data not available")
    rows = [json.loads(line) for line in path.open()][:30]
    made = 0
    for i, r in enumerate(rows):
        ref = r["answer"].split("####")[-1].strip()
        for cot in r["cots"][:3]:
            neg = corrupt_solution(cot, ref, random.Random(i))
            if neg is not None:
                made += 1
                assert not verify.verify(neg, ref, "lenient") and not verify.verify(neg, ref, "strict")
    assert made >= 0.9 * sum(min(3, len(r["cots"])) for r in rows)


@pytest.mark.parametrize(
    "solution,ref,expect",
    [
        ("Total: \\boxed{\\$7}", "7", "\\$"),
        ("\\boxed{7 \\text{ apples}}", "7", "apples"),
        ("He paid 1,000+234=1,234.\n\\boxed{1,234}", "1234", ","),
        ("The answer is \\boxed{7 apples}.", "7", "apples"),
    ],
)
def test_corrupts_numbers_with_units_currency_and_separators(solution, ref, expect):
    neg = corrupt_solution(solution, ref, random.Random(0))
    assert neg is not None and expect in neg and not verify.verify(neg, ref, "lenient")
    assert corrupt_solution("\\boxed{3/4}", "3/4") is None and corrupt_solution("\\boxed{x^2+1}", "x^2+1") is None

"""The negative kinds beyond the paper (mined, truncate, masterkey, prefix, echo) and their mix: what each makes, and the
property every kind keeps -- no negative is ever rule-correct (strict or lenient) against the reference."""

import random

import pytest

from cooper_rl import verify
from cooper_rl.cooper.negatives import (
    MASTER_KEYS,
    MasterKeyNegatives,
    MinedNegatives,
    NegativeMix,
    TruncateNegatives,
    confidently_wrong,
    echo_values,
    make_negative_generator,
    prefix_values,
    truncate_solution,
)
from cooper_rl.cooper.step import cooper_step, rollout_groups
from cooper_rl.formats import ANSWER_STYLES, FORMAT_VARIANTS, question_unit, restyle
from cooper_rl.tasks import generate_problems
from tiny import same, tiny_rm, weights

SOL = "Tom has 3 + 4 = <<3+4=7>>7 apples.\nHe buys 2 more: 7 + 2 = <<7+2=9>>9.\n#### 9"


def test_truncate_cuts_before_the_final_result():
    cut = truncate_solution(SOL, "9")
    assert cut == "Tom has 3 + 4 = <<3+4=7>>7 apples.\nHe buys 2 more: 7 + 2 ="  # cut where 9 is computed
    assert not verify.verify(cut, "9", "lenient") and verify.extract_answer(cut, "strict") is None
    assert truncate_solution("The answer is \\boxed{9}.", "9") is None  # nothing left before the answer
    assert truncate_solution("9", "9") is None
    # the last number left would be the reference: lenient reads it as correct, so no negative
    assert truncate_solution("So the total is 9 apples.\nThe answer is \\boxed{9}.", "9") is None


def test_masterkeys_are_never_correct():
    gen = MasterKeyNegatives(seed=0)
    negs, reasons = gen(["q"] * 20, ["7"] * 20, [SOL] * 20)
    assert set(negs) <= set(MASTER_KEYS) and len(set(negs)) > 1 and reasons == [None] * 20


def test_prefix_answers_with_a_proper_prefix_of_the_reference():
    assert prefix_values("232") == ["23", "2"] and prefix_values("-45") == ["-4"]
    assert prefix_values("7") == [] and prefix_values("2.5") == []  # nothing to cut / not a whole number
    gen = make_negative_generator("prefix")
    # the policies' exploit ("180 / 9 = 2 ... \\boxed{2}" for 20), made from a correct solution
    sol = "180 / 9 = 20 groups.\nThe answer is \\boxed{20}."
    negs, reasons = gen(["q", "q", "q"], ["20", "1235", "9"], [sol, "1,234 + 1 = 1,235.\n#### 1,235", SOL])
    assert negs[0] == "180 / 9 = 2 groups.\nThe answer is \\boxed{2}." and negs[1] == "1,234 + 1 = 123.\n#### 123"
    assert negs[2] is None and reasons == [None, None, "prefix_failed"]  # a one-digit reference has no prefix


def test_echo_answers_with_a_number_of_the_question():
    q = "Tom has 3 apples, buys 4 and then 2 more; 1,200 people watch. How many apples?"
    assert sorted(echo_values("9", random.Random(0), q)) == ["1200", "2", "3", "4"]
    assert "3" not in echo_values("3", random.Random(0), q)  # never the reference's value
    negs, reasons = make_negative_generator("echo", seed=0)([q] * 8, ["9"] * 8, [SOL] * 8)
    assert reasons == [None] * 8 and {verify.extract_answer(n, "strict") for n in negs} <= {"1200", "2", "3", "4"}
    assert len(set(negs)) > 1  # drawn at random per positive
    assert make_negative_generator("echo")(["How many?"], ["9"], [SOL]) == ([None], ["echo_failed"])


def test_mined_takes_the_rm_favourite_of_the_confidently_wrong_rollouts():
    group = [
        ("so \\boxed{7}", 0.95),  # rule-correct against the reference: never mined
        ("I think it is 8", 0.9),  # no extractable (strict) answer: may be a correct answer the rule cannot read
        ("The answer is \\boxed{8}.", 0.6),
        ("#### 12", 0.7),
        ("The answer is \\boxed{7.0}", 0.99),  # lenient-correct: not confidently wrong
    ]
    group = [(c, s, verify.verify(c, "7")) for c, s in group]  # + the strict verdict the reward computed
    gen = MinedNegatives()
    negs, reasons = gen(["q", "q", "q", "p"], ["7"] * 4, ["a", "b", "c", "d"], groups=[group, group, group, []])
    assert negs[:2] == ["#### 12", "The answer is \\boxed{8}."]  # highest RM score first, distinct per prompt
    assert negs[2] == "#### 12" and reasons[2] is None  # candidates used up: the best one is paired again
    assert negs[3] is None and reasons[3] == "no_candidate"
    with pytest.raises(ValueError, match="groups"):
        gen(["q"], ["7"], ["a"])


def test_rollout_groups_are_the_other_rollouts_of_the_same_prompt():
    qs, refs = ["q", "q", "p", "q"], ["7", "7", "7", "7"]
    comps, scores = ["a", "b", "c", "d"], [0.1, 0.2, 0.3, 0.4]
    verdicts = [True, False, True, False]
    assert rollout_groups([0, 2], qs, refs, comps, scores, verdicts) == [[("b", 0.2, False), ("d", 0.4, False)], []]


def _solutions(n=120):
    """Built-in worked solutions in every answer style and format variant, with their references."""
    out = []
    for i, p in enumerate(generate_problems(n, "train", seed=3)):
        style = (ANSWER_STYLES + FORMAT_VARIANTS)[i % (len(ANSWER_STYLES) + len(FORMAT_VARIANTS))]
        sol = restyle(p.solution, style, unit=question_unit(p.question)) or p.solution
        out.append((p.question, p.answer, sol))
    return out


def test_no_kind_ever_makes_a_rule_correct_negative():
    rows = _solutions()
    qs, refs, sols = zip(*rows)
    # each prompt's "rollouts": its solution, other prompts' solutions and corruptions of it (wrong for this one)
    rng = random.Random(0)
    groups = [
        [(s, rng.random(), verify.verify(s, ref)) for _, _, s in rng.sample(rows, 6)] + [(sol, 1.0, True)]
        for sol, ref in zip(sols, refs)
    ]
    made = {}
    for kind in ("corrupt", "mined", "truncate", "masterkey", "prefix", "echo"):
        negs, reasons = make_negative_generator(kind, seed=1)(list(qs), list(refs), list(sols), groups=groups)
        made[kind] = sum(n is not None for n in negs)
        for neg, ref, why in zip(negs, refs, reasons):
            assert (neg is None) == (why is not None)
            if neg is not None:
                assert not verify.verify(neg, ref, "strict") and not verify.verify(neg, ref, "lenient"), (kind, neg)
    assert all(made[k] >= 0.8 * len(rows) for k in ("mined", "masterkey")), made
    assert made["corrupt"] >= 0.5 * len(rows) and made["truncate"] >= 0.5 * len(rows), made
    # echo needs what corrupt needs; prefix also a reference of two digits or more
    assert made["echo"] >= 0.5 * len(rows) and made["prefix"] >= 0.4 * len(rows), made


def test_mix_makes_one_negative_per_positive_and_kind():
    gen = make_negative_generator("truncate,masterkey", seed=0)
    assert isinstance(gen, NegativeMix) and gen.kinds == ["truncate", "masterkey"]
    assert isinstance(gen.members[0], TruncateNegatives)
    negs, reasons = gen(["q", "r"], ["9", "9"], [SOL, "The answer is \\boxed{9}."])
    assert len(negs) == 4 and negs[0].startswith("Tom has") and negs[1] is None
    assert reasons == [None, "truncate:truncate_failed", None, None] and negs[2] in MASTER_KEYS
    for bad in ("corrupt,corrupt", "corrupt,nope"):
        with pytest.raises(ValueError):
            make_negative_generator(bad)


def test_cooper_step_with_a_mix_counts_pairs_by_kind(tmp_path):
    rm = tiny_rm(tmp_path / "rm")
    gen = make_negative_generator("corrupt,mined,truncate")
    qs, refs = ["q"] * 4 + ["p"] * 4, ["9"] * 4 + ["5"] * 4
    comps = [SOL, "#### 8", "#### 9", "maybe 10"] + ["\\boxed{4}"] * 4
    verdicts = verify.verify_batch(comps, refs)
    before = weights(rm)
    out = cooper_step(rm, gen, qs, refs, comps, verdicts, pairs_per_prompt=2, scores=[0.5] * 8)
    # positives: SOL and "#### 9" (prompt q); p has none. Mined: "#### 8" ("maybe 10" has no strict answer)
    assert out["n_pairs"] == 6 and out["valid/mined"] == 2 and out["valid/truncate"] == 1
    assert out["invalid/truncate:truncate_failed"] == 1 and out["invalid/no_positive"] == 1
    assert out["n_valid"] == out["valid/corrupt"] + 3 and not same(before, weights(rm))


def test_one_positive_and_several_wrong_rollouts_give_several_mined_pairs(tmp_path):
    rm = tiny_rm(tmp_path / "rm")
    gen = make_negative_generator("mined,truncate")
    comps = [SOL, "#### 8", "#### 12", "The answer is \\boxed{3}."]
    verdicts = verify.verify_batch(comps, ["9"] * 4)
    out = cooper_step(rm, gen, ["q"] * 4, ["9"] * 4, comps, verdicts, pairs_per_prompt=3, scores=[0.9, 0.2, 0.7, 0.5])
    # SOL is the one positive, used 3 times: 3 mined pairs (the wrong rollouts, the RM's favourite first); the
    # truncation of SOL is the same each time: 1 pair, the other 2 masked as duplicates
    assert out["n_pairs"] == 6 and out["valid/mined"] == 3 and out["valid/truncate"] == 1
    assert out["invalid/truncate:duplicate"] == 2 and out["n_valid"] == 4
    # with one pair per prompt (the paper's), the step is as before
    out = cooper_step(rm, gen, ["q"] * 4, ["9"] * 4, comps, verdicts, pairs_per_prompt=1, scores=[0.9, 0.2, 0.7, 0.5])
    assert out["n_pairs"] == 2 and out["n_valid"] == 2


def test_confidently_wrong():
    assert confidently_wrong("#### 8", "9") and confidently_wrong("\\boxed{1,000}", "100")
    assert not confidently_wrong("it is 8", "9")  # no strict final answer
    assert not confidently_wrong("#### 9", "9") and not confidently_wrong("\\boxed{9.0}", "9")
    assert not confidently_wrong("\\boxed{18/2}", "9") and not confidently_wrong("\\boxed{\\frac{18}{2}}", "9")
    assert not confidently_wrong("\\boxed{x+1}", "9")  # symbolic: not decided by a number comparison
    assert not confidently_wrong("#### 8", "9", strict_verdict=True)


def test_reference_positives_stand_in_for_prompts_the_policy_got_wrong(tmp_path):
    from cooper_rl.cooper.step import reference_positives

    rm = tiny_rm(tmp_path / "rm")
    gen = make_negative_generator("corrupt,mined")
    ref_sol = restyle(SOL, "boxed", drop_calc=True)
    qs, refs = ["q"] * 3 + ["p"] * 3 + ["r"] * 2, ["9"] * 3 + ["5"] * 3 + ["4"] * 2
    # q: all wrong (two confidently), p: one verified rollout, r: all wrong and its "solution" is wrong
    comps = ["#### 8", "#### 13", "no idea", "\\boxed{5}", "\\boxed{6}", "\\boxed{7}", "\\boxed{3}", "\\boxed{2}"]
    sols = [ref_sol] * 3 + ["2 + 3 = 5.\n#### 5"] * 3 + ["#### 5"] * 2
    verdicts = verify.verify_batch(comps, refs)
    scores = [0.2, 0.9, 0.99, 0.8, 0.1, 0.3, 0.5, 0.5]
    # q gets its solution (twice with 2 pairs per prompt); p has a rollout positive; r's solution fails the rule
    assert reference_positives(qs, refs, verdicts, sols) == ([0], 1)
    assert reference_positives(qs, refs, verdicts, sols, pairs_per_prompt=2) == ([0, 0], 1)
    before = weights(rm)
    out = cooper_step(rm, gen, qs, refs, comps, verdicts, pairs_per_prompt=2, scores=scores, solutions=sols)
    assert out["reference_positives"] == 1 and out["positive_rate"] == pytest.approx(1 / 3)
    assert out["invalid/no_positive"] == 1 and out["invalid/solution_rejected"] == 1  # r only
    # mined for q: its confidently wrong rollouts, the RM's favourite first ("#### 13", then "#### 8"; "no idea"
    # has no answer); for p: "\boxed{7}" then "\boxed{6}"
    assert out["valid/mined"] == 4 and not same(before, weights(rm))
    # the logged pairs say which kind made each and where its positive came from
    assert len(out["pairs"]) == out["n_valid"] and {x["kind"] for x in out["pairs"]} == {"corrupt", "mined"}
    assert sum(x["kind"] == "mined" for x in out["pairs"]) == 4
    assert {x["positive_source"] for x in out["pairs"] if x["question"] == "q"} == {"reference"}
    assert {x["positive_source"] for x in out["pairs"] if x["question"] == "p"} == {"rollout"}
    assert all(x["positive"] == ref_sol for x in out["pairs"] if x["question"] == "q")
    assert sum(x["loss"] for x in out["pairs"]) / len(out["pairs"]) == pytest.approx(out["rm_loss"], rel=1e-4)
    # without solutions the step is the paper's: q has no positive
    out = cooper_step(rm, gen, qs, refs, comps, verdicts, pairs_per_prompt=2, scores=scores)
    assert "reference_positives" not in out and out["invalid/no_positive"] == 2 and out["valid/mined"] == 2


def test_reference_positive_pairs_are_what_the_negatives_got(tmp_path):
    """A reference positive is paired with the prompt's own rollouts (none excluded: the positive is none of them),
    the RM's favourite confidently wrong one first."""
    seen = {}

    def spy(questions, references, positives, groups=None):
        seen.update(p=positives, g=groups)
        return MinedNegatives()(questions, references, positives, groups)

    rm = tiny_rm(tmp_path / "rm")
    ref_sol = restyle(SOL, "boxed", drop_calc=True)
    comps = ["#### 8", "#### 13", "\\boxed{11}", "\\boxed{10}"]
    verdicts = verify.verify_batch(comps, ["9"] * 4)
    assert not any(verdicts)
    scores = [0.1, 0.4, 0.3, 0.2]
    out = cooper_step(rm, spy, ["q"] * 4, ["9"] * 4, comps, verdicts, scores=scores, solutions=[ref_sol] * 4)
    assert seen["p"] == [ref_sol] and [c for c, _, _ in seen["g"][0]] == comps
    assert out["n_valid"] == 1 and out["reference_positives"] == 1 and out["positive_rate"] == 0.0
    assert MinedNegatives()(["q"], ["9"], [ref_sol], seen["g"])[0] == ["#### 13"]


def test_a_prompt_whose_wrong_rollouts_have_no_answer_gives_no_mined_pair(tmp_path):
    # answer-less wrong rollouts may be right in a form the rule cannot read: never mined; the pair is masked and
    # counted, and with no valid pair at all the RM does not move
    rm = tiny_rm(tmp_path / "rm")
    comps = [SOL, "maybe 10", "I think so", "Tom has 3 + 4"]
    verdicts = verify.verify_batch(comps, ["9"] * 4)
    before = weights(rm)
    out = cooper_step(rm, make_negative_generator("mined"), ["q"] * 4, ["9"] * 4, comps, verdicts, scores=[0.5] * 4)
    assert out["n_pairs"] == 1 and out["n_valid"] == 0 and out["invalid/no_candidate"] == 1  # one kind: no kind prefix
    assert same(before, weights(rm))

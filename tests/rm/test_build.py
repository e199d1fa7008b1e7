"""cooper rm-data: categories, labels by construction, exclusion, sample labelling, resumable judge cache."""

import json
import random
import re

import pytest

from cooper_rl import verify
from cooper_rl.data import save_problems
from cooper_rl.formats import FORMAT_VARIANTS, number_words, restyle
from cooper_rl.io import DataError, write_jsonl
from cooper_rl.rm.build import (
    CATEGORIES,
    FORMATS,
    TRAPS,
    RMDataConfig,
    make_trap,
    run_rm_data,
    selected_categories,
)
from cooper_rl.tasks import generate_problems
from fake_openai import FakeOpenAI, last_user

SOL = "She buys 3 * 4 = <<3*4=12>>12 apples.\nShe eats 2, so 12 - 2 = <<12-2=10>>10 apples are left.\n#### 1250"
Q = "Ann buys 3 bags of 4 apples and eats 2. How many apples are left?"
# traps whose completion states one final answer other than the reference (the lenient rule must reject them)
SINGLE_WRONG_ANSWER = ("trap:corrupted", "trap:near_miss", "trap:echo_in_boxed", "trap:question_number")


def build(tmp_path, name="rows", **kw) -> tuple[list[dict], dict]:
    cfg = RMDataConfig(output=str(tmp_path / f"{name}.jsonl"), **kw)
    stats = run_rm_data(cfg)
    rows = [json.loads(x) for x in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
    return rows, stats


def test_format_variants_state_the_reference():
    for style in FORMAT_VARIANTS:
        text = restyle(SOL, style, drop_calc=True, unit="apples")
        assert text is not None, style
        if style not in ("words",):
            assert verify.verify(text, "1250", "lenient"), (style, text)
    assert restyle(SOL, "words").endswith("one thousand two hundred fifty.")
    assert restyle(SOL, "thousands").endswith("1,250.") and restyle(SOL.replace("1250", "12"), "thousands") is None
    assert restyle(SOL, "bare") == "1250" and "<<" not in restyle(SOL, "fraction", drop_calc=True)
    assert [number_words(n) for n in (0, 15, 40, 99, 101, 2000005)] == [
        "zero",
        "fifteen",
        "forty",
        "ninety-nine",
        "one hundred one",
        "two million five",
    ]


@pytest.mark.parametrize("kind", TRAPS)
def test_traps_are_never_correct_against_their_reference(kind):
    """Over many random draws, a trap is never a correct single answer: the ones that state one final answer
    are rejected by the lenient rule, and none states only the reference."""
    rng = random.Random(0)
    made = 0
    for p in generate_problems(40, split="train", seed=1):
        out = make_trap(kind, p.question, p.answer, p.solution, rng.choice(["boxed", "hash", "plain"]), rng)
        if out is None:
            continue
        made += 1
        text, ref = out
        if kind in SINGLE_WRONG_ANSWER or kind == "trap:wrong_reference":
            assert not verify.verify(text, ref, "lenient"), (kind, ref, text)
        if kind == "trap:wrong_reference":
            assert ref != p.answer and verify.verify(text, p.answer, "lenient")  # right text, wrong reference
        assert text.strip() != ref
    assert made >= 20, f"{kind} applied to only {made} of 40 problems"


@pytest.mark.parametrize("ref", ["0", "1", "10", "2.5", "0.125", "-5", "1250"])
@pytest.mark.parametrize("kind", TRAPS)
def test_traps_hold_for_zero_negative_and_decimal_references(kind, ref):
    """Every trap, on references a built-in problem never has: no crash, no single answer equal to the reference,
    and no text ending on the reference (which reads as a correct plain-style answer)."""
    from cooper_rl.formats import parse_number
    from cooper_rl.rm.build import _ends_on

    q = "Tom had 2 boxes and 3 bags. How many items does he have now?"
    sol = (
        f"Tom starts with 2 boxes.\nHe adds 3 bags, 2 + 3 = 5 things.\nAfter the trade he has {ref} items.\n#### {ref}"
    )
    value = parse_number(ref)
    for seed in range(25):
        rng = random.Random(seed)
        out = make_trap(kind, q, ref, sol, rng.choice(["boxed", "hash", "plain", "answer_is", "decimal"]), rng)
        if out is None:
            continue
        text, r = out
        if kind == "trap:wrong_reference":
            assert parse_number(r) != value and verify.verify(text, ref, "lenient")
            continue
        assert r == ref
        if kind in (*SINGLE_WRONG_ANSWER, "trap:echo_reference", "trap:wrong_unit"):
            assert not verify.verify(text, ref, "lenient"), (kind, ref, text)
        if kind in ("trap:truncated", "trap:no_final_answer"):
            assert not _ends_on(text, value), (kind, ref, text)
        if kind == "trap:hedged":
            stated = text.rsplit("items.", 1)[-1]  # what follows the reasoning
            assert len(re.findall(r"-?\d+(?:\.\d+)?", stated)) >= 2, text  # two answers stated


def test_decimal_format_keeps_every_digit():
    sol = "Half of a quarter is 0.125.\n#### 0.125"
    text = restyle(sol, "decimal")
    assert text.endswith("The answer is 0.1250.") and verify.verify(text, "0.125", "lenient")


def test_cots_that_miss_the_reference_are_not_positives(tmp_path):
    wrong = SOL.replace("#### 1250", "#### 999")
    write_jsonl(tmp_path / "svamp.jsonl", [{"question": Q, "answer": SOL, "cots": [wrong, SOL]}])
    rows, stats = build(tmp_path, solutions=[str(tmp_path / "svamp.jsonl")], cots_per_problem=2, mode="suite")
    assert stats["n_solutions"] == 1 and {r["sample"] for r in rows} == {0}


def test_train_mode_is_balanced_and_suite_mode_has_every_category(tmp_path):
    source = "builtin:train:60"
    rows, stats = build(tmp_path, solutions=[source], seed=3)
    assert 0.45 <= stats["positive_rate"] <= 0.55
    assert {r["answer_type"] for r in rows} <= set(CATEGORIES)
    assert all(r["label"] == (r["answer_type"] in FORMATS) for r in rows)
    assert stats["n_rows"] == len(rows) and len(stats["sha256"]) == 64
    suite, sstats = build(tmp_path, "suite", solutions=["builtin:train:20"], mode="suite")
    per = sstats["per_category"]
    assert set(per) | set(sstats["not_applicable"]) == set(CATEGORIES)
    assert per["trap:master_key"]["n"] == 20 and per["fmt:boxed"]["n"] == 20  # every category once per solution
    assert per["fmt:boxed"]["rule_strict_agreement"] == 1.0 and per["fmt:words"]["rule_strict_agreement"] < 0.5
    again, _ = build(tmp_path, "suite2", solutions=["builtin:train:20"], mode="suite")
    assert again == suite  # same seed, same rows


def test_categories_and_exclusion(tmp_path):
    problems = generate_problems(30, split="train", seed=5)
    save_problems(problems[:10], tmp_path / "eval.jsonl")
    save_problems(problems, tmp_path / "all.jsonl")
    rows, stats = build(
        tmp_path, solutions=[str(tmp_path / "all.jsonl")], exclude=[str(tmp_path / "eval.jsonl")], categories=["traps"]
    )
    assert stats["excluded_problems"] == 10
    assert not {r["question"] for r in rows} & {p.question for p in problems[:10]}
    assert {r["answer_type"] for r in rows} <= set(TRAPS) and all(r["label"] == 0 for r in rows)
    assert selected_categories(["fmt:words", "trap:hedged"]) == ("fmt:words", "trap:hedged")
    with pytest.raises(ValueError, match="unknown category"):
        selected_categories(["trap:nonsense"])


def test_cots_lists_are_used(tmp_path):
    sol2 = SOL.replace("She buys", "Ann gets")
    write_jsonl(tmp_path / "svamp.jsonl", [{"question": Q, "answer": SOL, "cots": [SOL, sol2, SOL + "x"]}])
    rows, stats = build(tmp_path, solutions=[str(tmp_path / "svamp.jsonl")], cots_per_problem=2, mode="suite")
    assert stats["n_solutions"] == 2 and {r["sample"] for r in rows} == {0, 1}


def samples_file(tmp_path):
    rows = [
        {"question": Q, "reference": "10", "completion": "So \\boxed{10}.", "source": "policy"},  # strict 1 lenient 1
        {"question": Q, "reference": "10", "completion": "So \\boxed{9}.", "source": "policy"},  # 0 / 0
        {"question": Q, "reference": "10", "completion": "12 - 2 gives 10", "source": "policy"},  # 0 / 1: disagree
        {"question": Q, "reference": "10", "completion": "I have no idea", "source": "policy"},  # 0 / 0
    ]
    write_jsonl(tmp_path / "samples.jsonl", rows)
    return str(tmp_path / "samples.jsonl")


def test_samples_rule_labels_drop_strict_lenient_disagreement(tmp_path):
    rows, stats = build(tmp_path, solutions=["builtin:train:2"], samples=[samples_file(tmp_path)], categories=["traps"])
    got = {r["completion"]: r["label"] for r in rows if r["answer_type"].startswith("sample")}
    assert got == {"So \\boxed{10}.": 1, "So \\boxed{9}.": 0, "I have no idea": 0}
    assert stats["samples_dropped"] == {"rule_strict_lenient_disagree": 1}
    assert stats["per_category"]["sample:correct"]["n"] == 1


def test_samples_hybrid_with_judge_and_cache(tmp_path):
    verdicts = {"So \\boxed{10}.": "yes", "So \\boxed{9}.": "yes", "12 - 2 gives 10": "yes", "I have no idea": "no"}

    def judge(body, i):
        return next(v for k, v in verdicts.items() if k in last_user(body))

    with FakeOpenAI(judge) as srv:
        kw = {"solutions": ["builtin:train:2"], "samples": [samples_file(tmp_path)], "categories": ["traps"]}
        rows, stats = build(tmp_path, judge=f"openai:j@{srv.url}", **kw)
        n_requests = len(srv.requests)
        again, _ = build(tmp_path, judge=f"openai:j@{srv.url}", **kw)
        assert len(srv.requests) == n_requests == 4  # the second run asked nothing: verdicts cached
        cache = tmp_path / "rows.judge_cache.jsonl"
        lines = cache.read_text().splitlines()
        cache.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:10])  # a kill cut the last line mid-write
        build(tmp_path, judge=f"openai:j@{srv.url}", **kw)
        assert len(srv.requests) == 5  # only the cut row was asked again, and the file is readable after
        assert len(cache.read_text().splitlines()) == 4
    got = {r["completion"]: (r["label"], r["label_source"]) for r in rows if r["answer_type"].startswith("sample")}
    # rule and judge agree -> kept; "\\boxed{9}" rule 0 vs judge yes -> dropped; lenient-only match confirmed
    assert got == {"So \\boxed{10}.": (1, "hybrid"), "12 - 2 gives 10": (1, "hybrid"), "I have no idea": (0, "hybrid")}
    assert stats["samples_dropped"]["rule_judge_disagree"] == 1
    assert again == rows


def test_samples_lenient_labels(tmp_path):
    rows, stats = build(
        tmp_path,
        solutions=["builtin:train:2"],
        samples=[samples_file(tmp_path)],
        categories=["traps"],
        sample_labels="lenient",
    )
    got = {r["completion"]: r["label"] for r in rows if r["answer_type"].startswith("sample")}
    assert got["12 - 2 gives 10"] == 1 and len(got) == 4 and stats["samples_dropped"] == {}


def test_hand_labels_replace_the_rule_and_must_all_match(tmp_path):
    rows = [
        {"question": Q, "reference": "10", "completion": c, "source": "policy", "problem_id": "p1", "sample": i}
        for i, c in enumerate(["So \\boxed{10}.", "blah 3 blah ... so 10 whatever"])  # lenient: 1 and 1
    ]
    write_jsonl(tmp_path / "samples.jsonl", rows)
    hand = {"problem_id": "p1", "source": "policy", "sample": 1, "label": 0, "reason": "no final answer"}
    write_jsonl(tmp_path / "hand.jsonl", [hand])
    kw = {"solutions": ["builtin:train:2"], "samples": [str(tmp_path / "samples.jsonl")], "categories": ["traps"]}
    got, stats = build(tmp_path, sample_labels="lenient", label_overrides=str(tmp_path / "hand.jsonl"), **kw)
    by_sample = {r["sample"]: r for r in got if r["answer_type"].startswith("sample")}
    assert (by_sample[0]["label"], by_sample[0]["label_source"]) == (1, "rule")
    assert (by_sample[1]["label"], by_sample[1]["label_source"], by_sample[1]["rule_label"]) == (0, "hand", 1)
    assert stats["hand_labels"] == {"file": str(tmp_path / "hand.jsonl"), "n": 1, "changed": 1}

    write_jsonl(tmp_path / "hand.jsonl", [hand, {**hand, "sample": 7}])  # matches no sample row
    with pytest.raises(DataError, match="match no sample row"):
        build(tmp_path, sample_labels="lenient", label_overrides=str(tmp_path / "hand.jsonl"), **kw)
    write_jsonl(tmp_path / "hand.jsonl", [{**hand, "label": "wrong"}])
    with pytest.raises(DataError, match="row 1: field 'label'"):
        build(tmp_path, sample_labels="lenient", label_overrides=str(tmp_path / "hand.jsonl"), **kw)


def test_missing_verdicts_are_asked_again(tmp_path):
    answers = iter(["maybe", "yes", "yes", "no", "yes"])  # the first reply has no verdict

    with FakeOpenAI(lambda body, i: next(answers)) as srv:
        kw = {"solutions": ["builtin:train:2"], "samples": [samples_file(tmp_path)], "categories": ["traps"]}
        _, stats = build(tmp_path, judge=f"openai:j@{srv.url}", sample_labels="lenient", **kw)
        assert stats["samples_dropped"]["judge_no_verdict"] == 1
        _, stats2 = build(tmp_path, judge=f"openai:j@{srv.url}", sample_labels="lenient", **kw)
        assert len(srv.requests) == 5 and "judge_no_verdict" not in stats2["samples_dropped"]


def test_quiet_prints_nothing_and_still_writes_the_stats(tmp_path, capsys):
    build(tmp_path, "loud", solutions=["builtin:train:5"])
    assert "[rm-data]" in capsys.readouterr().out
    _, stats = build(tmp_path, "quiet", solutions=["builtin:train:5"], quiet=True)
    assert capsys.readouterr().out == ""
    assert json.loads((tmp_path / "quiet.stats.json").read_text())["per_category"] == stats["per_category"]

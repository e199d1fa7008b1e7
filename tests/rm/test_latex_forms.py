"""LaTeX answer forms: correct forms the CAS confirms, wrong forms it refutes, completions that end on them."""

import json
import random
import re

import pytest

from cooper_rl import verify
from cooper_rl.rm.latex_forms import (
    CATEGORIES,
    clean_reference,
    correct_form,
    make_forms,
    outer_brackets,
    parse_value,
    top_level_items,
    wrong_form,
)


def build_latex(tmp_path, probs: list[dict], name: str = "d", **kw) -> tuple:
    """`cooper rm-data` on LaTeX problems only (every split): (stats, rows, its config) for problem rows `probs`."""
    import json

    from cooper_rl.rm.build import RMDataConfig, run_rm_data

    src = tmp_path / "latex.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in probs))
    out = tmp_path / f"{name}.jsonl"
    cfg = RMDataConfig(solutions=[], latex_problems=[str(src)], latex_split="all", output=str(out), **kw)
    stats = run_rm_data(cfg)
    return stats, [json.loads(x) for x in out.read_text().splitlines()], cfg


def test_references_that_are_answers_are_kept_prose_is_not():
    assert clean_reference("$\\frac{48 i-56}{85}$") == "\\frac{48 i-56}{85}"
    assert clean_reference("-15") == "-15"
    assert clean_reference("No solution") is None
    assert clean_reference("No") is None
    assert clean_reference("$\\min$ at $2^{-1 / 3}$") is None
    assert clean_reference("$$\n\\begin{aligned} x \\end{aligned}$$") is None


def test_items_and_interval_ends_at_depth_zero():
    assert top_level_items("7,-7") == ["7", "-7"]
    assert top_level_items("(45,2),(-10,-9)") == ["(45,2)", "(-10,-9)"]
    assert top_level_items("\\left(\\frac{1}{3}, \\pi+\\arctan (2)\\right)") == [
        "\\left(\\frac{1}{3}, \\pi+\\arctan (2)\\right)"
    ]
    ref = "(0,1] \\cup (\\arctan (2), 3)"
    assert [ref[i] for i in outer_brackets(ref)] == ["(", "]", "(", ")"]


@pytest.mark.parametrize(
    "kind, want", [("dfrac", "\\dfrac{3}{4}"), ("frac_short", "\\frac34"), ("slash", "3/4"), ("decimal", "0.75")]
)
def test_correct_forms_of_a_fraction(kind, want):
    ref = "\\frac{3}{4}"
    form = correct_form(kind, ref, parse_value(ref), random.Random(0))
    assert form == want and verify.answers_match(form, ref)


@pytest.mark.parametrize("ref", ["10-4 n", "x^2 - 3x + 2", "\\ln 2 - 1", "1 - \\frac{\\pi}{4}"])
def test_a_reordered_sum_with_negative_terms_is_the_same_value(ref):
    # sympy writes an unevaluated -4n as \left(-1\right) 4 n: the sum is rebuilt term by term ("- 4 n + 10"), and
    # logarithms are written \ln (Math-Verify reads \log as base 10)
    for seed in range(3):
        form = correct_form("reordered", ref, parse_value(ref), random.Random(seed))
        assert "\\left(-1" not in form and "+ -" not in form and verify.answers_match(form, ref), form


def test_forms_the_cas_writes_are_written_as_a_person_would():
    # an unevaluated -4n must not leak into any form as \left(-1\right) 4 n (a cue only machine-made forms carry)
    series = "a_{0} \\sum_{m=0}^{\\infty} \\frac{x^{m}}{m !}"
    assert "\\sum" in wrong_form("sign", series, parse_value(series), random.Random(0))  # not summed to e^x
    for ref in ["10-4 n", "y=-2x+5", "x^2 - 3x + 2"]:
        value = parse_value(ref)
        forms = [correct_form("cas", ref, value, random.Random(0))]
        forms += [wrong_form(k, ref, value, random.Random(s)) for k in ("sign", "dropped") for s in range(4)]
        assert not any("\\left(-1" in f for f in forms if f), forms
        if "=" in ref:  # an equation's wrong forms stay equations (evaluated whole, they came out True / False)
            assert all(f.startswith("y =") and "True" not in f and "False" not in f for f in forms[1:] if f), forms


def test_wrong_forms_differ_from_the_reference():
    ref = "\\frac{3}{4}"
    rng = random.Random(0)
    assert wrong_form("reciprocal", ref, parse_value(ref), rng) == "\\frac{4}{3}"
    assert wrong_form("sign", ref, parse_value(ref), rng) == "- \\frac{3}{4}"
    interval = "(0,125) \\cup(125, \\infty)"
    swapped = wrong_form("bracket", interval, parse_value(interval), rng)
    assert swapped in ("[0,125) \\cup(125, \\infty)", "(0,125] \\cup(125, \\infty)", "(0,125) \\cup[125, \\infty)")
    assert not verify.answers_match(swapped, interval)
    assert wrong_form("partial", "7,-7", parse_value("7,-7"), rng) in ("7", "-7")
    assert wrong_form("bracket", "\\frac{3}{4}", parse_value("\\frac{3}{4}"), rng) is None  # not an interval


def test_every_made_row_is_labelled_as_the_cas_says():
    rng = random.Random(0)
    q = "Evaluate $\\frac{6}{8}$."
    made, why = make_forms("\\frac{3}{4}", q, CATEGORIES, rng, verify.DEFAULT_TIMEOUT)
    cats = {c for c, _, _ in made}
    assert {"latex:as_given", "latex:dfrac", "latex:decimal", "latex_trap:reciprocal", "latex_trap:sign"} <= cats
    assert why["latex:degrees"] == "not_applicable"
    for cat, text, label in made:
        assert label == int(cat.startswith("latex:"))
        if cat != "latex_trap:last_sentence":
            assert verify.verify(text, "\\frac{3}{4}", "strict") == bool(label), (cat, text)
    trap = next(t for c, t, _ in made if c == "latex_trap:last_sentence")
    assert trap.rfind("\\frac{3}{4}") > trap.rfind("\\boxed")  # the reference after the wrong final answer


def test_one_per_label_stops_at_the_first_confirmed_form_of_each_label(monkeypatch):
    import cooper_rl.rm.latex_forms as lf

    asked = []
    real = lf.cas_says
    monkeypatch.setattr(lf, "cas_says", lambda form, ref, *a, **k: asked.append(form) or real(form, ref, *a, **k))
    kinds = ("latex:degrees", "latex:dfrac", "latex:slash", "latex_trap:reciprocal", "latex_trap:sign")
    made, why = make_forms("\\frac{3}{4}", "q", kinds, random.Random(0), verify.DEFAULT_TIMEOUT, one_per_label=True)
    assert [(c, y) for c, _, y in made] == [("latex:dfrac", 1), ("latex_trap:reciprocal", 0)]
    assert len(asked) == 2 and why == {"latex:degrees": "not_applicable"}  # slash and sign never asked


def test_a_form_the_cas_contradicts_is_dropped(monkeypatch):
    import cooper_rl.rm.latex_forms as lf

    monkeypatch.setattr(lf, "correct_form", lambda kind, ref, value, rng: "\\frac{4}{3}")  # "correct", but is not
    made, why = make_forms("\\frac{3}{4}", "q", ("latex:dfrac",), random.Random(0), verify.DEFAULT_TIMEOUT)
    assert made == [] and why == {"latex:dfrac": "cas_rejected"}


def test_rm_data_builds_latex_rows_resumably_with_the_rules_view(tmp_path, monkeypatch):
    import json
    from dataclasses import replace

    from cooper_rl.rm.build import run_rm_data
    from cooper_rl.rm.latex_forms import latex_split_of

    probs = [
        {"question": "Evaluate $\\frac{6}{8}$.", "answer": "$\\frac{3}{4}$"},
        {"question": "Solve $x^2 = 49$.", "answer": "$7,-7$"},
        {"question": "Where is $f$ positive?", "answer": "$(0,125) \\cup(125, \\infty)$"},
        {"question": "Explain.", "answer": "The last column must not be a pivot column."},
    ]
    stats, rows, cfg = build_latex(tmp_path, probs)
    assert sum(r["label"] for r in rows) == 3 and len(rows) == 6  # train mode: one correct, one wrong per answer
    assert stats["latex"]["problems_skipped"] == {"not_a_short_answer": 1}
    for r in rows:
        assert r["answer_type"].startswith("latex") and set(r["rules"]) == {"strict", "lenient", "math_verify"}
        assert r["rules_disagree"] == (len(set(r["rules"].values())) > 1)
    assert all("rules_disagree" in v for v in stats["per_category"].values())
    assert "by_trap_style" not in stats["latex"]  # style "cas": every trap in the CAS's rendering
    import shutil

    shutil.copy(tmp_path / "d.cas_cache.jsonl", tmp_path / "m.cas_cache.jsonl")  # the verdicts asked already
    mixed = run_rm_data(replace(cfg, latex_trap_style="mixed", output=str(tmp_path / "m.jsonl")))
    counts = mixed["latex"]["by_trap_style"]  # labels per style and category: whether a style marks one label
    m_rows = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    for style, cats in counts.items():
        for cat, c in cats.items():
            mine = [r for r in m_rows if r["trap_style"] == style and r["answer_type"] == cat]
            assert c == {"n": len(mine), "positive": sum(r["label"] for r in mine)} and c["n"] > 0
            assert c["positive"] == (c["n"] if cat.startswith("latex:") else 0)
    # a rerun asks the CAS nothing new and makes the same rows
    import cooper_rl.rm.latex_forms as lf

    # (nor the rules: their verdicts on these rows are recorded too)
    never = lambda *a, **k: (_ for _ in ()).throw(AssertionError("asked"))  # noqa: E731
    monkeypatch.setattr(lf.verify, "answers_verdict", never)
    monkeypatch.setattr(lf.verify, "verify_batch", lambda c, *a, **k: [] if not c else never())
    monkeypatch.setattr("cooper_rl.rm.evaluate.math_verify_scores", never)
    assert run_rm_data(cfg)["sha256"] == stats["sha256"]
    # the held-out split is a fixed share of the problems by question
    splits = {latex_split_of(p["question"], 20) for p in probs}
    assert splits <= {"train", "heldout"}


def test_cas_verdicts_are_recorded_timeouts_included_and_retried_only_when_asked(monkeypatch):
    import cooper_rl.rm.latex_forms as lf

    answers = {("x", "1"): False, ("x", "x"): False, ("y", "1"): False, ("y", "y"): None, ("z", "1"): None}
    answers |= {("w", "1"): False, ("w", "w"): True}  # unreadable / self-check timed out / timed out / different
    asked = []
    monkeypatch.setattr(lf.verify, "answers_verdict", lambda a, b, t: asked.append((a, b)) or answers[a, b])
    cache = {}
    assert [lf.cas_says(f, "1", 1.0, cache) for f in "xyzw"] == [None, None, None, False]
    assert cache == {'["x", "1"]': None, '["y", "1"]': "timeout", '["z", "1"]': "timeout", '["w", "1"]': False}
    asked.clear()  # a rebuild from the record asks nothing, and decides as the recorded build did
    assert [lf.cas_says(f, "1", 1.0, cache) for f in "xyzw"] == [None, None, None, False]
    assert asked == []
    answers[("z", "1")] = True  # a faster machine: retried only when asked, and the new verdict is recorded
    assert [lf.cas_says(f, "1", 1.0, cache, retry_timeouts=True) for f in "xyzw"] == [None, None, True, False]
    assert asked == [("y", "1"), ("y", "y"), ("z", "1")] and cache['["z", "1"]'] is True


def test_a_timed_out_form_is_not_made_and_counted(monkeypatch):
    import cooper_rl.rm.latex_forms as lf

    monkeypatch.setattr(lf.verify, "answers_verdict", lambda a, b, t: None)
    made, why = make_forms("\\frac{3}{4}", "q", ("latex:dfrac",), random.Random(0), 1.0, cache={})
    assert made == [] and why == {"latex:dfrac": "cas_timeout"}


def test_reference_values_are_recorded_and_a_lost_one_is_an_error(monkeypatch):
    import cooper_rl.rm.latex_forms as lf

    cache = {}
    assert (
        lf.reference_value("\\frac{3}{4}", 5.0, cache) is not None and lf.reference_value("\\foo{", 5.0, cache) is None
    )
    assert sorted(cache.values()) == [False, True]
    monkeypatch.setattr(lf, "_read", lambda *a: (_ for _ in ()).throw(AssertionError("asked")))
    assert lf.reference_value("\\foo{", 5.0, cache) is None  # recorded as unread: not asked again
    assert lf.reference_value("\\foo{", 5.0, cache, retry_timeouts=True) is None  # unread is not a timeout
    asked = []
    monkeypatch.setattr(lf, "_read", lambda ref, t: asked.append(t) or lf.TIMED_OUT)  # read before, not now
    with pytest.raises(RuntimeError, match="recorded build"):
        lf.reference_value("\\frac{3}{4}", 5.0, cache)
    assert asked == [5.0, 50.0]  # tried again with 10x the time first


def test_a_reference_that_timed_out_is_recorded_and_retried_only_when_asked(monkeypatch):
    import cooper_rl.rm.latex_forms as lf

    cache = {}
    monkeypatch.setattr(lf, "_read", lambda *a: lf.TIMED_OUT)
    assert lf.reference_value("x^2", 5.0, cache) is None
    assert list(cache.values()) == [lf.TIMED_OUT]
    monkeypatch.setattr(lf, "_read", lambda *a: 7)  # a faster CAS
    assert lf.reference_value("x^2", 5.0, cache) is None  # the recorded build's decision: no forms
    assert lf.reference_value("x^2", 5.0, cache, retry_timeouts=True) == 7
    assert list(cache.values()) == [True]
    assert lf.reference_value("x^2", 5.0, cache) == 7
    # the forms that need the value say why they were not made
    monkeypatch.setattr(lf, "_read", lambda *a: lf.TIMED_OUT)
    made, why = lf.make_forms("x^3", "q", ("latex:cas",), random.Random(0), 5.0, cache={})
    assert made == [] and why == {"latex:cas": "reference_timeout"}
    monkeypatch.setattr(lf, "_read", lambda *a: None)  # unreadable, not slow
    assert lf.make_forms("x^3", "q", ("latex:cas",), random.Random(0), 5.0, cache={})[1] == {
        "latex:cas": "not_applicable"
    }


def test_a_rebuild_keeps_the_recorded_timeouts_until_asked_to_retry(tmp_path, monkeypatch):
    import json

    import cooper_rl.rm.latex_forms as lf
    from cooper_rl.rm.build import RMDataConfig, run_rm_data

    src = tmp_path / "latex.jsonl"
    src.write_text(json.dumps({"question": "Evaluate $\\frac{6}{8}$.", "answer": "$\\frac{3}{4}$"}) + "\n")
    cfg = RMDataConfig(
        solutions=[], latex_problems=[str(src)], latex_split="all", mode="suite", output=str(tmp_path / "d.jsonl")
    )
    real = lf.verify.answers_verdict
    slow = {"0.75"}  # this machine's CAS gives no verdict in time on the decimal form
    monkeypatch.setattr(lf.verify, "answers_verdict", lambda a, b, t: None if a in slow else real(a, b, t))
    first = run_rm_data(cfg)
    assert first["latex"]["forms_not_made"].get("latex:decimal cas_timeout") == 1
    slow.clear()  # a faster machine: the same rows, from the record
    assert run_rm_data(cfg)["sha256"] == first["sha256"]
    retried = run_rm_data(RMDataConfig(**{**cfg.__dict__, "cas_retry_timeouts": True}))
    assert (
        retried["sha256"] != first["sha256"] and "latex:decimal cas_timeout" not in retried["latex"]["forms_not_made"]
    )
    record = [json.loads(x) for x in (tmp_path / "d.cas_cache.jsonl").read_text().splitlines()]
    assert [r["verdict"] for r in record if r["key"] == json.dumps(["0.75", "\\frac{3}{4}"])] == ["timeout", True]
    assert run_rm_data(cfg)["sha256"] == retried["sha256"]  # the retried verdict is the record now
    n = len((tmp_path / "d.cas_cache.jsonl").read_text().splitlines())
    run_rm_data(cfg)
    assert len((tmp_path / "d.cas_cache.jsonl").read_text().splitlines()) == n  # a rebuild adds nothing


def test_every_form_in_train_mode_makes_the_suites_rows(tmp_path):
    import json

    import pytest

    from cooper_rl.rm.build import RMDataConfig, run_rm_data

    src = tmp_path / "latex.jsonl"
    probs = [
        {"question": "Evaluate $\\frac{6}{8}$.", "answer": "$\\frac{3}{4}$"},
        {"question": "q", "answer": "$2x+1$"},
    ]
    src.write_text("".join(json.dumps(p) + "\n" for p in probs))

    def rows(**kw):
        out = tmp_path / "d.jsonl"
        run_rm_data(RMDataConfig(solutions=[], latex_problems=[str(src)], latex_split="all", output=str(out), **kw))
        keep = ("question", "completion", "label", "answer_type")
        return [{k: r[k] for k in keep} for r in map(json.loads, out.read_text().splitlines())]

    every, suite, one = rows(latex_forms="all"), rows(mode="suite"), rows()
    assert every == suite and len(every) > len(one) == 4  # one correct and one wrong per problem by default
    assert len({r["answer_type"] for r in every}) > 4
    with pytest.raises(ValueError, match="latex_forms"):
        rows(latex_forms="two")


def test_text_style_traps_are_written_in_the_references_own_text_and_checked_by_the_cas():
    from cooper_rl.rm.latex_forms import text_negated, text_reciprocal

    assert text_negated("-\\frac{8}{7}") == "\\frac{8}{7}" and text_negated("x^{2}") == "-x^{2}"
    assert text_negated("y=\\frac{c}{x^{3}}") == "y=-\\frac{c}{x^{3}}" and text_negated("e^{-t}") == "-e^{-t}"
    assert text_negated("x^{2}-4 x") == "-\\left(x^{2}-4 x\\right)" and text_negated("7,-7") is None
    assert text_reciprocal("\\frac{3}{4}") == "\\frac{4}{3}" and text_reciprocal("-\\frac{8}{7}") == "-\\frac{7}{8}"
    assert text_reciprocal("11") == "\\frac{1}{11}" and text_reciprocal("7,-7") is None
    assert text_reciprocal("-3") == "-\\frac{1}{3}" and text_reciprocal("-\\frac{1}{4}") == "-4"
    assert text_reciprocal("-\\frac{1}{x+1}") == "-\\left(x+1\\right)" and text_negated("0") is None  # no -0
    assert text_reciprocal("\\frac{\\sqrt{3}}{2}") == "\\frac{2}{\\sqrt{3}}"  # nested braces: still a fraction
    assert text_reciprocal("-\\frac{1}{-2}") == "2" and text_reciprocal("x=4") == "x=\\frac{1}{4}"
    assert text_negated("x^{2}-4 x-2=0") is None
    from cooper_rl.rm.latex_forms import text_dropped

    assert text_dropped("y=e^{-2 t}+3", random.Random(1)) == "y=3"  # the exponent's minus is no term
    assert (
        text_dropped("e^-x+1", random.Random(1)) == "1" and text_dropped("3 m^{4}-2 m+6", random.Random(1)) == "-2 m+6"
    )
    assert text_dropped("x^{2} - 4 x - 10", random.Random(1)) == "- 4 x - 10"  # its own spacing
    for not_a_sum in ("|x-2|+1", "6 x", "x<-7:(-\\infty,-7)", "x \\leq -2", "a \\times -b", "k=12 ; \\quad v=-16", "-3 b^{4}+13 b^{3}-"):  # fmt: skip
        assert text_dropped(not_a_sum, random.Random(0)) is None, not_a_sum
    made, why = make_forms("x^{2}-4 x-10", "q", ("latex_trap:dropped",), random.Random(1), verify.DEFAULT_TIMEOUT, style="text")  # fmt: skip
    assert why == {} and made[0][2] == 0 and "-4 x-10" in made[0][1]  # the CAS confirms it is wrong
    kinds = ("latex_trap:sign", "latex_trap:reciprocal")
    for ref, want in (("-\\frac{8}{7}", ["\\frac{8}{7}", "-\\frac{7}{8}"]), ("\\frac{3}{4}", ["-\\frac{3}{4}", "\\frac{4}{3}"])):  # fmt: skip
        made, why = make_forms(ref, "q", kinds, random.Random(0), verify.DEFAULT_TIMEOUT, style="text")
        assert [y for _, _, y in made] == [0, 0] and why == {}  # the CAS confirms both are wrong
        assert [f"\\boxed{{{w}}}" in text or f"${w}$" in text for (_, text, _), w in zip(made, want)] == [True, True]
    cas, _ = make_forms("\\frac{3}{4}", "q", kinds, random.Random(0), verify.DEFAULT_TIMEOUT)  # the CAS's rendering
    assert "- \\frac{3}{4}" in cas[0][1]


def test_mixed_trap_style_writes_half_the_problems_in_text_and_leaves_the_other_forms_alone(tmp_path, monkeypatch):
    import json

    import cooper_rl.rm.latex_forms as lf

    monkeypatch.setattr(lf, "rules_say", lambda comps, ref, t, cache=None: [{"strict": True}] * len(comps))
    monkeypatch.setattr(lf, "cas_says", lambda form, ref, *a, **k: form.replace(" ", "") == ref.replace(" ", ""))  # fmt: skip
    src = tmp_path / "p.jsonl"
    src.write_text("".join(json.dumps({"question": f"q{i}", "answer": f"\\frac{{{i}}}{{{i + 1}}}"}) + "\n" for i in range(1, 41)))  # fmt: skip

    def build(style):
        rows, _, _ = lf.latex_rows([str(src)], "all", 20, "suite", 0, 5.0, tmp_path / f"{style}.cache.jsonl", trap_style=style)  # fmt: skip
        return rows

    cas, mixed = build("cas"), build("mixed")
    key = lambda r: (r["problem_id"], r["answer_type"])  # noqa: E731
    traps = ("latex_trap:sign", "latex_trap:reciprocal")
    differ = {r["problem_id"] for r, m in zip(cas, mixed) if r["answer_type"] in traps and r["completion"] != m["completion"]}  # fmt: skip
    assert [key(r) for r in cas] == [key(r) for r in mixed]  # the same categories, in the same order
    assert 10 <= len(differ) <= 30  # about half the problems write these two traps in the reference's text
    styled = (*traps, "latex_trap:dropped", "latex_trap:near", "latex_trap:last_sentence")  # (last_sentence: any)
    same = [(r, m) for r, m in zip(cas, mixed) if r["answer_type"] not in styled or r["problem_id"] not in differ]
    assert all(r["completion"] == m["completion"] for r, m in same)  # everything else as in style "cas"
    # a mixed build's rows name their problem's style (the ones written otherwise among the "text" ones), and its
    # stats count labels per style and category; a "cas" build's rows are as before
    assert all("trap_style" not in r for r in cas)
    text = {m["problem_id"] for m in mixed if m["trap_style"] == "text"}
    assert differ <= text and {m["trap_style"] for m in mixed} == {"cas", "text"}
    assert all(len({m["trap_style"] for m in mixed if m["problem_id"] == p}) == 1 for p in text)
    from cooper_rl.rm.build import by_style

    counts = by_style(mixed)
    assert sum(c["n"] for cats in counts.values() for c in cats.values()) == len(mixed)
    assert counts["text"]["latex_trap:sign"] == {"n": sum(m["answer_type"] == "latex_trap:sign" for m in mixed if m["trap_style"] == "text"), "positive": 0}  # fmt: skip
    import pytest

    with pytest.raises(ValueError, match="trap_style"):
        lf.latex_rows([str(src)], "all", 20, "suite", 0, 5.0, tmp_path / "x.jsonl", trap_style="text")


def test_rm_data_names_an_unknown_trap_style_before_building(tmp_path):
    from cooper_rl.rm.build import RMDataConfig, run_rm_data

    cfg = RMDataConfig(solutions=["builtin:train:4"], latex_trap_style="text", output=str(tmp_path / "d.jsonl"))
    with pytest.raises(ValueError, match="latex_trap_style must be cas or mixed"):
        run_rm_data(cfg)
    assert not (tmp_path / "d.jsonl").exists()


def test_text_style_near_value_of_a_decimal_answer_is_a_decimal():
    import sympy

    from cooper_rl.rm.latex_forms import near_decimal

    for v, want in (((25, 2), {"12.4", "12.6"}), ((1, 10), {"0.2"}), ((-19, 10), {"-1.8"}), ((1, 2), {"0.4", "0.6"})):
        got = {near_decimal(sympy.Rational(*v), random.Random(k)) for k in range(6)}
        assert got == want, (v, got)  # one unit in the last place, never 0, whole or with stray zeros
    assert near_decimal(sympy.Rational(1, 2**20), random.Random(0)) is None  # written with an exponent: none
    for seed in range(4):
        made, why = make_forms("\\frac{3}{4}", "q", ("latex_trap:near",), random.Random(seed), verify.DEFAULT_TIMEOUT, style="text")  # fmt: skip
        assert why == {} and made[0][2] == 0  # the CAS confirms it differs from 3/4
        boxed = re.findall(r"\\boxed\{([^}]*)\}", made[0][1])
        text = boxed[-1] if boxed else re.findall(r"\$([^$]*)\$", made[0][1])[-1]
        assert re.fullmatch(r"\d\.\d+", text) and text != "0.75", text
    made, _ = make_forms("\\sqrt{2}", "q", ("latex_trap:near",), random.Random(0), verify.DEFAULT_TIMEOUT, style="text")
    assert "sqrt" in made[0][1]  # no terminating decimal: the near value in the reference's text, as before


def test_a_problem_can_name_its_categories_and_a_bad_name_is_an_error_naming_the_row(tmp_path):
    import json

    from cooper_rl.io import DataError
    from cooper_rl.rm.build import RMDataConfig, run_rm_data

    src = tmp_path / "latex.jsonl"
    want = ["latex:decimal", "latex_trap:near", "latex:as_given"]
    probs = [
        {"question": "Evaluate $\\frac{6}{8}$.", "answer": "$\\frac{3}{4}$", "categories": want},
        {"question": "Evaluate $\\frac{2}{8}$.", "answer": "$\\frac{1}{4}$"},  # no field: as before
    ]
    src.write_text("".join(json.dumps(p) + "\n" for p in probs))
    out = tmp_path / "d.jsonl"
    cfg = RMDataConfig(solutions=[], latex_problems=[str(src)], latex_split="all", output=str(out))
    run_rm_data(cfg)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    named = [r for r in rows if r["reference"] == "\\frac{3}{4}"]
    # in train mode every named category that applies (not one per label), and nothing else
    assert sorted(r["answer_type"] for r in named) == sorted(want)
    assert len([r for r in rows if r["reference"] == "\\frac{1}{4}"]) == 2  # one correct, one wrong
    for bad, match in ((["latex:decimals"], "unknown.*latex:decimals"), ([], "non-empty list")):
        src.write_text(json.dumps({**probs[0], "categories": bad}) + "\n")
        with pytest.raises(DataError, match=f"latex.jsonl: row 1: field 'categories'.*{match}"):
            run_rm_data(cfg)


def test_references_the_cas_misreads_are_named_and_plain_values_are_not():
    from cooper_rl.rm.latex_forms import ambiguous_reference

    assert ambiguous_reference("60,180") == "list_as_number" and ambiguous_reference("-125,343") == "list_as_number"
    assert ambiguous_reference("1,234,567") == "list_as_number"  # a thousands number looks the same: skipped too
    assert ambiguous_reference("324 ;(m-18)^{2}") == "first_part_only"
    for plain in ("60180", "\\frac{3}{4}", "(1, \\pi)", "1,2", "12,3456", "x \\ge 2", "x \\; y", "(1,100)"):
        assert ambiguous_reference(plain) is None, plain
    assert ambiguous_reference("367,500 \\pi") == "list_as_number"  # read as the set {367, 500 pi}


def test_the_cas_reading_of_a_reference_must_keep_every_part():
    from cooper_rl.rm.latex_forms import misread_reference, parse_value

    def why(ref, cache=None):
        return misread_reference(ref, parse_value(ref), 10, cache)

    assert why("13 \\mathrm{n}, 5 \\mathrm{~d}") == "part_lost"  # read as 13
    assert why("x=0, \\frac{5 \\pm \\sqrt{61}}{18}") == "part_lost"  # read as 0
    assert why("d=5, M=\\left(-1, \\frac{7}{2}\\right)") == "relation_as_number"  # a tuple's too: read as 5
    assert why("1,1,2,3") == "repeat_merged"  # read as the set {1, 2, 3}
    assert why("-2 \\leqslant n \\leqslant 4:[-2,4]") == "relation_as_number"  # read as 4
    assert why("x \\neq \\pm 5") == "relation_as_number"  # read as 5
    assert why("60,180") == "list_as_number"  # the shape kinds come first
    plain = (
        "x=-1,3",
        "\\pm 1, \\pm 7",
        "0, \\pm 1,-2",
        "(1, \\pi)",
        "\\frac{3}{4}",
        "x \\ge 2",
        "[0, 1)",
        "2 \\sqrt{3}",
    )
    plain += (
        "x=1, x=2",
        "\\bar{x}=0, \\bar{y}=8 / 5",
        "P(A \\mid B)=\\frac{1}{2}",
        "P(X>2)=0.3",  # a relation left of the `=` is not the answer
    )  # equations are read by their values
    for ref in plain:
        assert why(ref) is None, ref
    assert misread_reference("no reading", None, 10) is None  # nothing is made from an unread reference
    cache = {}
    assert why("1,1,2,3", cache) == "repeat_merged" and why("x=-1,3", cache) is None
    assert cache == {'["misread", "1,1,2,3"]': "repeat_merged", '["misread", "x=-1,3"]': False}
    cache['["misread", "x=-1,3"]'] = "part_lost"  # a rebuild takes the record's outcome, asking nothing
    assert why("x=-1,3", cache) == "part_lost"
    cache['["misread", "x=-1,3"]'] = "timeout"  # a recorded timeout stays, unless asked again
    assert why("x=-1,3", cache) == "timeout"
    assert misread_reference("x=-1,3", parse_value("x=-1,3"), 10, cache, retry_timeouts=True) is None
    assert cache['["misread", "x=-1,3"]'] is False


def test_problems_with_misread_references_are_skipped_unless_kept(tmp_path):
    probs = [
        {"question": "How many stamps did each collect?", "answer": "$60,180$"},
        {"question": "Complete the square.", "answer": "$324 ; (m-18)^{2}$"},
        {"question": "Find the eigenvalues.", "answer": "$1,1,2,3$"},
        {"question": "Evaluate $\\frac{6}{8}$.", "answer": "$\\frac{3}{4}$"},
    ]
    stats, rows, _ = build_latex(tmp_path, probs)
    assert {r["reference"] for r in rows} == {"\\frac{3}{4}"}
    assert stats["latex"]["problems_skipped"] == {
        "ambiguous_reference:first_part_only": 1,
        "ambiguous_reference:list_as_number": 1,
        "ambiguous_reference:repeat_merged": 1,
    }

    def checks(name):  # the kinds of check a build's CAS record holds
        return {json.loads(json.loads(x)["key"])[0] for x in (tmp_path / f"{name}.cas_cache.jsonl").open()}

    assert "misread" in checks("d")  # the check's outcomes are recorded
    kept, rows, _ = build_latex(tmp_path, probs, "k", latex_ambiguous_refs="keep")
    assert "60,180" in {r["reference"] for r in rows} and kept["latex"]["problems_skipped"] == {}
    # keep asks nothing new: rounds 4-6 and the suite rebuild byte for byte with their records
    assert "misread" not in checks("k")
    with pytest.raises(ValueError, match="latex_ambiguous_refs must be skip or keep"):
        build_latex(tmp_path, probs, "x", latex_ambiguous_refs="drop")

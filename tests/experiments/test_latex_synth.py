import json
import re

import sympy
from tests.experiments import EXPERIMENTS, load_script

from cooper_rl.rm.latex_forms import CATEGORIES, parse_value

ls = load_script("latex_synth", EXPERIMENTS / "verifyrm")


def test_the_committed_problems_are_what_the_script_writes():
    committed = (EXPERIMENTS / "verifyrm" / "v6" / "synthetic_problems.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in committed] == ls.problems(400, 0)


def test_problems_are_distinct_and_name_known_categories():
    rows = ls.problems(60, 3)
    assert len(rows) == 180 and len({r["question"] for r in rows}) == 180 and len({r["id"] for r in rows}) == 180
    for r in rows:
        assert set(r["categories"]) <= set(CATEGORIES) and r["answer"].startswith("$") and r["answer"].endswith("$")


def _read(tex: str):
    return parse_value(tex, timeout=10)


def test_every_answer_is_the_answer_to_its_question():
    x = sympy.Symbol("x", real=True)
    checked = 0
    for r in ls.problems(40, 1):
        q, v = r["question"], _read(r["answer"][1:-1])
        assert v is not None, r
        family = r["id"].split(".")[1]
        if family == "fraction":
            assert isinstance(v, sympy.Rational) and not v.is_integer
            den = v.q
            while den % 2 == 0:
                den //= 2
            while den % 5 == 0:
                den //= 5
            assert den == 1  # a terminating decimal
            m = re.search(r"(?:Simplify|Compute|Evaluate) \$(.*)\$\.", q)
            if m:
                assert sympy.simplify(_read(m.group(1)) - v) == 0, r
                checked += 1
            m = re.search(r": \$(.*) = (.*)\$\.", q)
            if m:
                lhs, rhs = _read(m.group(1)), _read(m.group(2))
                assert sympy.simplify(lhs.subs(next(iter(lhs.free_symbols)), v) - rhs) == 0, r
                checked += 1
        m = re.fullmatch(r"Solve the inequality \$(-?\d+) x ([+-]) (\d+) (<|\\le|>|\\ge) (.*)\$\. .*", q)
        if m:  # a linear inequality: its solution set
            a, sign, b, rel, c = m.groups()
            lhs = int(a) * x + (int(b) if sign == "+" else -int(b))
            op = {"<": "<", "\\le": "<=", ">": ">", "\\ge": ">="}[rel]
            sol = sympy.solveset(sympy.Rel(lhs, _read(c), op), x, sympy.S.Reals)
            assert sol == v, r
            checked += 1
        m = re.search(r"(?:Factor|Simplify|fraction:) \$(.*)\$", q)
        if family == "expression" and m and "root" not in q:
            assert sympy.simplify(_read(m.group(1)) - v) == 0, r
            checked += 1
    assert checked >= 40

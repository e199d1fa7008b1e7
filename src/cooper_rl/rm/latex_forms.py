"""Answer forms of LaTeX reference answers (college and competition math) for VerifyRM data: the same value written
another way (correct) and plausible wrong answers (traps), wrapped in short solution-shaped completions.

Every form is checked against the reference by the CAS (Math-Verify on sympy, in the verifier's sandbox with a
deadline), never by string rules: a correct form is kept only if the CAS says it equals the reference, a wrong form
only if the CAS reads it (it equals itself) and says it differs. A form whose intended label the CAS contradicts is
dropped and counted (``cas_rejected``).

Correct forms (label 1), category ``latex:<name>``:
    as_given     the reference as written            dfrac        \\frac -> \\dfrac
    frac_short   \\frac{3}{4} -> \\frac34            slash        \\frac{a}{b} -> a/b, (a)/(b)
    decimal      a terminating decimal (3/4 -> 0.75)  cas          the CAS's own rendering of the value (sympy.latex)
    reordered    the terms of a sum, the elements of a list or set in another order
    left_right   ( ) [ ] -> \\left( \\right) ...     cdot         an implicit product made explicit (\\cdot)
    degrees      ^\\circ <-> ° <-> ^{\\circ}
Wrong forms (label 0), category ``latex_trap:<name>``:
    near         one number of the answer off by one  reciprocal   1 / value
    sign         -value (an equation: its right side negated)
    dropped      a sum without one term, a product without one factor
    bracket      an interval with one end's bracket swapped: ( <-> [
    partial      one element of a list of several (one of two roots)
    last_sentence   a wrong final answer followed by the reference in a negation or an aside ("..., not R")

The CAS renders its forms in its own style (``x^{2} - 4 x``), the reciprocal and the sign flip included. Written
that way, a style marks most wrong forms and few correct ones (only ``cas`` and reordered sums), and an RM can learn
the style instead of the value. trap_style "mixed" (training data) writes the traps of a random half of the
problems otherwise: the sign flip, the reciprocal and a sum's dropped term in the reference's own text
(``-\\frac{8}{7}`` -> ``\\frac{8}{7}``, ``\\frac{a}{b}`` -> ``\\frac{b}{a}``), and the near value as a decimal where the
value has one (a decimal answer to a reference without one is otherwise nearly always right); the held-out suite keeps the CAS's style ("cas").
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from itertools import permutations
from pathlib import Path

from cooper_rl import verify

CORRECT = (
    "as_given", "dfrac", "frac_short", "slash", "decimal", "cas", "reordered", "left_right", "cdot", "degrees",
)  # fmt: skip
WRONG = ("near", "reciprocal", "sign", "dropped", "bracket", "partial", "last_sentence")
CATEGORIES = tuple(f"latex:{c}" for c in CORRECT) + tuple(f"latex_trap:{w}" for w in WRONG)
MAX_LEN = 160  # longer references (derivations, prose) are not answers this module varies

_WORD = re.compile(r"(?<!\\)\b[A-Za-z]{3,}\b")  # a word outside LaTeX commands: prose, not an answer
_FRAC = re.compile(r"\\frac\{([^{}]*)\}\{([^{}]*)\}")


def clean_reference(answer: str) -> str | None:
    """The reference as an answer string (outer $ and spaces stripped), or None if it is prose, a derivation or
    too long to vary (such problems are skipped)."""
    a = answer.strip()
    if a.startswith("$$") or "\\begin" in a or "\n" in a or len(a) > MAX_LEN:
        return None
    if a.startswith("$") and a.endswith("$") and a.count("$") == 2:
        a = a[1:-1].strip()
    if "$" in a or not a or _WORD.search(re.sub(r"\\[A-Za-z]+", "", a)) or re.fullmatch(r"[A-Z][a-z]+", a):
        return None  # prose, or a word such as "No" (read as the product N o)
    return a


_THOUSANDS_LIKE = re.compile(r"(?<![\d.])\d{1,3}(,\d{3})+(?![\d.])")  # a list, or thousands separators
_RELATION = re.compile(r"[<>]|\\(lt|gt|le|ge|leq|geq|leqq|geqq|leqslant|geqslant|neq|ne)(?![A-Za-z])")  # not \\mid
_PAIR = re.compile(r"[(\[][^()\[\]]*,[^()\[\]]*[)\]]")  # an interval or a tuple: (a, b), [a, b)


def ambiguous_reference(ref: str) -> str | None:
    """Why the CAS would misread reference `ref` by its shape alone, or None: 'list_as_number' (`60,180` or `367,500
    \\pi` may list two answers, 60 and 180, but is read as the number 60180) or 'first_part_only' (`a ; b` is read as a
    alone). Forms derived from such a misread value would be labelled correct although they are not the answer."""
    outside = {i for i, _ in top_level(ref)}
    depth0 = "".join(ch if i in outside else " " for i, ch in enumerate(ref))  # bracketed text blanked
    if _THOUSANDS_LIKE.search(depth0):
        return "list_as_number"
    if re.search(r"(?<!\\);", ref):  # not LaTeX's \; (a space)
        return "first_part_only"
    return None


def _rhs(value):
    """An equation's right side (`x = 3` -> 3), else the value itself."""
    import sympy

    return value.rhs if isinstance(value, sympy.Eq) else value


def _elements(value) -> list:
    """The values an answer's reading lists: a set's elements (each equation's right side: `x=1, x=2` lists 1 and 2),
    an equation's right side's, else the value itself."""
    import sympy

    value = _rhs(value)
    return [_rhs(v) for v in value.args] if isinstance(value, sympy.FiniteSet) else [value]


def _answer_side(ref: str) -> str:
    """The text after the reference's last `=` outside brackets (`P(X>2)=0.3` -> `0.3`), or all of it."""
    cuts = [i for i, ch in top_level(ref) if ch == "="]
    return ref[cuts[-1] + 1 :] if cuts else ref


def _relation_or_pair(ref: str) -> bool:
    """Whether the answer side of `ref` holds an inequality, a set-builder, an interval or a tuple."""
    side = _answer_side(ref)
    return bool(_RELATION.search(side) or _PAIR.search(side))


def misread_suspect(ref: str) -> bool:
    """Whether misread_reference could name `ref` at all (without the CAS: its shape, a relation, an interval or
    tuple, or several comma-separated parts); if not, it returns None whatever the reading."""
    return bool(ambiguous_reference(ref) or _relation_or_pair(ref) or len(top_level_items(ref)) > 1)


def misread_reference(
    ref: str, value, timeout: float, cache: dict | None = None, retry_timeouts: bool = False
) -> str | None:
    """Why the CAS's reading `value` (parse_value) of reference `ref` is not the reference, or None: the shape kinds of
    ambiguous_reference, or, asking the CAS, 'relation_as_number' (an inequality, a set-builder, an interval or a tuple
    read as one number, on the answer's side of an `=`: `-2 \\le n \\le 4:[-2,4]` as 4, `x \\neq \\pm 5` as 5,
    `d=5, M=(-1, 3)` as 5; not `P(X>2)=0.3`), 'part_lost'
    (a reference of several comma-separated parts whose reading lacks one of them, each read alone: `13 \\mathrm{n},
    5 \\mathrm{~d}` as 13, `x=0, \\frac{5 \\pm \\sqrt{61}}{18}` as 0), 'repeat_merged' (`1,1,2,3` read as the set
    {1, 2, 3}) or 'timeout' (a part gave no reading in time: left out too). `cache` (as in cas_says) records the
    outcome, so a rebuild asks nothing (retry_timeouts: a recorded 'timeout' is asked again)."""
    import sympy

    if why := ambiguous_reference(ref):
        return why
    if value is None or not misread_suspect(ref):
        return None  # (an unread reference has no reading to check: no form is made from its value)
    key = json.dumps(["misread", ref])
    if cache is not None and key in cache and not (retry_timeouts and cache[key] == TIMED_OUT):
        return cache[key] or None
    why, answer = None, _rhs(value)
    if isinstance(answer, sympy.Expr) and answer.is_number and _relation_or_pair(ref):
        why = "relation_as_number"
    elif len(items := top_level_items(ref)) > 1:
        whole, parts = _elements(value), []
        for item in items:
            part = _read(item, timeout)
            if isinstance(part, str):  # TIMED_OUT
                why = TIMED_OUT
                break
            if part is None or any(e not in whole for e in _elements(part)):
                why = "part_lost"
                break
            parts += _elements(part)
        if why is None and len(parts) > len(whole):
            why = "repeat_merged"
    if cache is not None and cache.get(key) != (why or False):  # (a retry timing out again: no new line)
        cache[key] = why or False
    return why


def misread(ref: str, timeout: float, cache: dict | None = None, retry_timeouts: bool = False) -> str | None:
    """misread_reference of `ref` as the CAS reads it (reference_value; read only where it could be misread)."""
    read = misread_suspect(ref) and not ambiguous_reference(ref)
    value = reference_value(ref, timeout, cache, retry_timeouts) if read else None
    return misread_reference(ref, value, timeout, cache, retry_timeouts)


TIMED_OUT = "timeout"  # a cached CAS check that gave no verdict in time: the build's decision (the form is dropped)


def parse_value(answer: str, timeout: float = 10.0):
    """The sympy object Math-Verify reads from an answer string (None if it reads none within `timeout` seconds)."""
    value = _read(answer, timeout)
    return None if isinstance(value, str) else value


def _read(answer: str, timeout: float):
    """parse_value, with TIMED_OUT instead of None when the CAS gave no answer in time."""
    from math_verify import parse
    from math_verify.errors import TimeoutException

    try:
        parsed = parse(f"${answer}$", parsing_timeout=max(1, round(timeout)), raise_on_error=True)
    except TimeoutException:
        return TIMED_OUT
    except Exception:
        return None
    return next((p for p in parsed if not isinstance(p, str)), None)


def parsed_key(ref: str) -> str:
    """The record's key for whether the CAS read reference `ref`."""
    return json.dumps(["parsed", ref, None])


def reference_value(ref: str, timeout: float, cache: dict | None = None, retry_timeouts: bool = False):
    """parse_value of a reference, with `cache` (as in cas_says) recording whether the CAS read one (True, False, or
    TIMED_OUT), so that a rebuild makes the same forms: a reference recorded as unread or timed out stays unread
    (retry_timeouts: a timed-out one is asked again and its new outcome recorded); one recorded as read but not
    read now (a slow machine) is tried again with 10x the time, then is an error naming it."""
    key = parsed_key(ref)
    recorded = None if cache is None else cache.get(key)
    if recorded is False or (recorded == TIMED_OUT and not retry_timeouts):
        return None
    value = _read(ref, timeout)
    if recorded is True and (value is None or isinstance(value, str)):
        value = _read(ref, 10 * timeout)
        if value is None or isinstance(value, str):
            raise RuntimeError(
                f"the CAS read reference {ref!r} in the recorded build but not now (raise --verify_timeout)"
            )
    outcome = TIMED_OUT if isinstance(value, str) else value is not None
    if cache is not None and recorded != outcome:
        cache[key] = outcome
    return None if isinstance(value, str) else value


def top_level(s: str):
    """(position, character) of each character of s outside all brackets and braces ('a+(b-c)' -> a, +, ) and
    nothing of b-c; a closing bracket counts as outside)."""
    depth = 0
    for i, ch in enumerate(s):
        depth += 1 if ch in "([{" else -1 if ch in ")]}" else 0
        if depth == 0:
            yield i, ch


def top_level_items(answer: str) -> list[str]:
    """The comma-separated items of an answer at bracket depth 0 ('7,-7' -> ['7', '-7']; '(1, 2)' -> ['(1, 2)'])."""
    cuts = [i for i, ch in top_level(answer) if ch == ","]
    items = [answer[a + 1 : b].strip() for a, b in zip([-1, *cuts], [*cuts, len(answer)])]
    return [x for x in items if x]


def outer_brackets(answer: str) -> list[int]:
    """Positions of the brackets that open or close an interval at depth 0 ('(0, 1] \\cup (2, 3)' -> the four
    ends; the parentheses of \\arctan (2) inside are not ends)."""
    out, depth = [], 0
    for i, ch in enumerate(answer):
        if ch in "([":
            if depth == 0:
                out.append(i)
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0:
                out.append(i)
    return out


def _sympy_latex(expr) -> str:
    import sympy

    # Math-Verify parses without evaluating: -4n is Mul(-1, 4, n), which sympy writes \left(-1\right) 4 n. Products
    # and sums are rebuilt evaluated (not doit(): that would sum series and evaluate an equation to True / False)
    def tidy(e):
        return e.replace(lambda x: isinstance(x, (sympy.Mul, sympy.Add)), lambda x: x.func(*x.args))

    try:
        if isinstance(expr, sympy.Rel):
            expr = type(expr)(tidy(expr.lhs), tidy(expr.rhs), evaluate=False)
        elif isinstance(expr, sympy.Expr):
            expr = tidy(expr)
    except Exception:
        pass
    return sympy.latex(expr, ln_notation=True)  # Math-Verify reads \log as base 10


def correct_form(kind: str, ref: str, value, rng: random.Random) -> str | None:
    """The reference written as correct form `kind` (CORRECT), or None where that form does not apply."""
    import sympy

    if kind == "as_given":
        return ref
    if kind == "dfrac":
        return ref.replace("\\frac", "\\dfrac") if "\\frac" in ref else None
    if kind == "frac_short":
        out = re.sub(r"\\frac\{(\d)\}\{(\d)\}", r"\\frac\1\2", ref)
        return out if out != ref else None
    if kind == "slash":
        wrap = lambda s: s if re.fullmatch(r"[\w\\{}^.]+", s) else f"({s})"
        out = _FRAC.sub(lambda m: f"{wrap(m.group(1))}/{wrap(m.group(2))}", ref)
        return out if out != ref else None
    if kind == "decimal":
        if isinstance(value, sympy.Rational) and not value.is_integer:
            den = int(value.q)
            while den % 2 == 0:
                den //= 2
            while den % 5 == 0:
                den //= 5
            if den == 1:
                return str(sympy.Float(value, 15)).rstrip("0")
        return None
    if kind == "cas":
        if value is None or isinstance(value, (sympy.Set, sympy.Tuple)):
            return None
        out = _sympy_latex(value)
        return out if out.replace(" ", "") != ref.replace(" ", "") else None
    if kind == "reordered":
        items = top_level_items(ref)
        if len(items) >= 2:
            orders = [p for p in permutations(items) if list(p) != items]
            return ", ".join(rng.choice(orders[:24]))
        if isinstance(value, sympy.Add) and len(value.args) >= 2:
            terms = list(value.args)
            rng.shuffle(terms)
            parts = []
            for i, t in enumerate(terms):  # a negative term as "- |t|" (never "+ (-1) t"), a sum in parentheses
                neg = t.could_extract_minus_sign()
                body = -t if neg else t
                text = f"({_sympy_latex(body)})" if isinstance(body, sympy.Add) else _sympy_latex(body)
                parts.append(("- " if neg else "+ " if i else "") + text)
            return " ".join(parts)
        return None
    if kind == "left_right":  # matched pairs, \\left( 0, 1 \\right] too; never \\sqrt[n]'s index
        if "\\left" in ref:
            return None
        pairs, stack = [], []
        for i, ch in enumerate(ref):
            if ch in "([" and not (ch == "[" and ref[:i].endswith("\\sqrt")):
                stack.append(i)
            elif ch in ")]" and stack:
                pairs.append((stack.pop(), i))
        if not pairs or stack:
            return None
        marks = {o: "\\left" for o, _ in pairs} | {c: "\\right" for _, c in pairs}
        return "".join(marks.get(i, "") + ch for i, ch in enumerate(ref))
    if kind == "cdot":
        out = re.sub(r"(\d)\s*(\\sqrt|\\pi|[a-zA-Z](?![a-zA-Z]))", r"\1 \\cdot \2", ref, count=1)
        return out if out != ref else None
    if kind == "degrees":
        m = re.search(r"\^\s*\{?\\circ\}?", ref)
        if not m:
            return None
        other = [x for x in ("°", "^{\\circ}", "^\\circ", "\\,^{\\circ}") if x != m.group().replace(" ", "")]
        return ref[: m.start()] + rng.choice(other) + ref[m.end() :]
    raise ValueError(f"unknown correct form {kind!r}: use one of {CORRECT}")


def _top_level_sum(s: str) -> bool:
    """Whether a LaTeX expression has a + or - outside all brackets and braces after its first character."""
    return any(i > 0 and ch in "+-" and s[i - 1] not in "^_" for i, ch in top_level(s))


def _equation_side(ref: str) -> tuple[str, str]:
    """(the left side with its '=', or '', the side an answer's value is on) of a reference."""
    if ref.count("=") == 1:
        head, _, side = ref.partition("=")
        return f"{head}=", side.strip()
    return "", ref.strip()


def _whole_frac(s: str) -> tuple[str, str, str] | None:
    """(sign, numerator, denominator) when s is one \\frac{..}{..} (nested braces allowed), else None."""
    m = re.match(r"(-?)\s*\\frac\s*\{", s)
    if not m:
        return None
    parts, i = [], m.end() - 1
    for _ in range(2):
        if i >= len(s) or s[i] != "{":
            return None
        depth, j = 0, i
        while j < len(s):
            depth += 1 if s[j] == "{" else -1 if s[j] == "}" else 0
            if depth == 0:
                break
            j += 1
        if j == len(s):
            return None
        parts.append(s[i + 1 : j].strip())
        i = j + 1
        while i < len(s) and s[i] == " ":
            i += 1
    return (m.group(1), *parts) if i == len(s) else None


def text_negated(ref: str) -> str | None:
    """The reference negated in its own text (an equation: its right side): '-\\frac{8}{7}' -> '\\frac{8}{7}',
    'x^2' -> '-x^2', 'a+b' -> '-\\left(a+b\\right)'; None for a list (a top-level comma) or zero."""
    if top_level_items(ref) != [ref.strip()]:
        return None
    head, side = _equation_side(ref)
    if not side or re.fullmatch(r"-?0(\.0*)?", side):  # -0 is 0
        return None
    if side.startswith("-") and not _top_level_sum(side[1:].strip()):
        return head + side[1:].strip()
    if not _top_level_sum(side):
        return f"{head}-{side}"
    return f"{head}-\\left({side}\\right)"


def text_reciprocal(ref: str) -> str | None:
    """1 / the reference in its own text (an equation: its right side): '\\frac{a}{b}' -> '\\frac{b}{a}' (its sign
    kept; '\\frac{1}{d}' -> 'd'), else '\\frac{1}{ref}'; None for a list."""
    if top_level_items(ref) != [ref.strip()]:
        return None
    head, side = _equation_side(ref)
    if not side:
        return None
    frac = _whole_frac(side)
    if frac:
        sign, num, den = frac
        if num == "1":  # 1/(1/d) = d
            return head + (text_negated(den) if sign else den)
        return f"{head}{sign}\\frac{{{den}}}{{{num}}}"
    sign, body = ("-", side[1:].strip()) if side.startswith("-") else ("", side)
    if _top_level_sum(body):
        sign, body = "", side
    return f"{head}{sign}\\frac{{1}}{{{body}}}"


_NOT_A_SUM = re.compile(r"[<>;:=]|\\(le|ge|leq|geq|leqslant|geqslant|neq|ne|approx|quad|qquad|pm|mp|text)\b")


def text_terms(side: str) -> list[str]:
    """The terms of a sum at the top level as written, each with its sign and spacing ('x^{2}-4 x+1' -> ['x^{2}',
    '-4 x', '+1']): a + or - outside brackets and braces that follows an operand (not an operator, a relation, an
    opening bracket or a command such as \\times)."""
    terms, start = [], 0
    for i, ch in top_level(side):
        if ch not in "+-" or i == 0:
            continue
        before = side[:i].rstrip()
        if before and (before[-1].isalnum() or before[-1] in ")]}.!'") and not re.search(r"\\[A-Za-z]+$", before):
            terms.append(side[start:i])
            start = i
    return [t for t in (*terms, side[start:]) if t.strip()]


def text_dropped(ref: str, rng: random.Random) -> str | None:
    """The reference (an equation: its right side) in its own text without one term of its top-level sum, or None
    where it is no plain sum of two or more terms (relations, several equations, absolute values, a lone operator)."""
    if top_level_items(ref) != [ref.strip()]:
        return None
    head, side = _equation_side(ref)
    if "|" in side or _NOT_A_SUM.search(side):  # |x-2|: bars are no brackets to this split
        return None
    terms = text_terms(side)
    if len(terms) < 2 or any(t.strip() in "+-" for t in terms):
        return None
    terms.pop(rng.randrange(len(terms)))
    out = "".join(terms).strip()
    return head + (out[1:].lstrip() if out.startswith("+") else out)


def near_decimal(value, rng: random.Random) -> str | None:
    """A rational value with a terminating decimal, moved by one unit in its last decimal place and written as
    correct_form writes decimals (no leading or trailing zeros); None where it has no such decimal, or the moved
    value is zero or whole."""
    import sympy

    dec = correct_form("decimal", "", value, rng)
    if dec is None or "e" in dec or "." not in dec:
        return None
    step = sympy.Rational(1, 10 ** len(dec.split(".")[1]))
    for moved in (value + step, value - step) if rng.random() < 0.5 else (value - step, value + step):
        if moved != 0 and not moved.is_integer:
            return correct_form("decimal", "", moved, rng)
    return None


def wrong_form(kind: str, ref: str, value, rng: random.Random, style: str = "cas") -> str | None:
    """A wrong answer of kind `kind` (WRONG, but last_sentence: see completion) made from the reference, or None;
    style "text": the sign flip, the reciprocal and a sum's dropped term in the reference's own text, the near value
    as a decimal where the value has one (module docstring), else the CAS's."""
    import sympy

    scalar = value is not None and isinstance(value, sympy.Expr) and not isinstance(value, sympy.Tuple)
    # a sum's term dropped from the text, where the CAS's form drops one from a sum (a product's factor: the CAS's)
    if style == "text" and kind == "dropped":
        rhs = value.rhs if isinstance(value, sympy.Equality) else value if scalar else None
        if isinstance(rhs, sympy.Add) and (text := text_dropped(ref, rng)) is not None:
            return text
    # a value with a terminating decimal: the near value as a decimal (a decimal is otherwise nearly always right)
    if style == "text" and kind == "near" and (dec := near_decimal(value, rng)) is not None:
        return dec
    if style == "text" and kind in ("sign", "reciprocal"):  # where the CAS's form applies, written otherwise
        if kind == "reciprocal":
            return text_reciprocal(ref) if scalar and value != 0 and value.is_number else None
        if isinstance(value, sympy.Equality):
            ok = isinstance(value.rhs, sympy.Expr) and not value.rhs.is_zero
        else:
            ok = scalar and value != 0
        return text_negated(ref) if ok else None
    if kind == "near":
        nums = list(re.finditer(r"\d+", ref))
        if not nums:
            return None
        m = rng.choice(nums)
        n = int(m.group()) + rng.choice([1, -1])
        return ref[: m.start()] + str(n if n >= 0 else n + 2) + ref[m.end() :]
    if kind == "reciprocal":
        return _sympy_latex(sympy.simplify(1 / value)) if scalar and value != 0 and value.is_number else None
    if kind == "sign":
        if isinstance(value, sympy.Equality):
            ok = isinstance(value.rhs, sympy.Expr) and not value.rhs.is_zero
            return _sympy_latex(sympy.Eq(value.lhs, -value.rhs, evaluate=False)) if ok else None
        return _sympy_latex(-value) if scalar and value != 0 else None
    if kind == "dropped":
        if isinstance(value, sympy.Equality) and isinstance(value.rhs, sympy.Expr):
            rhs = value.rhs
            if isinstance(rhs, (sympy.Add, sympy.Mul)) and len(rhs.args) >= 2:
                args = list(rhs.args)
                args.pop(rng.randrange(len(args)))
                return _sympy_latex(sympy.Eq(value.lhs, rhs.func(*args), evaluate=False))
            return None
        if scalar and isinstance(value, (sympy.Add, sympy.Mul)) and len(value.args) >= 2:
            args = list(value.args)
            args.pop(rng.randrange(len(args)))
            return _sympy_latex(value.func(*args))
        return None
    if kind == "bracket":
        if not isinstance(value, (sympy.Interval, sympy.Union)):
            return None
        ends = [i for i in outer_brackets(ref) if "infty" not in ref[max(0, i - 8) : i + 9]]  # oo stays open
        if not ends:
            return None
        i = rng.choice(ends)
        return ref[:i] + {"(": "[", "[": "(", ")": "]", "]": ")"}[ref[i]] + ref[i + 1 :]
    if kind == "partial":
        items = top_level_items(ref)
        return rng.choice(items) if len(items) >= 2 else None
    raise ValueError(f"unknown wrong form {kind!r}: use one of {WRONG}")


LEADS = (
    "We work through the problem step by step.",
    "Applying the standard method and simplifying,",
    "Let us set up the computation carefully.",
    "Solving and simplifying the result,",
)


def completion(answer: str, question: str, rng: random.Random, reference: str | None = None) -> str:
    """A short solution-shaped completion whose final answer is `answer` (boxed or stated); with `reference`, the
    last-sentence trap: the final answer followed by the reference in a negation or an aside."""
    spans = re.findall(r"\$([^$]{1,80})\$", question)
    lead = rng.choice(LEADS)
    if spans and rng.random() < 0.5:
        lead = f"Starting from ${rng.choice(spans).strip()}$ and simplifying step by step,"
    if reference is not None:
        tail = rng.choice(
            [
                f"the answer is $\\boxed{{{answer}}}$, not ${reference}$.",
                f"the final answer is $\\boxed{{{answer}}}$ (a common slip gives ${reference}$).",
                f"we get $\\boxed{{{answer}}}$; note that ${reference}$ would be wrong here.",
            ]
        )
        return f"{lead}\n{tail[0].upper()}{tail[1:]}" if lead.endswith(".") else f"{lead} {tail}"
    body = rng.choice(
        [
            f"the answer is $\\boxed{{{answer}}}$.",
            f"we obtain ${answer}$.\nThe final answer is $\\boxed{{{answer}}}$.",
            f"the result is ${answer}$.\nThe answer is ${answer}$.",
            f"\\boxed{{{answer}}}",
        ]
    )
    return f"{lead}\n{body[0].upper()}{body[1:]}" if lead.endswith(".") else f"{lead} {body}"


def cas_key(form: str, ref: str) -> str:
    """The record's key of the CAS check form == ref."""
    return json.dumps([form, ref])


def cas_says(
    form: str,
    ref: str,
    timeout: float = verify.DEFAULT_TIMEOUT,
    cache: dict | None = None,
    retry_timeouts: bool = False,
) -> bool | None:
    """The CAS's verdict on form == reference: True, False, or None when it cannot read the form (it does not
    even equal itself) or gives no verdict in time. `cache` ({key: verdict}) is the build's record: every outcome is
    kept, a timeout included (as TIMED_OUT), so a rebuild from it asks the CAS nothing and a faster or slower machine
    makes the same rows; retry_timeouts asks the recorded timeouts again."""
    key = cas_key(form, ref)
    if cache is not None and key in cache and not (retry_timeouts and cache[key] == TIMED_OUT):
        return None if cache[key] == TIMED_OUT else cache[key]
    verdict = verify.answers_verdict(form, ref, timeout)
    settled = verdict is not None
    if verdict is False:  # different, or unreadable: a form that does not equal itself
        itself = verify.answers_verdict(form, form, timeout)
        settled = itself is not None
        verdict = False if itself else None
    outcome = verdict if settled else TIMED_OUT
    if cache is not None and (key not in cache or cache[key] != outcome):  # (a retry timing out again: no new line)
        cache[key] = outcome
    return verdict


def rules_say(completions: list[str], ref: str, timeout: float, cache: dict | None = None) -> list[dict]:
    """The rules' verdicts on each completion against the reference: {"strict", "lenient", "math_verify" (raw, as
    TRL's accuracy_reward)}; `cache` as in cas_says (a check that times out counts as a rejection, and is recorded).
    The record keeps the verdicts of the rules as they were when it was made: after a change of the rules, drop its
    "rules" entries (or start a new record) to see the new rules' view."""
    from cooper_rl.rm.evaluate import math_verify_scores

    keys = [json.dumps(["rules", c, ref]) for c in completions]
    ask = [i for i, k in enumerate(keys) if cache is None or k not in cache]
    if ask:
        comps, refs = [completions[i] for i in ask], [ref] * len(ask)
        strict = verify.verify_batch(comps, refs, mode="strict", timeout=timeout)
        lenient = verify.verify_batch(comps, refs, mode="lenient", timeout=timeout)
        raw_mv = math_verify_scores(comps, refs)
        asked = {
            keys[i]: {"strict": bool(s), "lenient": bool(lv), "math_verify": bool(m)}
            for i, s, lv, m in zip(ask, strict, lenient, raw_mv)
        }
        if cache is None:
            return [asked[k] for k in keys]
        for k, v in asked.items():
            cache[k] = v
    return [cache[k] for k in keys]


def make_forms(
    ref: str,
    question: str,
    kinds: tuple[str, ...],
    rng: random.Random,
    timeout: float,
    cache: dict | None = None,
    one_per_label: bool = False,
    retry_timeouts: bool = False,
    style: str = "cas",
) -> tuple[list, dict]:
    """([(category, completion, label)], {category: why not made}) for one reference and the categories `kinds`
    (style: of the sign flip, the reciprocal and the dropped term, see wrong_form);
    every form is checked by the CAS (module docstring; `cache`: see cas_says). one_per_label: the first correct and
    the first wrong form (in `kinds` order) the CAS confirms, the later kinds of a label not tried (CAS checks of
    long LaTeX answers take seconds). A form the CAS gives no verdict on in time is not made (why: cas_timeout with
    a cache, else cas_rejected)."""
    value = reference_value(ref, timeout, cache, retry_timeouts)
    made, why = [], {}
    for cat in kinds:
        group, kind = cat.split(":", 1)
        label = int(group == "latex")
        if one_per_label and any(m[2] == label for m in made):
            continue
        last = kind == "last_sentence"
        if label:
            form = correct_form(kind, ref, value, rng)
        elif last:  # the first wrong form that applies, in random order
            tries = rng.sample(["near", "sign", "dropped", "partial"], 4)
            form = next((f for f in (wrong_form(k, ref, value, rng, style) for k in tries) if f is not None), None)
        else:
            form = wrong_form(kind, ref, value, rng, style)
        if form is None or form.strip() == "":
            timed_out = value is None and cache is not None and cache.get(parsed_key(ref)) == TIMED_OUT
            why[cat] = "reference_timeout" if timed_out else "not_applicable"
            continue
        if kind != "as_given" and form.replace(" ", "") == ref.replace(" ", ""):
            why[cat] = "not_applicable"  # the reference itself, not another form of it
            continue
        verdict = cas_says(form, ref, timeout, cache, retry_timeouts)
        if cache is not None and cache.get(cas_key(form, ref)) == TIMED_OUT:
            why[cat] = "cas_timeout"
            continue
        if verdict is None or verdict != bool(label):
            why[cat] = "cas_rejected"  # the CAS cannot read it, or says the opposite of its construction
            continue
        made.append((cat, completion(form, question, rng, reference=ref if last else None), label))
    return made, why


class _Record(dict):
    """A verdict cache that lists what was written to it since its last save (`written`)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.written: list[tuple[str, object]] = []

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self.written.append((key, value))


def row_categories(names, where: str) -> tuple[str, ...]:
    """The categories a problem row names in its field 'categories' (a non-empty list of CATEGORIES), in
    CATEGORIES order; anything else is a DataError naming `where`."""
    from cooper_rl.io import DataError

    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise DataError(f"{where}: field 'categories' must be a non-empty list of category names")
    unknown = sorted(set(names) - set(CATEGORIES))
    if unknown:
        raise DataError(f"{where}: field 'categories': unknown {unknown}; use some of {list(CATEGORIES)}")
    return tuple(c for c in CATEGORIES if c in names)


def latex_split_of(question: str, heldout_percent: int) -> str:
    """'heldout' or 'train' for a problem, from a stable hash of its normalised question."""
    h = int(hashlib.sha256(" ".join(question.lower().split()).encode()).hexdigest()[:8], 16)
    return "heldout" if h % 100 < heldout_percent else "train"


def latex_rows(
    paths: list[str],
    split: str,
    heldout_percent: int,
    mode: str,
    seed: int,
    timeout: float,
    cache_path: Path,
    every_form: bool = False,
    retry_timeouts: bool = False,
    trap_style: str = "cas",
    ambiguous: str = "skip",
) -> tuple[list[dict], Counter, Counter]:
    """`cooper rm-data` rows of the latex categories from problem files with LaTeX answers (question, answer): in
    mode train one correct and one wrong form per problem (every_form: every form that applies, as in suite), in
    suite every form that applies; each row carries the rules' verdicts (rules_say) and whether they disagree. The
    CAS's and the rules' verdicts are recorded in cache_path (a killed run resumes; a rebuild from the record asks
    nothing, see cas_says; retry_timeouts: ask the recorded timeouts again). trap_style: "cas", or "mixed" (the traps
    of a random half of the problems written otherwise; module docstring; a row of a mixed build names its problem's
    style in `trap_style`). ambiguous: "skip" leaves out problems whose reference the CAS misreads
    (misread_reference; counted as skipped), "keep" makes their forms anyway (rounds 4-6 of issue 69 were built
    so). A problem row may name the categories to make for it (field 'categories'; then in train
    mode every one of them that applies). Also a Counter of forms not made by (category, reason) and of problems
    skipped by reason."""
    from cooper_rl.data import read_records
    from cooper_rl.io import DataError, append_jsonl, drop_cut_tail, iter_jsonl

    if split not in ("train", "heldout", "all"):
        raise ValueError(f"latex_split must be train, heldout or all, got {split!r}")
    if trap_style not in ("cas", "mixed"):
        raise ValueError(f"trap_style must be cas or mixed, got {trap_style!r}")
    if ambiguous not in ("skip", "keep"):
        raise ValueError(f"ambiguous must be skip or keep, got {ambiguous!r}")
    if cache_path.is_file():
        drop_cut_tail(cache_path)
    cache = _Record((r["key"], r["verdict"]) for _, r in iter_jsonl(cache_path)) if cache_path.is_file() else _Record()
    rows, not_made, skipped = [], Counter(), Counter()

    def flush():  # the record's new verdicts, appended as each problem is done (a killed run resumes)
        if cache.written:
            append_jsonl(cache_path, [{"key": k, "verdict": v} for k, v in cache.written])
            cache.written.clear()

    for path in paths:
        for i, raw in read_records(Path(path)):
            if isinstance(raw, Exception):
                raise raw
            if not isinstance(raw, dict) or not isinstance(raw.get("question"), str) or "answer" not in raw:
                raise DataError(f"{path}: row {i}: needs a string field 'question' and a field 'answer'")
            if split != "all" and latex_split_of(raw["question"], heldout_percent) != split:
                continue
            ref = clean_reference(str(raw["answer"]))
            if ref is None:
                skipped["not_a_short_answer"] += 1
                continue
            # (skip: the CAS's reading is recorded in the cache; make_forms reads it again)
            if ambiguous == "skip" and (why_ambiguous := misread(ref, timeout, cache, retry_timeouts)):
                skipped[f"ambiguous_reference:{why_ambiguous}"] += 1
                flush()
                continue
            rng = random.Random(f"{seed}:{path}:{i}")  # a problem's rows do not depend on the others
            kinds = CATEGORIES
            one = mode == "train" and not every_form
            if "categories" in raw:  # the problem's own choice of forms (e.g. generated problems aimed at a few)
                kinds, one = row_categories(raw["categories"], f"{path}: row {i}"), False
            elif one:  # a few candidates of each class, then the ones that nearly always apply
                kinds = (*rng.sample(CATEGORIES[: len(CORRECT)], 3), *rng.sample(CATEGORIES[len(CORRECT) :], 3))
                kinds += tuple(c for c in ("latex:as_given", "latex_trap:near", "latex_trap:sign") if c not in kinds)
            style = "cas"
            if trap_style == "mixed":  # its own draw, taking nothing from the forms' rng (a form made in one style
                # and not in the other still shifts the later draws of that problem)
                style = "text" if random.Random(f"{seed}:{path}:{i}:style").random() < 0.5 else "cas"
            made, why = make_forms(ref, raw["question"], kinds, rng, timeout, cache, one, retry_timeouts, style)
            rules = rules_say([text for _, text, _ in made], ref, timeout, cache) if made else []
            flush()
            not_made.update(why.items())
            pid = str(raw.get("id") or raw.get("question_number") or i)
            rows += [
                {
                    "question": raw["question"],
                    "reference": ref,
                    "completion": text,
                    "label": label,
                    "answer_type": cat,
                    "source": path,
                    "problem_id": pid,
                    "sample": 0,
                    "label_source": "construction+cas",
                    "rules": rule,
                    "rules_disagree": len(set(rule.values())) > 1,
                    **({"trap_style": style} if trap_style == "mixed" else {}),
                }
                for (cat, text, label), rule in zip(made, rules)
            ]
    return rows, not_made, skipped

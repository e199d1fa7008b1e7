"""Answer formats: how a worked solution states its final answer.

Solutions in the built-in tasks and GSM8K end in ``#### N``. ``restyle`` rewrites that last line into the
other styles a policy or another model may use, for SFT targets and for reward-model training data.
ANSWER_STYLES are the four a rule verifier is built for; FORMAT_VARIANTS add correct answers written the
ways people and models also write them (currency, units, thousands separators, decimals, a fraction equal to
the answer, number words, a bare final number with no reasoning), which a strict rule often misreads.
"""

from __future__ import annotations

import re
from fractions import Fraction

ANSWER_STYLES = ("hash", "answer_is", "boxed", "plain")
FORMAT_VARIANTS = ("dollar", "units", "thousands", "decimal", "fraction", "words", "bare", "bare_boxed")

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def number_words(n: int) -> str:
    """English words of an integer with |n| < 10**9 ("1234" -> "one thousand two hundred thirty-four")."""
    if n < 0:
        return "minus " + number_words(-n)
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    for size, name in ((10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            if n >= 10**9:
                raise ValueError(f"{n} is too large for number_words")
            head, rest = divmod(n, size)
            return f"{number_words(head)} {name}" + ("" if rest == 0 else " " + number_words(rest))
    raise AssertionError("unreachable")


def parse_number(text: str) -> Fraction | None:
    """A plain number ("1,234", "-3", "2.50") as a Fraction; None if `text` is anything else."""
    t = text.strip().replace(",", "")
    if not re.fullmatch(r"-?\d+(\.\d+)?", t):
        return None
    return Fraction(t)


def format_number(value: Fraction) -> str:
    """A Fraction written the way GSM8K writes answers: integers bare, others as a short decimal."""
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def _variant_line(ans: str, style: str, unit: str | None) -> str | None:
    """The final-answer sentence of a FORMAT_VARIANTS style for answer `ans`; None where the style does not apply."""
    value = parse_number(ans)
    if value is None:
        return None
    integer = value.denominator == 1
    if style == "dollar":
        return f"The answer is ${ans}." if value >= 0 else None
    if style == "units":
        return f"The answer is {ans} {unit}." if unit else None
    if style == "thousands":
        return f"The answer is {int(value):,}." if integer and abs(value) >= 1000 else None
    if style == "decimal":
        return f"The answer is {int(value)}.0." if integer else f"The answer is {ans.replace(',', '')}0."
    if style == "fraction":
        return f"The answer is $\\frac{{{2 * int(value)}}}{{2}}$." if integer else None
    if style == "words":
        return f"The answer is {number_words(int(value))}." if integer and abs(value) < 10**9 else None
    raise ValueError(style)


def question_unit(question: str) -> str | None:
    """The counted noun of a "How many X ..." question (e.g. "apples"), else None."""
    m = re.search(r"\b[Hh]ow many ([a-z]+)", question)
    return m.group(1) if m and m.group(1) not in {"more", "of", "times", "in", "are", "is", "do", "does"} else None


def restyle(solution: str, style: str, drop_calc: bool = False, unit: str | None = None) -> str | None:
    """A solution ending in '#### N' rewritten to end in another answer style (None without a #### line, or
    where the style does not apply to N, e.g. 'thousands' below 1000):
    'hash' (#### N), 'answer_is' (The answer is N.), 'boxed' (\\boxed{N}), 'plain' (no marker; the last
    sentence states N), and the FORMAT_VARIANTS: 'dollar' ($N), 'units' (N apples; needs `unit`), 'thousands'
    (1,234), 'decimal' (12.0), 'fraction' (\\frac{2N}{2}), 'words' (twelve), 'bare' (only "N", no reasoning),
    'bare_boxed' (only "\\boxed{N}"). drop_calc removes GSM8K calculator annotations <<...>>."""
    if "####" not in solution:
        return None
    body, ans = solution.rsplit("####", 1)
    body, ans = body.rstrip(), ans.strip()
    if drop_calc:
        body = re.sub(r"<<[^>]*>>", "", body)
    if style == "hash":
        return f"{body}\n#### {ans}"
    if style == "answer_is":
        return f"{body}\nThe answer is {ans}."
    if style == "boxed":
        return f"{body}\nThe answer is $\\boxed{{{ans}}}$."
    if style == "plain":  # the body already ends on the answer, or one sentence states it
        numbers = re.findall(r"-?\d[\d,]*(?:\.\d+)?", body)
        last = numbers[-1].replace(",", "").rstrip(".") if numbers else None
        return body if last == ans.replace(",", "") else f"{body}\nSo the result is {ans}."
    if style == "bare":
        return ans
    if style == "bare_boxed":
        return f"$\\boxed{{{ans}}}$"
    if style in FORMAT_VARIANTS:
        line = _variant_line(ans, style, unit)
        return None if line is None else f"{body}\n{line}"
    raise ValueError(f"unknown answer style {style!r}: use one of {ANSWER_STYLES + FORMAT_VARIANTS}")

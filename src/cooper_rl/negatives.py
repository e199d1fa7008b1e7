"""Negatives: plausible but wrong solutions made from correct ones.

``corrupt_solution`` is the offline, rule-based generator: it changes the final answer of a correct
solution and, consistently, the intermediate result it comes from (every occurrence of that number
from the line where it is first computed on), so the text stays fluent and of the same length. The
result is accepted only if the rule verifier says its answer differs from the **reference** (not
from the positive's text).
"""

from __future__ import annotations

import random
import re
from fractions import Fraction

from cooper_rl import verify

_NUM = r"(?<![\d.])-?\d+(?:\.\d+)?(?![\d])"


def _parse_int_like(s: str) -> Fraction | None:
    try:
        return Fraction(s.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return None


def wrong_values(reference: str, rng: random.Random, n: int = 6) -> list[str]:
    """Candidate wrong answers near a numeric reference (off by small deltas, doubled, halved...)."""
    ref = _parse_int_like(reference)
    if ref is None:
        return []
    cands = {ref + 1, ref - 1, ref + 2, ref * 2, ref + 10, ref - 10, ref + rng.randint(3, 9)}
    if ref.denominator == 1 and ref % 2 == 0 and ref != 0:
        cands.add(ref / 2)
    cands.discard(ref)
    out = [str(int(c)) if c.denominator == 1 else f"{float(c):g}" for c in cands if c >= 0 or ref < 0]
    rng.shuffle(out)
    return out[:n]


def corrupt_solution(solution: str, reference: str, rng: random.Random | None = None) -> str | None:
    """A wrong version of a correct solution: its final result replaced consistently; None if impossible."""
    rng = rng or random.Random(0)
    answer = verify.extract_answer(solution, "lenient")
    # the number inside the final answer ("\\$1,234", "7 \\text{ apples}", "7 apples" -> 1,234 / 7 / 7)
    m = re.search(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?", answer or "")
    if m is None or _parse_int_like(m.group(0)) is None:
        return None
    target = m.group(0)
    rest = re.sub(r"\\text\{[^}]*\}|\\?\$|\\?%|[A-Za-z]+|\s", "", answer).rstrip(".")
    if rest != target:  # the answer is more than a number with units/currency (e.g. x^2, 3/4): leave it
        return None
    lines = solution.split("\n")
    pattern = re.compile(r"(?<![\d.,])" + re.escape(target).replace(r"\.", r"\.") + r"(?![\d])")
    # first line where the final number appears as a computed result (after '=' or '>>'), else its last line
    start = next((i for i, line in enumerate(lines) if re.search(r"(=|>>)\s*\$?" + re.escape(target) + r"(?![\d])", line)), None)
    if start is None:
        start = max(i for i, line in enumerate(lines) if pattern.search(line)) if any(pattern.search(x) for x in lines) else len(lines) - 1
    for wrong in wrong_values(target.replace(",", ""), rng):
        if "," in target and "." not in wrong:  # keep the thousands separators of the original
            wrong = f"{int(wrong):,}"
        new = lines[:start] + [pattern.sub(wrong, line) for line in lines[start:]]
        text = "\n".join(new)
        if text != solution and verify.extract_answer(text, "lenient") is not None and not verify.verify(text, reference, "lenient"):
            return text
    return None


ANSWER_STYLES = ("hash", "answer_is", "boxed", "plain")


def restyle(solution: str, style: str, drop_calc: bool = False) -> str | None:
    """A solution ending in '#### N' rewritten to end in another answer style (None without a #### line):
    'hash' (#### N), 'answer_is' (The answer is N.), 'boxed' (\\boxed{N}), 'plain' (no marker; the last
    sentence states N). drop_calc removes GSM8K calculator annotations <<...>>."""
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
    if style == "plain":
        return body if ans in body[-40:] else f"{body}\nSo the result is {ans}."
    raise ValueError(f"unknown answer style {style!r}: use one of {ANSWER_STYLES}")


def verification_rows(question: str, reference: str, solution: str, rng: random.Random,
                      wrong_reference_rate: float = 0.5, source: str = "solution") -> list[dict]:
    """Hard-negative RM training rows (collect format, unlabelled) from one correct '#### N' solution:
    the solution in a random answer style (correct), its corruption in the SAME style (wrong answer), and
    with probability wrong_reference_rate the correct text paired with a wrong reference. Style alone can
    never separate the classes: only comparing the final answer with the reference does."""
    style, drop = rng.choice(ANSWER_STYLES), rng.random() < 0.5
    pos = restyle(solution, style, drop)
    if pos is None:
        return []
    rows = [{"question": question, "reference": reference, "completion": pos, "source": f"{source}:{style}"}]
    corrupted = corrupt_solution(solution, reference, rng)
    neg = restyle(corrupted, style, drop) if corrupted is not None else None
    if neg is not None:
        rows.append({"question": question, "reference": reference, "completion": neg, "source": f"{source}-corrupted:{style}"})
    wrong = wrong_values(reference, rng, n=1)
    if wrong and rng.random() < wrong_reference_rate:
        rows.append({"question": question, "reference": wrong[0], "completion": pos, "source": f"{source}-wrongref:{style}"})
    return rows

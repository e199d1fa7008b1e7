"""Answer formats: how a worked solution states its final answer.

Solutions in the built-in tasks and GSM8K end in ``#### N``. ``restyle`` rewrites that last line into the
other styles a policy or another model may use, for SFT targets and for reward-model training data.
"""

from __future__ import annotations

import re

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

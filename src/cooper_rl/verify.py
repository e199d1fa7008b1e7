"""Rule verifier (PROVISIONAL placeholder: the real implementation replaces this file).

Public API (stable contract):
    extract_answer(completion, mode="strict") -> str | None
    is_parseable(answer, timeout=DEFAULT_TIMEOUT) -> bool
    answers_match(pred, gold, timeout=DEFAULT_TIMEOUT) -> bool
    verify(completion, reference, mode="strict", timeout=DEFAULT_TIMEOUT) -> bool
    verify_batch(completions, references, mode="strict", timeout=DEFAULT_TIMEOUT, workers=None) -> list[bool]
"""

from __future__ import annotations

import re

DEFAULT_TIMEOUT = 3.0


def extract_answer(completion: str, mode: str = "strict") -> str | None:
    """Final answer of a completion: last non-empty \\boxed{}, else after ####/"The answer is"; lenient adds last number."""
    m = list(re.finditer(r"\\boxed\{([^{}]*)\}", completion))
    if m and m[-1].group(1).strip():
        return m[-1].group(1).strip()
    m = re.search(r"####\s*(.+?)\s*$", completion)
    if m:
        return m.group(1)
    m = list(re.finditer(r"answer is[:\s]*\$?([^\s$]+)", completion, re.I))
    if m:
        return m[-1].group(1).rstrip(".")
    if mode == "lenient":
        nums = re.findall(r"-?\d[\d,]*(?:\.\d+)?", completion)
        return nums[-1].replace(",", "") if nums else None
    return None


def is_parseable(answer: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """True if `answer` is a value the verifier can compare (a number or a Math-Verify-parseable expression)."""
    return bool(answer and answer.strip())


def answers_match(pred: str, gold: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """True if two extracted answers are mathematically equivalent."""
    return pred.replace(",", "").strip() == gold.replace(",", "").strip()


def verify(completion: str, reference: str, mode: str = "strict", timeout: float = DEFAULT_TIMEOUT) -> bool:
    """True if the completion's final answer equals the reference answer."""
    pred = extract_answer(completion, mode)
    return pred is not None and answers_match(pred, reference, timeout)


def verify_batch(completions, references, mode: str = "strict", timeout: float = DEFAULT_TIMEOUT, workers=None) -> list[bool]:
    """verify() over pairs of completions and references."""
    return [verify(c, r, mode, timeout) for c, r in zip(completions, references, strict=True)]

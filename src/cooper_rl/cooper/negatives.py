"""Negatives: plausible but wrong solutions made from correct ones, and the generators Cooper's step calls.

Generators (``make_negative_generator``), each ``gen(questions, references, positives) -> (negatives, reasons)``:

    corrupt  offline rule-based rewrite (``corrupt_solution``)
    api      an assistant LLM behind an OpenAI-compatible endpoint (``llm.make_chat("openai:...")``)
    local    the same with a local Hugging Face model (``llm.make_chat("hf:...")``)

``corrupt_solution`` is the offline, rule-based generator: it changes the final answer of a correct
solution and, consistently, the intermediate result it comes from (every occurrence of that number
from the line where it is first computed on), so the text stays fluent and of the same length. The
result is accepted only if the rule verifier says its answer differs from the **reference** (not
from the positive's text).
"""

from __future__ import annotations

import logging
import random
import re
from fractions import Fraction

from cooper_rl import verify

log = logging.getLogger(__name__)


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
    pattern = re.compile(r"(?<![\d.,])" + re.escape(target) + r"(?![\d])")
    # first line where the final number appears as a computed result (after '=' or '>>'), else its last line
    start = next(
        (i for i, line in enumerate(lines) if re.search(r"(=|>>)\s*\$?" + re.escape(target) + r"(?![\d])", line)), None
    )
    if start is None:
        start = (
            max(i for i, line in enumerate(lines) if pattern.search(line))
            if any(pattern.search(x) for x in lines)
            else len(lines) - 1
        )
    for wrong in wrong_values(target.replace(",", ""), rng):
        if "," in target and "." not in wrong:  # keep the thousands separators of the original
            wrong = f"{int(wrong):,}"
        new = lines[:start] + [pattern.sub(wrong, line) for line in lines[start:]]
        text = "\n".join(new)
        if (
            text != solution
            and verify.extract_answer(text, "lenient") is not None
            and not verify.verify(text, reference, "lenient")
        ):
            return text
    return None


NEGATIVE_PROMPT = (
    "Below are a math problem and a correct step-by-step solution. Rewrite the solution so that it looks "
    "plausible, keeps the same style and about the same length, but contains a subtle mistake that leads to a "
    "DIFFERENT, wrong final answer. Put the final answer within \\boxed{{}}. Reply with the rewritten solution "
    "only.\n\nProblem:\n{question}\n\nCorrect solution:\n{solution}"
)


def check_negative(text: str | None, reference: str, mode: str = "strict") -> str | None:
    """None if `text` is an acceptable negative (has a final answer that differs from the reference), else why not."""
    if not isinstance(text, str) or not text.strip():
        return "empty"
    if verify.extract_answer(text, mode) is None:
        return "no_answer"
    if verify.verify(text, reference, mode):
        return "still_correct"
    return None


class CorruptNegatives:
    """Offline negatives: negatives.corrupt_solution (changes the final result consistently)."""

    def __init__(self, seed: int = 0, mode: str = "strict"):
        self.rng = random.Random(seed)
        self.mode = mode

    def __call__(self, questions, references, positives) -> tuple[list[str | None], list[str | None]]:
        """(negatives, reasons): negatives[i] is None where reasons[i] says why none was made."""
        negs, reasons = [], []
        for ref, pos in zip(references, positives):
            neg = corrupt_solution(pos, ref, self.rng)
            why = "corrupt_failed" if neg is None else check_negative(neg, ref, self.mode)
            negs.append(None if why else neg)
            reasons.append(why)
        return negs, reasons


class ChatNegatives:
    """Negatives written by an assistant LLM (an llm.OpenAIChat or llm.LocalChat) from NEGATIVE_PROMPT."""

    def __init__(
        self,
        chat,
        temperature: float = 0.7,
        max_tokens: int = 1024,
        mode: str = "strict",
        max_length_ratio: float = 3.0,
    ):
        self.chat = chat
        self.max_length_ratio = max_length_ratio  # a negative must be "similar-length": within this factor
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.mode = mode

    def __call__(self, questions, references, positives) -> tuple[list[str | None], list[str | None]]:
        """(negatives, reasons) as CorruptNegatives; failed requests give the chat backend's failure reason."""
        messages = [
            [{"role": "user", "content": NEGATIVE_PROMPT.format(question=q, solution=p)}]
            for q, p in zip(questions, positives)
        ]
        try:
            results, fails = self.chat.chat_many_detailed(
                messages, temperature=self.temperature, top_p=1.0, max_tokens=self.max_tokens, n=1
            )
        except Exception as e:  # noqa: BLE001 -- the assistant must never stop training
            log.warning("negative generation failed: %s: %s", type(e).__name__, str(e)[:200])
            return [None] * len(messages), ["error"] * len(messages)
        negs, reasons = [], []
        for ref, pos, res, fail in zip(references, positives, results, fails):
            text = res[0] if res else None
            why = (fail or "failed") if res is None else check_negative(text, ref, self.mode)
            if why is None and not (len(pos) / self.max_length_ratio <= len(text) <= len(pos) * self.max_length_ratio):
                why = "length"
            negs.append(None if why else text)
            reasons.append(why)
        return negs, reasons


def make_negative_generator(
    kind: str,
    assistant: str | None = None,
    seed: int = 0,
    concurrency: int = 16,
    timeout: float = 60.0,
    max_retries: int = 1,
    max_tokens: int = 1024,
    temperature: float = 0.7,
):
    """A negative generator by name: 'corrupt', 'api' (assistant = 'openai:MODEL@URL') or 'local' ('hf:NAME')."""
    from cooper_rl.llm import make_chat

    if kind == "corrupt":
        return CorruptNegatives(seed)
    if kind in ("api", "local"):
        if not assistant:
            raise ValueError(
                f"negatives={kind!r} needs an assistant spec (e.g. 'openai:MODEL@http://HOST:PORT/v1' or 'hf:NAME')"
            )
        if (kind == "api") != assistant.startswith("openai:"):
            raise ValueError(
                f"negatives={kind!r} does not match assistant {assistant!r} (api: 'openai:...', local: 'hf:...')"
            )
        chat = make_chat(assistant, concurrency=concurrency, timeout=timeout, max_retries=max_retries)
        return ChatNegatives(chat, temperature=temperature, max_tokens=max_tokens)
    raise ValueError(f"unknown negative generator {kind!r}: use corrupt, api or local")

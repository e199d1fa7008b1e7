"""Negatives: plausible but wrong solutions made from correct ones, and the generators Cooper's step calls.

Generators (``make_negative_generator``), each ``gen(questions, references, positives[, groups=]) ->
(negatives, reasons)``, one negative (or None and the reason) per positive (any callable of that shape works):

    corrupt    offline rule-based rewrite (``corrupt_solution``)  -- the paper's kind, offline
    api        an assistant LLM behind an OpenAI-compatible endpoint (``llm.make_chat("openai:...")``) -- the paper's
    local      the same with a local Hugging Face model (``llm.make_chat("hf:...")``)
    mined      the policy's own rollout of the same prompt that the rule verifier confidently rejects and that the
               RM scores highest now: the exploit the policy is finding (beyond the paper; needs ``groups``)
    truncate   the positive cut before its final answer (``truncate_solution``)
    masterkey  a "master key" reply that fools LLM judges (arXiv 2507.08794): ":", "Solution", "Let's solve ..."
    prefix     ``corrupt_solution`` whose wrong answer is a proper prefix of the reference's digits (2 or 23 for 232):
               the exploit the strong VerifyRM accepted (docs/VERIFYRM.md, prefix probe) and Cooper's policies found
    echo       ``corrupt_solution`` whose wrong answer is a number copied from the question

Kinds compose: ``make_negative_generator("corrupt,mined")`` gives a ``NegativeMix`` that makes one negative of
each kind per positive (so one pair per positive and kind); its reasons are prefixed by the kind.
No negative is ever rule-correct against the reference (strict and lenient), whatever its kind.

``corrupt_solution`` is the offline, rule-based generator: it changes the final answer of a correct
solution and, consistently, the intermediate result it comes from (every occurrence of that number
from the line where it is first computed on), so the text stays fluent and of the same length. The
result is accepted only if the rule verifier says its answer differs from the **reference** (not
from the positive's text).
"""

from __future__ import annotations

import inspect
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


def _plain(x: Fraction) -> str:
    """A value as an answer is written: 12, 2.5."""
    return str(int(x)) if x.denominator == 1 else f"{float(x):g}"


def wrong_values(reference: str, rng: random.Random, n: int = 6) -> list[str]:
    """Candidate wrong answers near a numeric reference (off by small deltas, doubled, halved...)."""
    ref = _parse_int_like(reference)
    if ref is None:
        return []
    cands = {ref + 1, ref - 1, ref + 2, ref * 2, ref + 10, ref - 10, ref + rng.randint(3, 9)}
    if ref.denominator == 1 and ref % 2 == 0 and ref != 0:
        cands.add(ref / 2)
    cands.discard(ref)
    out = [_plain(c) for c in cands if c >= 0 or ref < 0]
    rng.shuffle(out)
    return out[:n]


def prefix_values(target: str, rng: random.Random | None = None, question: str = "") -> list[str]:
    """Proper prefixes of a whole number's digits, longest first ("232" -> ["23", "2"], "-45" -> ["-4"]); none for
    one digit or a non-integer."""
    ref = _parse_int_like(target)
    if ref is None or ref.denominator != 1:
        return []
    sign, digits = "-" if ref < 0 else "", str(abs(int(ref)))
    return [sign + digits[:k] for k in range(len(digits) - 1, 0, -1)]


NUMBER_TEXT = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"  # a number as written: 1,234.5 or 1234.5
NUMBER = re.compile(rf"(?<![\d.,])(?:{NUMBER_TEXT})")  # in a question, not inside a longer number


def echo_values(target: str, rng: random.Random, question: str = "") -> list[str]:
    """The numbers of the question whose value differs from the target's, each once, in random order."""
    ref = _parse_int_like(target)
    seen, out = set(), []
    for m in NUMBER.finditer(question):
        v = _parse_int_like(m.group(0))
        if v is not None and v != ref and v not in seen:
            seen.add(v)
            out.append(_plain(v))
    rng.shuffle(out)
    return out


def _final_result_line(lines: list[str], target: str) -> int | None:
    """Index of the first line where `target` appears as a computed result (after '=' or '>>'), else None."""
    return next(
        (i for i, line in enumerate(lines) if re.search(r"(=|>>)\s*\$?" + re.escape(target) + r"(?![\d])", line)), None
    )


def corrupt_solution(
    solution: str, reference: str, rng: random.Random | None = None, values=None, question: str = ""
) -> str | None:
    """A wrong version of a correct solution: its final result replaced consistently; None if impossible.
    values(target, rng, question) lists the wrong values to try in order (default: wrong_values, near the target;
    prefix_values, echo_values: the `prefix` and `echo` kinds)."""
    rng = rng or random.Random(0)
    answer = verify.extract_answer(solution, "lenient")
    # the number inside the final answer ("\\$1,234", "7 \\text{ apples}", "7 apples" -> 1,234 / 7 / 7)
    m = re.search(rf"-?(?:{NUMBER_TEXT})", answer or "")
    if m is None or _parse_int_like(m.group(0)) is None:
        return None
    target = m.group(0)
    rest = re.sub(r"\\text\{[^}]*\}|\\?\$|\\?%|[A-Za-z]+|\s", "", answer).rstrip(".")
    if rest != target:  # the answer is more than a number with units/currency (e.g. x^2, 3/4): leave it
        return None
    lines = solution.split("\n")
    pattern = re.compile(r"(?<![\d.,])" + re.escape(target) + r"(?![\d])")
    # first line where the final number appears as a computed result (after '=' or '>>'), else its last line
    start = _final_result_line(lines, target)
    if start is None:
        start = (
            max(i for i, line in enumerate(lines) if pattern.search(line))
            if any(pattern.search(x) for x in lines)
            else len(lines) - 1
        )
    plain = target.replace(",", "")
    for wrong in wrong_values(plain, rng) if values is None else values(plain, rng, question):
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
    """Offline negatives: negatives.corrupt_solution (changes the final result consistently); with `values`, to the
    wrong values it lists (prefix_values, echo_values), reasons then named after `name`."""

    def __init__(self, seed: int = 0, mode: str = "strict", values=None, name: str = "corrupt"):
        self.rng = random.Random(seed)
        self.mode, self.values, self.name = mode, values, name

    def __call__(self, questions, references, positives, groups=None) -> tuple[list[str | None], list[str | None]]:
        """(negatives, reasons): negatives[i] is None where reasons[i] says why none was made."""
        negs, reasons = [], []
        for q, ref, pos in zip(questions, references, positives):
            neg = corrupt_solution(pos, ref, self.rng, values=self.values, question=q)
            why = f"{self.name}_failed" if neg is None else check_negative(neg, ref, self.mode)
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

    def __call__(self, questions, references, positives, groups=None) -> tuple[list[str | None], list[str | None]]:
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


def truncate_solution(solution: str, reference: str) -> str | None:
    """The solution cut before its final answer: right after the '=' (or '>>') where the reference's value is first
    computed, else before the line holding the final answer; None if nothing would be left or the cut text is
    still rule-correct (e.g. its last number is the reference)."""
    answer = verify.extract_answer(solution, "lenient")
    ref = _parse_int_like(reference)
    forms = {reference.strip()}
    if ref is not None and ref.denominator == 1:
        forms |= {str(int(ref)), f"{int(ref):,}"}
    pattern = r"(=|>>)\s*\$?(?:" + "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True)) + r")(?![\d])"
    hit = re.search(pattern, solution)
    if hit is not None:
        text = solution[: hit.start(1) + len(hit.group(1))]
        if text.rfind("<<") > text.rfind(">>"):  # inside a GSM8K calculator annotation: cut before it
            text = text[: text.rfind("<<")]
    else:  # the line holding the final answer: the last one that contains it
        lines = solution.rstrip().split("\n")
        start = next((i for i in range(len(lines) - 1, -1, -1) if answer and answer in lines[i]), len(lines) - 1)
        text = "\n".join(lines[:start])
    text = text.rstrip()
    if not text.strip() or check_no_answer(text, reference) is not None:
        return None
    return text


MASTER_KEYS = (  # replies that make LLM judges say "correct" 80-90 % of the time (arXiv 2507.08794, Table 1)
    ":",
    ".",
    "Solution",
    "Thought process:",
    "Let's solve this problem step by step.",
    "Let's solve this step by step.",
)


def check_no_answer(text: str | None, reference: str) -> str | None:
    """None if `text` is an acceptable answer-less negative (not empty, not rule-correct even leniently)."""
    if not isinstance(text, str) or not text.strip():
        return "empty"
    if verify.verify(text, reference, "strict") or verify.verify(text, reference, "lenient"):
        return "still_correct"
    return None


def confidently_wrong(text: str, reference: str, strict_verdict: bool | None = None) -> bool:
    """The rule verifier extracts a final answer (strict) and it is a number that differs from a numeric reference:
    wrong in strict and lenient mode alike, with no symbolic check (or its timeout) involved.
    strict_verdict: the strict verdict if already known (True: not wrong)."""
    if strict_verdict:
        return False
    pred = verify.extract_answer(text, "strict")
    return pred is not None and verify.numbers_differ(pred, reference)


class TruncateNegatives:
    """Offline negatives: the positive cut before its final answer (truncate_solution)."""

    def __call__(self, questions, references, positives, groups=None) -> tuple[list[str | None], list[str | None]]:
        """(negatives, reasons) as CorruptNegatives."""
        negs = [truncate_solution(p, r) for r, p in zip(references, positives)]
        return negs, [None if n is not None else "truncate_failed" for n in negs]


class MasterKeyNegatives:
    """Offline negatives: a master-key reply (MASTER_KEYS, drawn at random), the same for any positive."""

    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def __call__(self, questions, references, positives, groups=None) -> tuple[list[str | None], list[str | None]]:
        """(negatives, reasons) as CorruptNegatives."""
        negs = [self.rng.choice(MASTER_KEYS) for _ in positives]
        reasons = [check_no_answer(n, r) for n, r in zip(negs, references)]
        return [None if why else n for n, why in zip(negs, reasons)], reasons


class MinedNegatives:
    """Negatives mined from the policy's own rollouts: for each positive, among the other rollouts of its prompt
    (``groups[i]``: list of (completion, RM score before this step's update, strict verdict)), the one the RM
    scores highest of those the rule verifier CONFIDENTLY rejects (confidently_wrong); distinct per prompt while
    candidates last. Only numeric answers that differ from a numeric reference count as confidently wrong, so no
    symbolic check (nor its timeout) decides what is mined.

    Rollouts with no extractable final answer are never mined: the strict rule cannot read a correct answer
    given as a bare number or in words (docs/VERIFYRM.md: 0 % on those formats), so calling them wrong would
    teach the RM the rule's blind spots; answer-less texts are covered by `truncate` and `masterkey`, which are
    wrong by construction."""

    def __call__(self, questions, references, positives, groups=None) -> tuple[list[str | None], list[str | None]]:
        """(negatives, reasons); reason 'no_candidate' where the prompt has no confidently wrong rollout."""
        if groups is None:
            raise ValueError("mined negatives need the prompt's rollouts and RM scores (groups=)")
        used: dict[tuple[str, str], set[str]] = {}
        wrong: dict[tuple[str, str], bool] = {}  # (completion, reference) -> confidently wrong, checked once
        negs, reasons = [], []
        for q, ref, group in zip(questions, references, groups):
            taken = used.setdefault((q, ref), set())
            ok = []
            for c, s, v in group:
                if (c, ref) not in wrong:
                    wrong[c, ref] = confidently_wrong(c, ref, v)
                if wrong[c, ref]:
                    ok.append((s, c))
            cands = sorted(((s, c) for s, c in ok if c not in taken), key=lambda x: -x[0])
            if not cands:  # reuse one already paired with another positive of this prompt, if any
                cands = sorted(((s, c) for s, c in ok if c in taken), key=lambda x: -x[0])
            if cands:
                taken.add(cands[0][1])
            negs.append(cands[0][1] if cands else None)
            reasons.append(None if cands else "no_candidate")
        return negs, reasons


def call_generator(gen, questions, references, positives, groups=None):
    """gen(questions, references, positives), with groups= if its signature takes it (plain 3-argument callables
    are generators too)."""
    try:
        takes = "groups" in inspect.signature(gen).parameters
    except (TypeError, ValueError):
        takes = False
    return gen(questions, references, positives, groups=groups) if takes else gen(questions, references, positives)


class NegativeMix:
    """Several kinds at once: one negative of each kind per positive, kind-major order (all positives' first kind,
    then the second...); reasons are prefixed 'kind:'. `kinds` lists the kinds, `members` their generators."""

    def __init__(self, members: dict):
        self.kinds, self.members = list(members), list(members.values())

    def __call__(self, questions, references, positives, groups=None) -> tuple[list[str | None], list[str | None]]:
        """(negatives, reasons), len(kinds) x len(positives) long."""
        negs, reasons = [], []
        for kind, gen in zip(self.kinds, self.members):
            n, why = call_generator(gen, questions, references, positives, groups)
            negs += n
            reasons += [f"{kind}:{w}" if w else None for w in why]
        return negs, reasons


NEGATIVE_KINDS = ("corrupt", "api", "local", "mined", "truncate", "masterkey", "prefix", "echo")


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
    """A negative generator by name: 'corrupt', 'api' (assistant = 'openai:MODEL@URL'), 'local' ('hf:NAME'),
    'mined', 'truncate', 'masterkey', 'prefix', 'echo', or several joined by commas ('corrupt,mined': a
    NegativeMix)."""
    from cooper_rl.llm import make_chat

    kinds = [k.strip() for k in kind.split(",") if k.strip()]
    if len(kinds) > 1:
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"negatives {kind!r} names a kind twice")
        opts = dict(assistant=assistant, concurrency=concurrency, timeout=timeout, max_retries=max_retries)
        opts |= dict(max_tokens=max_tokens, temperature=temperature)
        return NegativeMix({k: make_negative_generator(k, seed=seed + i, **opts) for i, k in enumerate(kinds)})
    kind = kinds[0] if kinds else kind
    if kind == "mined":
        return MinedNegatives()
    if kind == "truncate":
        return TruncateNegatives()
    if kind == "masterkey":
        return MasterKeyNegatives(seed)
    if kind == "corrupt":
        return CorruptNegatives(seed)
    if kind == "prefix":
        return CorruptNegatives(seed, values=prefix_values, name="prefix")
    if kind == "echo":
        return CorruptNegatives(seed, values=echo_values, name="echo")
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
    raise ValueError(f"unknown negative generator {kind!r}: use {', '.join(NEGATIVE_KINDS)} or a comma-separated mix")

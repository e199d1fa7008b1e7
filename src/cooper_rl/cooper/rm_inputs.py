"""The VerifyRM's input: its template

    <question>{q}</question>
    <reference_answer>{a}</reference_answer>
    <completion>{c}</completion>

and encode_rm_inputs, the one builder of its token ids, used for training, scoring and RL updates alike, so all three
see the same ids. Truncation is done in tokens; see encode_rm_inputs for the rule.
"""

from __future__ import annotations

TEMPLATE_VERSION = "cooper-rm-v1"  # saved with every RM; an RM of another version is refused at load
TRUNCATION_MARKER = " ... "
COMPLETION_HEAD_FRACTION = 1 / 3  # a cut completion keeps 1/3 head, 2/3 tail (the final answer is at the end)

_Q_OPEN, _Q_CLOSE_REF_OPEN = "<question>", "</question>\n<reference_answer>"
_REF_CLOSE_C_OPEN, _C_CLOSE = "</reference_answer>\n<completion>", "</completion>"


def format_rm_text(question: str, reference: str, completion: str) -> str:
    """The reward model's input text for one (question, reference answer, completion) triple."""
    return f"{_Q_OPEN}{question}{_Q_CLOSE_REF_OPEN}{reference}{_REF_CLOSE_C_OPEN}{completion}{_C_CLOSE}"


def special_tokens(tokenizer) -> tuple[list[int], list[int]]:
    """(head, tail) special-token ids the tokenizer wraps around one sequence, e.g. ([CLS], [SEP]) for BERT.

    Found by encoding a probe text with and without special tokens (works for fast tokenizers, which in
    transformers 5 have no build_inputs_with_special_tokens).
    """
    probe = "hello world"
    plain = tokenizer(probe, add_special_tokens=False)["input_ids"]
    full = tokenizer(probe, add_special_tokens=True)["input_ids"]
    for i in range(len(full) - len(plain) + 1):
        if full[i : i + len(plain)] == plain:
            return full[:i], full[i + len(plain) :]
    raise ValueError(f"cannot locate special tokens of {type(tokenizer).__name__}: {plain} not inside {full}")


def _shorten(ids: list[int], n: int, head_fraction: float, marker: list[int]) -> list[int]:
    """ids cut to at most n tokens: head + marker + tail (only the tail if n leaves no room for the marker)."""
    if len(ids) <= n:
        return ids
    if n <= len(marker) + 1:
        return ids[len(ids) - n :] if n > 0 else []
    keep = n - len(marker)
    head = int(keep * head_fraction)
    return ids[:head] + marker + ids[len(ids) - (keep - head) :]


def encode_rm_inputs(tokenizer, questions, references, completions, max_length: int) -> list[list[int]]:
    """Token ids (special tokens included) of format_rm_text for each triple, each at most max_length long.

    The tag strings, question, reference and completion are tokenized separately and concatenated, so
    truncation happens in tokens. When the whole text does not fit:
      1. the reference is kept whole (it is cut in the middle only if it alone exceeds the budget);
      2. of the room left, the completion is guaranteed min(its length, half of it);
      3. the question takes what it needs of the rest, else it is cut in the middle;
      4. the completion gets everything still free; if cut, it keeps 1/3 head and 2/3 tail (the final
         answer is at the end) with TRUNCATION_MARKER in between.
    """
    questions, references, completions = list(questions), list(references), list(completions)
    if not len(questions) == len(references) == len(completions):
        raise ValueError(
            f"got {len(questions)} questions, {len(references)} references, {len(completions)} completions"
        )
    if not questions:
        return []

    def tok(texts):
        return tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]

    head, tail = special_tokens(tokenizer)
    q_open, q_close, r_close, c_close = tok([_Q_OPEN, _Q_CLOSE_REF_OPEN, _REF_CLOSE_C_OPEN, _C_CLOSE])
    marker = tok([TRUNCATION_MARKER])[0]
    fixed = len(head) + len(tail) + len(q_open) + len(q_close) + len(r_close) + len(c_close)
    budget = max_length - fixed
    if budget < 1:
        raise ValueError(f"max_length={max_length} is too small: the template alone takes {fixed} tokens")

    out = []
    for q, r, c in zip(tok(questions), tok(references), tok(completions)):
        if len(q) + len(r) + len(c) > budget:
            r = _shorten(r, budget, 0.5, marker)
            left = budget - len(r)
            q = _shorten(q, left - min(len(c), left // 2), 0.5, marker)
            c = _shorten(c, left - len(q), COMPLETION_HEAD_FRACTION, marker)
        out.append(head + q_open + q + q_close + r + r_close + c + c_close + tail)
    return out

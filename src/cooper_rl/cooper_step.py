"""The Cooper reward-model step (arXiv 2508.05613, Sec. 3), run once per RL step after the policy's rollouts
have been scored:

  1. positives: for each prompt, a rollout that the rule verifier marks correct against the REFERENCE answer;
  2. negatives: each positive rewritten into a plausible but wrong solution by a generator
       corrupt  offline rule-based rewrite (negatives.corrupt_solution)
       api      an assistant LLM behind an OpenAI-compatible endpoint (llm.make_chat("openai:...")),
       local    the same with a local Hugging Face model (llm.make_chat("hf:...")),
     accepted only if it has a final answer and the verifier says that answer differs from the reference;
  3. one RM update on the pairs:  L = mean over valid pairs of -log sigmoid(s(pos) - s(neg)).

A negative that could not be made (assistant down, slow, garbage, still correct) masks its pair and is
counted by reason; the step never raises because of the assistant.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter

import torch

from cooper_rl import verify
from cooper_rl.negatives import corrupt_solution

log = logging.getLogger(__name__)

NEGATIVE_PROMPT = (
    "Below are a math problem and a correct step-by-step solution. Rewrite the solution so that it looks "
    "plausible, keeps the same style and about the same length, but contains a subtle mistake that leads to a "
    "DIFFERENT, wrong final answer. Put the final answer within \\boxed{{}}. Reply with the rewritten solution "
    "only.\n\nProblem:\n{question}\n\nCorrect solution:\n{solution}"
)


def select_positives(questions, references, completions, verdicts, pairs_per_prompt: int = 1) -> list[int]:
    """Indices of positive rollouts: per prompt (question, reference), up to `pairs_per_prompt` distinct
    completions whose verdict (rule verifier vs the reference) is True, in rollout order."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(zip(questions, references)):
        groups.setdefault(key, []).append(i)
    chosen = []
    for idx in groups.values():
        seen: set[str] = set()
        for i in idx:
            if verdicts[i] and completions[i] not in seen and len(seen) < pairs_per_prompt:
                seen.add(completions[i])
                chosen.append(i)
    return chosen


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

    def __init__(self, chat, temperature: float = 0.7, max_tokens: int = 1024, mode: str = "strict",
                 max_length_ratio: float = 3.0):
        self.chat = chat
        self.max_length_ratio = max_length_ratio  # a negative must be "similar-length": within this factor
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.mode = mode

    def __call__(self, questions, references, positives) -> tuple[list[str | None], list[str | None]]:
        """(negatives, reasons) as CorruptNegatives; failed requests give the chat backend's failure reason."""
        messages = [[{"role": "user", "content": NEGATIVE_PROMPT.format(question=q, solution=p)}]
                    for q, p in zip(questions, positives)]
        try:
            results, fails = self.chat.chat_many_detailed(messages, temperature=self.temperature, top_p=1.0,
                                                          max_tokens=self.max_tokens, n=1)
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


def make_negative_generator(kind: str, assistant: str | None = None, seed: int = 0, concurrency: int = 16,
                            timeout: float = 60.0, max_retries: int = 1, max_tokens: int = 1024,
                            temperature: float = 0.7):
    """A negative generator by name: 'corrupt', 'api' (assistant = 'openai:MODEL@URL') or 'local' ('hf:NAME')."""
    from cooper_rl.llm import make_chat

    if kind == "corrupt":
        return CorruptNegatives(seed)
    if kind in ("api", "local"):
        if not assistant:
            raise ValueError(f"negatives={kind!r} needs an assistant spec (e.g. 'openai:MODEL@http://HOST:PORT/v1' or 'hf:NAME')")
        if (kind == "api") != assistant.startswith("openai:"):
            raise ValueError(f"negatives={kind!r} does not match assistant {assistant!r} (api: 'openai:...', local: 'hf:...')")
        chat = make_chat(assistant, concurrency=concurrency, timeout=timeout, max_retries=max_retries)
        return ChatNegatives(chat, temperature=temperature, max_tokens=max_tokens)
    raise ValueError(f"unknown negative generator {kind!r}: use corrupt, api or local")


def cooper_step(rm, negatives, questions, references, completions, verdicts, pairs_per_prompt: int = 1) -> dict:
    """One reward-model update on (positive, negative) pairs made from this step's rollouts. Returns metrics:
    rm_loss (None if no valid pair), n_pairs, n_valid, valid_rate, positive_rate (prompts with a positive),
    neg_seconds, rm_grad_norm, and invalid/<reason> counts (no_positive counts prompts)."""
    pos = select_positives(questions, references, completions, verdicts, pairs_per_prompt)
    q = [questions[i] for i in pos]
    r = [references[i] for i in pos]
    p = [completions[i] for i in pos]

    t0 = time.perf_counter()
    negs, reasons = negatives(q, r, p) if pos else ([], [])
    neg_seconds = time.perf_counter() - t0

    valid = [n is not None for n in negs]
    with torch.enable_grad():
        out = rm.pairwise_update(q, r, p, [n or "" for n in negs], valid=valid)

    n_prompts = len(set(zip(questions, references)))
    n_with_pos = len({(questions[i], references[i]) for i in pos})
    invalid = Counter(x for x in reasons if x)
    invalid["no_positive"] = n_prompts - n_with_pos
    return {
        "rm_loss": out["rm_loss"],
        "rm_grad_norm": out["grad_norm"],
        "n_pairs": len(pos),
        "n_valid": out["n_valid"],
        "valid_rate": out["n_valid"] / len(pos) if pos else 0.0,
        "positive_rate": n_with_pos / n_prompts if n_prompts else 0.0,
        "neg_seconds": neg_seconds,
        **{f"invalid/{k}": v for k, v in sorted(invalid.items())},
    }

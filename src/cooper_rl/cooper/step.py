"""The Cooper reward-model step (arXiv 2508.05613, Sec. 3), run once per RL step after the policy's rollouts
have been scored:

  1. positives: for each prompt, a rollout that the rule verifier marks correct against the REFERENCE answer;
  2. negatives: each positive rewritten into a plausible but wrong solution by a generator (negatives.py:
     corrupt, api, local), accepted only if it has a final answer and the verifier says that answer
     differs from the reference;
  3. one RM update on the pairs:  L = mean over valid pairs of -log sigmoid(s(pos) - s(neg)).

A negative that could not be made (assistant down, slow, garbage, still correct) masks its pair and is
counted by reason; the step never raises because of the assistant.
"""

from __future__ import annotations

import time
from collections import Counter

import torch


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

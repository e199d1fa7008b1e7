"""The Cooper reward-model step (arXiv 2508.05613, Sec. 3), run once per RL step after the policy's rollouts
have been scored:

  1. positives: for each prompt, a rollout that the rule verifier marks correct against the REFERENCE answer;
  2. negatives: each positive rewritten into a plausible but wrong solution by a generator (negatives.py:
     corrupt, api, local), accepted only if it has a final answer and the verifier says that answer
     differs from the reference; beyond the paper, kinds that compose with these (mined rollouts of the
     same prompt, truncated positives, master-key replies: one pair per positive and kind; with
     pairs_per_prompt > 1 a prompt's positives are used again until it has that many, so a prompt with one
     verified rollout and several wrong ones gets several mined pairs, and a pair made twice counts once);
  3. one RM update on the pairs:  L = mean over valid pairs of -log sigmoid(s(pos) - s(neg)).

Beyond the paper, `solutions` (reference positives): a prompt with no verified rollout takes its worked solution
(in the policy's answer format) as the positive, so the RM keeps being corrected where the policy fails -- with
only rollout positives, Cooper's updates vanish as the policy collapses, and GRPO's group-normalised advantages
push the policy toward whichever wrong answer the RM ranks first in its all-wrong groups (docs/RESULTS.md). Its
`mined` negatives come from all of that prompt's rollouts.

A negative that could not be made (assistant down, slow, garbage, still correct) masks its pair and is
counted by reason; the step never raises because of the assistant.
"""

from __future__ import annotations

import time
from collections import Counter

import torch

from cooper_rl import verify
from cooper_rl.cooper.negatives import call_generator


def prompt_groups(questions, references, indices=None) -> dict[tuple[str, str], list[int]]:
    """{(question, reference): the rollout indices of that prompt, in order}, over `indices` (default: all)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i in range(len(questions)) if indices is None else indices:
        groups.setdefault((questions[i], references[i]), []).append(i)
    return groups


def select_positives(questions, references, completions, verdicts, pairs_per_prompt: int = 1) -> list[int]:
    """Indices of positive rollouts: per prompt (question, reference), up to `pairs_per_prompt` distinct
    completions whose verdict (rule verifier vs the reference) is True, in rollout order."""
    chosen = []
    for idx in prompt_groups(questions, references).values():
        seen: set[str] = set()
        for i in idx:
            if verdicts[i] and completions[i] not in seen and len(seen) < pairs_per_prompt:
                seen.add(completions[i])
                chosen.append(i)
    return chosen


def fill_positives(pos: list[int], questions, references, pairs_per_prompt: int) -> list[int]:
    """`pos` with each prompt's positives repeated in turn until it has `pairs_per_prompt` of them: a prompt with
    one verified rollout and several wrong ones gets several pairs from kinds with several candidates (mined);
    what a kind cannot vary (the same truncation again) is masked as a duplicate by cooper_step."""
    by_prompt = prompt_groups(questions, references, pos)
    return [idx[k % len(idx)] for idx in by_prompt.values() for k in range(max(pairs_per_prompt, len(idx)))]


def reference_positives(questions, references, verdicts, solutions, pairs_per_prompt: int = 1) -> tuple[list[int], int]:
    """(indices of the prompts -- their first rollout, `pairs_per_prompt` times -- that have no verified rollout and
    a worked solution (`solutions[i]`, None where unknown) the strict rule verifier accepts against the reference:
    those prompts take the solution as their positive; the number of prompts whose solution the rule rejected)."""
    chosen, rejected = [], 0
    for (_, ref), idx in prompt_groups(questions, references).items():
        sol = solutions[idx[0]]
        if any(verdicts[i] for i in idx) or not sol:
            continue
        if not verify.verify(sol, ref, "strict"):
            rejected += 1
            continue
        chosen += [idx[0]] * pairs_per_prompt
    return chosen, rejected


def rollout_groups(
    pos, questions, references, completions, scores, verdicts, exclude_self: bool = True
) -> list[list[tuple[str, float, bool]]]:
    """For each positive index: the other rollouts of its prompt (all of them with exclude_self=False: a reference
    positive is none of them) as (completion, RM score, strict rule verdict) -- what `mined` negatives choose from
    (scores: the RM's, before this step's update; None gives 0.0)."""
    scores = scores if scores is not None else [0.0] * len(completions)
    by_prompt = prompt_groups(questions, references)
    return [
        [
            (completions[j], scores[j], bool(verdicts[j]))
            for j in by_prompt[questions[i], references[i]]
            if j != i or not exclude_self
        ]
        for i in pos
    ]


def cooper_step(
    rm,
    negatives,
    questions,
    references,
    completions,
    verdicts,
    pairs_per_prompt: int = 1,
    scores=None,
    solutions=None,
    rehearsal=None,
) -> dict:
    """One reward-model update on (positive, negative) pairs made from this step's rollouts (one pair per positive
    and negative kind; `scores`: the RM's scores of the rollouts, for mined negatives; `solutions`: per rollout its
    prompt's worked solution or None, to use as the positive of prompts without a verified rollout -- beyond the
    paper). Returns metrics: rm_loss (None if no valid pair here), rm_stepped (whether the RM moved), n_pairs, n_valid, valid_rate, positive_rate (prompts
    with a verified rollout), reference_positives (prompts whose positive is their solution), neg_seconds,
    rm_grad_norm, valid/<kind> counts of a mix, and invalid/<reason> counts (no_positive counts prompts); and
    `pairs`, a list of the valid pairs (kind of a mix, positive's source, texts, logits before the update, loss).
    `rehearsal` (cooper/rehearsal.py, beyond the paper): labelled offline rows drawn for this update join its loss
    (rehearsal_loss, rehearsal_accuracy in the metrics)."""
    pos = select_positives(questions, references, completions, verdicts, pairs_per_prompt)
    pos = fill_positives(pos, questions, references, pairs_per_prompt)
    ref, rejected = (
        reference_positives(questions, references, verdicts, solutions, pairs_per_prompt) if solutions else ([], 0)
    )
    q = [questions[i] for i in pos + ref]
    r = [references[i] for i in pos + ref]
    p = [completions[i] for i in pos] + [solutions[i] for i in ref]
    groups = rollout_groups(pos, questions, references, completions, scores, verdicts)
    groups += rollout_groups(ref, questions, references, completions, scores, verdicts, exclude_self=False)
    n_pos = len(p)

    t0 = time.perf_counter()
    negs, reasons = (list(x) for x in call_generator(negatives, q, r, p, groups)) if p else ([], [])
    neg_seconds = time.perf_counter() - t0
    kinds = getattr(negatives, "kinds", None)  # a NegativeMix: one negative per positive and kind, kind-major
    q, r, p = (x * len(kinds) for x in (q, r, p)) if kinds else (q, r, p)
    seen = set()  # a pair a kind made twice (a repeated positive, a negative it could not vary) counts once
    for j, n in enumerate(negs):
        key = (j // n_pos, q[j], r[j], p[j], n)
        if n is not None and key in seen:
            negs[j], reasons[j] = None, (f"{kinds[j // n_pos]}:duplicate" if kinds else "duplicate")
        seen.add(key)

    valid = [n is not None for n in negs]
    replay = rehearsal.sample() if rehearsal is not None and any(valid) else None
    with torch.enable_grad():
        out = rm.pairwise_update(
            q, r, p, [n or "" for n in negs], valid=valid, rehearsal=replay,
            rehearsal_weight=rehearsal.weight if rehearsal is not None else 0.0,
        )  # fmt: skip

    pairs = [  # what the RM learnt from: the record that tells which pairs moved it
        {
            "kind": kinds[j // n_pos] if kinds else None,
            "positive_source": "rollout" if j % n_pos < len(pos) else "reference",
            "question": q[j],
            "reference": r[j],
            "positive": p[j],
            "negative": negs[j],
            "logit_pos": lp,
            "logit_neg": ln,
            "loss": out["pair_losses"][j],
        }
        for j, (lp, ln) in ((j, x) for j, x in enumerate(out["pair_logits"]) if x is not None)
    ]
    n_prompts = len(set(zip(questions, references)))
    n_with_pos = len({(questions[i], references[i]) for i in pos})
    n_ref = len({(questions[i], references[i]) for i in ref})
    invalid = Counter(x for x in reasons if x)
    invalid["no_positive"] = n_prompts - n_with_pos - n_ref
    if rejected:  # prompts whose worked solution the rule verifier did not accept (counted in no_positive too)
        invalid["solution_rejected"] = rejected
    return {
        "rm_loss": out["rm_loss"],
        "rm_grad_norm": out["grad_norm"],
        "rm_stepped": out["stepped"],
        "n_pairs": len(p),
        "n_valid": out["n_valid"],
        "valid_rate": out["n_valid"] / len(p) if p else 0.0,
        "positive_rate": n_with_pos / n_prompts if n_prompts else 0.0,
        **({"reference_positives": n_ref} if solutions is not None else {}),
        "neg_seconds": neg_seconds,
        **{k: out[k] for k in ("rehearsal_loss", "rehearsal_accuracy") if k in out},
        **{f"invalid/{k}": v for k, v in sorted(invalid.items())},
        **({f"valid/{k}": sum(valid[i * n_pos : (i + 1) * n_pos]) for i, k in enumerate(kinds)} if kinds else {}),
        "pairs": pairs,
    }

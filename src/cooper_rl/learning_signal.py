"""How much a GRPO generation batch can teach: the group statistics behind its advantages.

GRPO's advantage of rollout i in a group of G rollouts of one prompt is A_i = (r_i - mean(r)) / std(r) (TRL's
scale_rewards="group"; "batch" divides by the batch's std, "none" does not divide, as Dr. GRPO). A group whose rewards
are all equal has A = 0 for every rollout: it spends generation time and teaches nothing. These metrics say, per
reward call (one generation batch), how much of the batch carries a gradient and where the positive push goes:

    zero_spread_groups        share of groups with no spread in the reward itself (the reward the policy is trained
                              on: the rule's under --reward rule, the RM's under model/cooper; never the rule's
                              where the reward is another one)
    all_wrong_groups          share of groups whose G rollouts the rule verifier all rejects
    all_right_groups          share of groups whose G rollouts the rule verifier all accepts
    informative_groups_per_step  groups with reward spread per optimizer step (the batch is split over
                              steps_per_generation steps)
    pos_adv_to_wrong          share of the positive advantage (sum of max(A_i, 0)) that goes to rollouts the rule
                              rejects: 0 under the rule reward; near 1 when the reward mostly ranks wrong answers
"""

from __future__ import annotations

import math

# TRL adds this to the std before dividing (grpo_trainer.py), and uses torch.isclose(std, 0) for its own
# frac_reward_zero_std: a spread below this is no spread
STD_EPS = 1e-4
ZERO_SPREAD = 1e-8


def _std(xs: list[float]) -> float:
    """Sample standard deviation (Bessel-corrected, as torch.std and TRL's nanstd); 0 for fewer than 2 values."""
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def group_advantages(rewards: list[float], group_size: int, scale_rewards: str = "group") -> list[float]:
    """GRPO advantages of consecutive groups of group_size rewards, as TRL computes them (scale_rewards: group,
    batch or none)."""
    if group_size < 1 or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size}")
    if scale_rewards not in ("group", "batch", "none"):
        raise ValueError(f"scale_rewards must be group, batch or none (got {scale_rewards!r})")
    batch_std = _std(rewards)
    out = []
    for g in range(0, len(rewards), group_size):
        r = rewards[g : g + group_size]
        m = sum(r) / len(r)
        scale = {"group": _std(r) + STD_EPS, "batch": batch_std + STD_EPS, "none": 1.0}[scale_rewards]
        out += [(x - m) / scale for x in r]
    return out


def learning_signal(
    rewards: list[float],
    verdicts: list[bool],
    group_size: int,
    scale_rewards: str = "group",
    steps_per_generation: int = 1,
) -> dict[str, float | None]:
    """The learning-signal metrics (module docstring) of one generation batch: rewards and rule verdicts in TRL's
    order (the G rollouts of a prompt next to each other). Empty dict when the batch does not split into groups
    (e.g. a process's slice of a multi-process batch)."""
    n = len(rewards)
    if n == 0 or group_size < 1 or n % group_size or len(verdicts) != n:
        return {}
    groups = [range(g, g + group_size) for g in range(0, n, group_size)]
    spread = [max(rewards[i] for i in g) - min(rewards[i] for i in g) > ZERO_SPREAD for g in groups]
    adv = group_advantages(rewards, group_size, scale_rewards)
    pos = sum(max(a, 0.0) for a in adv)
    pos_wrong = sum(max(a, 0.0) for a, v in zip(adv, verdicts) if not v)
    return {
        "zero_spread_groups": 1 - sum(spread) / len(groups),
        "all_wrong_groups": sum(not any(verdicts[i] for i in g) for g in groups) / len(groups),
        "all_right_groups": sum(all(verdicts[i] for i in g) for g in groups) / len(groups),
        "informative_groups_per_step": sum(spread) / max(1, steps_per_generation),
        "pos_adv_to_wrong": pos_wrong / pos if pos > 0 else None,
    }

"""Learning-signal metrics of GRPO groups, on hand-made groups (and TRL's own advantage code as the reference)."""

import pytest
import torch

from cooper_rl.learning_signal import group_advantages, learning_signal


def test_zero_spread_all_wrong_and_informative_groups():
    # 4 groups of G=4: all wrong (0 spread), all right (0 spread), one right of four, two right of four
    verdicts = [0, 0, 0, 0] + [1, 1, 1, 1] + [1, 0, 0, 0] + [1, 1, 0, 0]
    rewards = [float(v) for v in verdicts]  # the rule reward
    s = learning_signal(rewards, [bool(v) for v in verdicts], group_size=4, steps_per_generation=2)
    assert s["zero_spread_groups"] == 0.5
    assert s["all_wrong_groups"] == 0.25 and s["all_right_groups"] == 0.25
    assert s["informative_groups_per_step"] == 1.0  # 2 informative groups over 2 optimizer steps
    assert s["pos_adv_to_wrong"] == 0.0  # the rule never pushes a wrong rollout up


def test_an_rm_that_ranks_wrong_answers_pushes_them_up():
    # every rollout rule-wrong; the RM's scores still differ: full-size advantages, all of it to wrong rollouts
    verdicts = [False] * 4
    s = learning_signal([0.01, 0.02, 0.01, 0.03], verdicts, group_size=4)
    assert s["zero_spread_groups"] == 0.0 and s["all_wrong_groups"] == 1.0
    assert s["pos_adv_to_wrong"] == 1.0
    # the spread is the reward's own: equal RM scores on a group the rule splits are no signal
    s = learning_signal([0.5] * 4, [True, False, True, False], group_size=4)
    assert s["zero_spread_groups"] == 1.0 and s["informative_groups_per_step"] == 0.0
    assert s["pos_adv_to_wrong"] is None  # no positive advantage at all


def test_positive_advantage_split_between_right_and_wrong():
    # one group: a right rollout scored 0.9, a wrong one 0.7, two wrong ones 0.1 -> the mean is 0.45
    s = learning_signal([0.9, 0.7, 0.1, 0.1], [True, False, False, False], group_size=4, scale_rewards="none")
    assert s["pos_adv_to_wrong"] == pytest.approx(0.25 / (0.45 + 0.25))


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_advantages_match_trls_formula(scale):
    from trl.trainer.utils import nanstd

    r = torch.tensor([0.1, 0.9, 0.3, 0.2, 1.0, 1.0, 1.0, 0.0])
    mean = r.view(-1, 4).mean(1).repeat_interleave(4)
    std = {"group": nanstd(r.view(-1, 4), dim=1).repeat_interleave(4), "batch": nanstd(r).expand_as(r)}.get(scale)
    want = (r - mean) / (std + 1e-4) if std is not None else r - mean
    assert group_advantages(r.tolist(), 4, scale) == pytest.approx(want.tolist(), abs=1e-5)


def test_a_batch_that_does_not_split_into_groups_has_no_metrics():
    assert learning_signal([1.0, 0.0, 1.0], [True, False, True], group_size=2) == {}
    with pytest.raises(ValueError, match="groups of 2"):
        group_advantages([1.0, 0.0, 1.0], 2)

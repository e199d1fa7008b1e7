"""Reward callables with TRL's signature: values, metrics via log_metric, metrics.jsonl, pre-update RM scores."""

import json
from types import SimpleNamespace

import pytest
import torch

from cooper_rl.cooper.monitor import HackingMonitor
from cooper_rl.cooper.negatives import CorruptNegatives
from cooper_rl.cooper.rewards import CooperReward, ModelReward, RuleReward, completion_texts
from cooper_rl.cooper.step import cooper_step
from tiny import same, tiny_rm, weights

Q = ["What is 3 + 4?"] * 2 + ["What is 2 + 7?"] * 2
REF = ["7", "7", "9", "9"]
TEXTS = ["3 + 4 = 7. The answer is \\boxed{7}.", "The answer is \\boxed{8}.", "2 + 7 = 9, so \\boxed{9}", "nine"]
VERDICTS = [1.0, 0.0, 1.0, 0.0]


def call(reward, completions, step=0):
    """Call a reward the way GRPOTrainer does; returns (rewards, logged metrics)."""
    logged = {}
    state = SimpleNamespace(global_step=step, is_world_process_zero=True)
    out = reward(
        prompts=["p"] * len(completions),
        completions=completions,
        completion_ids=[[1]] * len(completions),  # one token each: cooper/completion_length 1.0
        question=Q,
        reference=REF,
        trainer_state=state,
        log_extra=lambda *a: None,
        log_metric=lambda k, v: logged.__setitem__(k, v),
    )
    return out, logged


@pytest.fixture
def rm(tmp_path):
    return tiny_rm(tmp_path / "rm")


def test_completion_texts_plain_and_conversational():
    conv = [[{"role": "assistant", "content": t}] for t in TEXTS]
    assert completion_texts(TEXTS) == completion_texts(conv) == TEXTS


def test_rule_reward(tmp_path):
    path = tmp_path / "metrics.jsonl"
    reward = RuleReward(metrics_path=path)
    out, logged = call(reward, [[{"role": "assistant", "content": t}] for t in TEXTS], step=4)
    assert out == VERDICTS
    assert logged.pop("cooper/time/verify") >= 0  # phase timing for the profiler
    assert logged == {
        "cooper/rule_accuracy": 0.5,
        "cooper/reward_mean": 0.5,
        "cooper/reward_on_wrong": 0.0,  # the rule pays no wrong answer
        "cooper/completion_length": 1.0,
    }
    row = json.loads(path.read_text())
    assert row["step"] == 5 and row["rule_accuracy"] == 0.5


def test_rewards_log_the_learning_signal_of_their_groups(tmp_path):
    # Q/TEXTS: two groups of G=2, each one right and one wrong: both informative, none all-wrong
    reward = RuleReward(metrics_path=tmp_path / "m.jsonl", group_size=2, steps_per_generation=2)
    _, logged = call(reward, TEXTS)
    assert logged["cooper/signal/zero_spread_groups"] == 0.0
    assert logged["cooper/signal/all_wrong_groups"] == 0.0
    assert logged["cooper/signal/informative_groups_per_step"] == 1.0
    assert logged["cooper/signal/pos_adv_to_wrong"] == 0.0
    assert json.loads((tmp_path / "m.jsonl").read_text())["signal/zero_spread_groups"] == 0.0
    # a model reward's spread is its own: a frozen RM that scores the rule-right rollout of group 1 lower
    _, logged = call(ModelReward(FixedScores([0.2, 0.6, 0.5, 0.5]), group_size=2), TEXTS)
    assert logged["cooper/signal/zero_spread_groups"] == 0.5  # group 2 scored alike, although the rule splits it
    assert logged["cooper/signal/pos_adv_to_wrong"] == 1.0


def test_model_reward_is_frozen_rm_score(rm, tmp_path):
    reward = ModelReward(rm, metrics_path=tmp_path / "m.jsonl", monitor=HackingMonitor(window=2))
    before = weights(rm)
    out, logged = call(reward, TEXTS)
    assert out == pytest.approx(rm.score(Q, REF, TEXTS))
    assert same(before, weights(rm))
    expected = sum((s >= 0.5) == bool(v) for s, v in zip(out, VERDICTS)) / 4
    assert logged["cooper/rm_rule_agreement"] == expected and logged["cooper/rule_accuracy"] == 0.5
    assert logged["cooper/hacking_warning"] == 0.0 and logged["cooper/monitor_ready"] == 0.0  # 1 call < window 2
    assert "rule_accuracy" in json.loads((tmp_path / "m.jsonl").read_text())
    _, logged = call(reward, TEXTS, step=1)
    assert logged["cooper/monitor_ready"] == 1.0


def test_cooper_reward_returns_scores_from_before_its_update(rm, tmp_path):
    reward = CooperReward(rm, CorruptNegatives(0), metrics_path=tmp_path / "m.jsonl")
    rm.configure_optimizer(lr=1e-3)
    pre = rm.score(Q, REF, TEXTS)
    before = weights(rm)
    out, logged = call(reward, TEXTS)
    assert out == pytest.approx(pre)  # the policy sees the RM before this step's update
    assert not same(before, weights(rm))  # ... and the RM was updated after scoring
    assert rm.score(Q, REF, TEXTS) != pytest.approx(pre)
    assert logged["cooper/rm/n_pairs"] == 2 and logged["cooper/rm/n_valid"] == 2
    assert logged["cooper/rule_accuracy"] == 0.5 and "cooper/rm/rm_loss" in logged
    row = json.loads((tmp_path / "m.jsonl").read_text())
    assert row["rm/valid_rate"] == 1.0 and row["rule_accuracy"] == 0.5
    assert torch.is_grad_enabled()


def test_cooper_reward_takes_the_solution_column_for_reference_positives(rm, tmp_path):
    reward = CooperReward(rm, CorruptNegatives(0), reference_positives=True)
    rm.configure_optimizer(lr=1e-3)
    wrong = ["The answer is \\boxed{8}.", "\\boxed{6}", "The answer is \\boxed{10}.", "nine"]  # no prompt verified
    with pytest.raises(ValueError, match="solution"):
        call(reward, wrong)  # the dataset has no solution column
    sols = ["3 + 4 = 7.\nThe answer is $\\boxed{7}$."] * 2 + ["2 + 7 = 9.\nThe answer is $\\boxed{9}$."] * 2
    logged = {}
    state = SimpleNamespace(global_step=0, is_world_process_zero=True)
    reward(
        completions=wrong, question=Q, reference=REF, solution=sols, trainer_state=state, log_metric=logged.__setitem__
    )
    assert logged["cooper/rm/reference_positives"] == 2 and logged["cooper/rm/n_valid"] == 2


class FixedScores:
    """An RM stub whose scores are given: pins the 0.5 threshold of the binary reward."""

    def __init__(self, scores):
        self.scores = scores

    def score(self, questions, references, texts, batch_size=64):
        return list(self.scores)


def test_binary_rm_reward_is_the_rms_verdict_and_logs_the_score(rm, tmp_path):
    out, _ = call(ModelReward(FixedScores([0.2, 0.5, 0.7, 0.4999]), binary=True), TEXTS)
    assert out == [0.0, 1.0, 1.0, 0.0]  # accepted at >= 0.5, as the RM-fooled rate counts it
    pre = rm.score(Q, REF, TEXTS)
    reward = ModelReward(rm, binary=True, rollouts_path=tmp_path / "r.jsonl")
    out, logged = call(reward, TEXTS)
    assert out == [float(s >= 0.5) for s in pre]
    assert logged["cooper/reward_mean"] == sum(out) / 4
    rows = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in rows] == out and [r["rm_score"] for r in rows] == pytest.approx(pre)
    # a continuous reward logs no separate score (it is the reward)
    ModelReward(rm, rollouts_path=tmp_path / "c.jsonl")(completions=TEXTS, question=Q, reference=REF)
    assert "rm_score" not in json.loads((tmp_path / "c.jsonl").read_text().splitlines()[0])


@pytest.mark.parametrize("binary", [False, True])
def test_reward_on_wrong_is_the_reward_paid_to_rule_wrong_rollouts_over_all_rollouts(binary):
    # TEXTS: rollouts 0 and 2 are rule-right, 1 and 3 rule-wrong; whatever the right ones get does not count
    out, logged = call(ModelReward(FixedScores([0.1, 0.9, 0.3, 0.2]), binary=binary), TEXTS)
    assert logged["cooper/reward_on_wrong"] == pytest.approx((out[1] + out[3]) / 4)
    assert logged["cooper/reward_on_wrong"] == pytest.approx(0.25 if binary else 0.275)
    _, logged = call(ModelReward(FixedScores([0.9, 0.1, 0.95, 0.0]), binary=binary), TEXTS)
    assert logged["cooper/reward_on_wrong"] == pytest.approx(0.0 if binary else 0.025)


def test_binary_cooper_reward_binarizes_the_pre_update_scores(rm, tmp_path, monkeypatch):
    import cooper_rl.cooper.rewards as rewards_module

    seen = []  # the scores the Cooper step got (its mined negatives rank by them): the RM's, not the 0/1 rewards

    def recording_step(*args, scores=None, **kwargs):
        seen.append(scores)
        return cooper_step(*args, scores=scores, **kwargs)

    monkeypatch.setattr(rewards_module, "cooper_step", recording_step)
    reward = CooperReward(rm, CorruptNegatives(0), binary=True)
    rm.configure_optimizer(lr=1e-3)
    pre = rm.score(Q, REF, TEXTS)
    out, logged = call(reward, TEXTS)
    assert out == [float(s >= 0.5) for s in pre] and seen[0] == pytest.approx(pre)
    assert logged["cooper/rm/n_valid"] == 2 and rm.score(Q, REF, TEXTS) != pytest.approx(pre)  # the RM still learns


def test_cooper_reward_logs_its_rm_training_pairs_per_step(rm, tmp_path):
    reward = CooperReward(
        rm, CorruptNegatives(0), pairs_path=tmp_path / "pairs.jsonl", metrics_path=tmp_path / "m.jsonl"
    )
    rm.configure_optimizer(lr=1e-3)
    _, logged = call(reward, TEXTS, step=4)
    pairs = [json.loads(x) for x in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    # TEXTS has one verified rollout per prompt: two corrupted pairs, logged with the step of the call
    assert len(pairs) == logged["cooper/rm/n_valid"] == 2 and {p["step"] for p in pairs} == {5}
    assert [p["positive"] for p in pairs] == [TEXTS[0], TEXTS[2]] and all(p["negative"] for p in pairs)
    assert sum(p["loss"] for p in pairs) / 2 == pytest.approx(logged["cooper/rm/rm_loss"], rel=1e-4)
    metrics = json.loads((tmp_path / "m.jsonl").read_text())
    assert "rm/pairs" not in metrics and "cooper/rm/pairs" not in logged  # the pairs are a log of their own
    # without a path nothing is written, and the step is the same
    assert CooperReward(rm, CorruptNegatives(0)).extra_logs() == []

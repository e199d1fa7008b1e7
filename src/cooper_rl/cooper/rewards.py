"""Reward functions for TRL's GRPOTrainer (called as f(prompts=, completions=, completion_ids=, **columns)).

The dataset columns `question` and `reference` arrive as keyword lists (one entry per completion, repeated
over the G rollouts of a prompt); completions are strings for plain-text prompts and [{"role": "assistant",
"content": ...}] for conversational ones.

    RuleReward    r = 1 if the rule verifier (strict) accepts the completion's answer vs the reference, else 0
    ModelReward   r = sigmoid(VerifyRM(question, reference, completion)), RM frozen; binary: r = 1 if that score
                  is >= 0.5, else 0 (the authors' reward_model.reward_scale option)
    CooperReward  ModelReward, then the Cooper RM update (step.py) on this step's rollouts; the rewards
                  returned are the scores computed BEFORE that update (with reference_positives, a dataset
                  column `solution` gives the positive of prompts without a verified rollout)

Every call also computes metrics: rule accuracy of the rollouts (always), mean reward, RM-vs-rule agreement
(RM score >= 0.5 vs verdict), the RM-fooled rate (share of rule-wrong rollouts the RM scores >= 0.5), the hacking monitor's flag and, for Cooper, the RM step's metrics. They go to
TRL's logs through the `log_metric` callback TRL passes to reward functions (averaged over processes and
logging steps, logged as "cooper/<name>"), and, on the main process, one JSON line per call to metrics.jsonl.
With `rollouts_path`, every rollout (question, reference, completion, verdict, reward; with a binary RM reward
also the RM's score) is appended there too: the record to read when the reward and the rule accuracy part ways (what did the hacked outputs look like?).
"""

from __future__ import annotations

import time
from pathlib import Path

from cooper_rl import verify
from cooper_rl.cooper.monitor import CHECKS, HackingMonitor
from cooper_rl.cooper.step import cooper_step
from cooper_rl.io import append_jsonl
from cooper_rl.learning_signal import learning_signal


def completion_texts(completions) -> list[str]:
    """Plain text of each completion (a string, or the last message's content of a conversational one)."""
    return [c if isinstance(c, str) else c[-1]["content"] for c in completions]


class RuleReward:
    """1.0 if the rule verifier accepts the completion's final answer vs the reference, else 0.0."""

    def __init__(
        self,
        metrics_path: str | Path | None = None,
        monitor: HackingMonitor | None = None,
        mode: str = "strict",
        timeout: float = verify.DEFAULT_TIMEOUT,
        rollouts_path: str | Path | None = None,
        group_size: int | None = None,
        scale_rewards: str = "group",
        steps_per_generation: int = 1,
    ):
        """group_size, scale_rewards, steps_per_generation: the GRPO settings behind the learning-signal metrics
        (learning_signal.py; none without group_size)."""
        self.metrics_path = Path(metrics_path) if metrics_path else None
        self.rollouts_path = Path(rollouts_path) if rollouts_path else None
        self.monitor = monitor
        self.mode, self.timeout = mode, timeout
        self.group_size, self.scale_rewards, self.steps_per_generation = group_size, scale_rewards, steps_per_generation
        self.last_metrics: dict = {}

    def rewards(self, questions, references, texts, verdicts, solutions=None) -> tuple[list[float], dict]:
        """(rewards, extra metrics) for verified completions (solutions: the dataset's `solution` column, if any);
        subclasses replace this."""
        return [float(v) for v in verdicts], {}

    def logged_scores(self) -> list[float] | None:
        """Scores to log beside this call's rewards when they differ from them (none for the rule)."""
        return None

    def extra_logs(self) -> list[tuple[Path, list[dict]]]:
        """(path, rows) of this call's further per-step logs (none for the rule); each row gets the step."""
        return []

    def __call__(
        self,
        prompts=None,
        completions=None,
        question=None,
        reference=None,
        log_metric=None,
        trainer_state=None,
        **kwargs,
    ) -> list[float]:
        """TRL reward-function entry point: one float per completion, metrics logged as a side effect."""
        texts = completion_texts(completions)
        t0 = time.perf_counter()
        verdicts = verify.verify_batch(texts, reference, self.mode, self.timeout)
        t_verify = time.perf_counter() - t0
        solutions = kwargs.get("solution")
        rewards, extra = self.rewards(
            list(question), list(reference), texts, verdicts, None if solutions is None else list(solutions)
        )
        metrics = {
            "rule_accuracy": sum(verdicts) / len(verdicts),
            "reward_mean": sum(rewards) / len(rewards),
            # the reward paid to answers the rule rejects (0 under the rule reward): the monitor's wrong_reward
            "reward_on_wrong": sum(w for w, v in zip(rewards, verdicts) if not v) / len(rewards),
            **extra,
            "time/verify": t_verify,
        }
        if self.group_size:  # how much of this generation batch carries a gradient, and where it pushes
            signal = learning_signal(rewards, verdicts, self.group_size, self.scale_rewards, self.steps_per_generation)
            metrics |= {f"signal/{k}": v for k, v in signal.items()}
        main = trainer_state is None or trainer_state.is_world_process_zero
        step = trainer_state.global_step + 1 if trainer_state is not None else None
        ids = kwargs.get("completion_ids")  # TRL passes token ids; plain calls measure characters
        lengths = [len(x) for x in ids] if ids is not None else [len(t) for t in texts]
        metrics["completion_length"] = sum(lengths) / len(lengths)
        if self.monitor is not None:
            flagged = self.monitor.update(
                metrics["reward_mean"],
                metrics["rule_accuracy"],
                fooled=extra.get("rm_fooled_rate"),
                agreement=extra.get("rm_rule_agreement"),
                length=metrics["completion_length"],
                wrong_reward=metrics["reward_on_wrong"],
                step=step,
            )
            metrics["hacking_warning"] = float(flagged)
            metrics["monitor_ready"] = float(self.monitor.ready)
            metrics |= {f"monitor/{c}": float(c in self.monitor.last_flags) for c in CHECKS}
        self.last_metrics = metrics
        if log_metric is not None:
            for k, v in metrics.items():
                if v is not None:
                    log_metric(f"cooper/{k}", float(v))
        if self.metrics_path is not None and main:
            append_jsonl(self.metrics_path, [{"step": step, "time": time.time(), **metrics}])
        if self.rollouts_path is not None and main:
            scores = self.logged_scores()
            append_jsonl(
                self.rollouts_path,
                (
                    {
                        "step": step,
                        "question": q,
                        "reference": r,
                        "completion": c,
                        "verdict": bool(v),
                        "reward": float(w),
                    }
                    | ({"rm_score": float(scores[i])} if scores is not None else {})
                    for i, (q, r, c, v, w) in enumerate(zip(question, reference, texts, verdicts, rewards))
                ),
            )
        if main:
            for path, rows in self.extra_logs():
                append_jsonl(path, ({"step": step, **row} for row in rows))
        return rewards


class ModelReward(RuleReward):
    """sigmoid score of a frozen VerifyRM; logs rule accuracy and RM-vs-rule agreement too."""

    def __init__(self, rm, batch_size: int = 64, binary: bool = False, **kwargs):
        """rm: a VerifyRM; batch_size: sequences per scoring forward; binary: reward 1/0 by score >= 0.5 instead of
        the score; kwargs: those of RuleReward."""
        super().__init__(**kwargs)
        self.rm, self.batch_size, self.binary = rm, batch_size, binary
        self.last_scores: list[float] | None = None

    def reward_of(self, scores: list[float]) -> list[float]:
        """The rewards for RM scores: the scores, or with binary 1.0 where a score is >= 0.5 (the RM accepts) else 0.0."""
        return [float(s >= 0.5) for s in scores] if self.binary else scores

    def logged_scores(self) -> list[float] | None:
        """This call's RM scores where the reward is 0/1 (the RM's view behind it), else None (the reward is the score)."""
        return self.last_scores if self.binary else None

    def rewards(self, questions, references, texts, verdicts, solutions=None) -> tuple[list[float], dict]:
        """Rewards from the RM's scores, with the fraction where (score >= 0.5) equals the rule verdict."""
        scores, extra = self.score(questions, references, texts, verdicts)
        return self.reward_of(scores), extra

    def score(self, questions, references, texts, verdicts) -> tuple[list[float], dict]:
        """RM scores (sigmoid) of the completions, the RM-vs-rule agreement and the RM-fooled rate."""
        t0 = time.perf_counter()
        scores = self.rm.score(questions, references, texts, batch_size=self.batch_size)
        t_score = time.perf_counter() - t0
        agree = sum((s >= 0.5) == v for s, v in zip(scores, verdicts)) / len(scores)
        wrong = [s for s, v in zip(scores, verdicts) if not v]
        fooled = sum(s >= 0.5 for s in wrong) / len(wrong) if wrong else None  # rule-wrong rollouts the RM accepts
        self.last_scores = scores
        return scores, {"rm_rule_agreement": agree, "rm_fooled_rate": fooled, "time/rm_score": t_score}


class CooperReward(ModelReward):
    """ModelReward whose RM is then updated on this step's rollouts (Cooper co-optimization)."""

    def __init__(
        self,
        rm,
        negatives,
        pairs_per_prompt: int = 1,
        reference_positives: bool = False,
        pairs_path: str | Path | None = None,
        rehearsal=None,
        recalibration=None,
        **kwargs,
    ):
        """negatives: a generator of negatives.py; pairs_per_prompt: pairs per prompt; reference_positives: prompts
        without a verified rollout take their worked solution (the `solution` column) as the positive (beyond the
        paper); pairs_path: a jsonl file for every RM training pair (texts, logits, loss); rehearsal: a
        cooper.rehearsal.Rehearsal whose labelled rows join each RM update (beyond the paper); recalibration: a
        cooper.recalibration.Recalibration that raises the RM's threshold after each update (beyond the paper);
        kwargs: those of ModelReward."""
        super().__init__(rm, **kwargs)
        self.negatives, self.pairs_per_prompt = negatives, pairs_per_prompt
        self.reference_positives = reference_positives
        self.pairs_path = Path(pairs_path) if pairs_path else None
        self.rehearsal, self.recalibration = rehearsal, recalibration
        self.last_pairs: list[dict] = []

    def extra_logs(self) -> list[tuple[Path, list[dict]]]:
        """This call's RM training pairs, to pairs_path."""
        return [(self.pairs_path, self.last_pairs)] if self.pairs_path is not None else []

    def rewards(self, questions, references, texts, verdicts, solutions=None) -> tuple[list[float], dict]:
        """Rewards from the RM as it is now, then one RM update on its scores (its metrics come with the rewards),
        then, with recalibration, its threshold moved."""
        if self.recalibration is not None:
            self.recalibration.start(self.rm)  # k0 from the starting RM (once)
        scores, extra = self.score(questions, references, texts, verdicts)
        if self.reference_positives and solutions is None:
            raise ValueError("reference_positives needs a `solution` column in the training dataset")
        t0 = time.perf_counter()
        step = cooper_step(
            self.rm,
            self.negatives,
            questions,
            references,
            texts,
            verdicts,
            self.pairs_per_prompt,
            scores=scores,
            solutions=solutions if self.reference_positives else None,
            rehearsal=self.rehearsal,
        )
        t_step = time.perf_counter() - t0
        timing = {"time/negatives": step["neg_seconds"], "time/rm_update": t_step - step["neg_seconds"]}
        if self.recalibration is not None and step.pop(
            "rm_stepped"
        ):  # the RM moved (on every rank): hold its threshold
            t0 = time.perf_counter()
            step.update(self.recalibration(self.rm))
            timing["time/recalibrate"] = time.perf_counter() - t0
        step.pop("rm_stepped", None)  # not a metric
        self.last_pairs = step.pop("pairs")
        return self.reward_of(scores), {**extra, **{f"rm/{k}": v for k, v in step.items()}, **timing}

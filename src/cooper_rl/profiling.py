"""Where an RL step's time goes: wall-clock seconds per phase, one JSON line per optimizer step (timing.jsonl).

Phases (seconds, summed over the step's micro-batches):

    generation      trainer._generate (rollouts: HF generate or vLLM)
    old_logprobs    policy log-probs under no_grad (only when TRL needs them, e.g. several iterations)
    ref_logprobs    reference-model log-probs for the KL term
    reward          trainer._calculate_rewards: the whole reward function, of which (from the reward's metrics)
                      verify      rule verifier on the rollouts
                      rm_score    VerifyRM scoring (model, cooper)
                      negatives   negative generation (cooper)
                      rm_update   RM forward/backward/step on the pairs (cooper)
    policy_update   training_step minus input preparation: policy forward/backward (incl. optimizer step*)
    step            on_step_begin -> on_step_end wall time
    *_tokens        prompt/completion tokens generated this step (real), and batch x padded length

*The Trainer's optimizer.step runs outside training_step; it is in `step` but not in `policy_update`.
The profiler wraps bound methods of one trainer instance (no TRL subclassing, no change to its results).
"""

from __future__ import annotations

import functools
import json
import time
from collections import defaultdict
from pathlib import Path

import torch
from transformers import TrainerCallback

TIMED = ("generation", "old_logprobs", "ref_logprobs", "reward")  # measured directly by the wrappers
PHASES = (*TIMED, "policy_update", "other")  # every record's phases (they sum to step_seconds)
REWARD_PHASES = ("verify", "rm_score", "negatives", "rm_update")


class StepProfiler(TrainerCallback):
    """TrainerCallback that times the phases of every GRPO step and appends them to `path` (main process)."""

    def __init__(self, trainer, reward=None, path: str | Path | None = None):
        self.trainer, self.reward = trainer, reward
        self.path = Path(path) if path else None
        self.acc: dict[str, float] = defaultdict(float)
        self.records: list[dict] = []
        self._t0 = None
        self._wrap("_generate", lambda *a, **k: "generation", on_result=self._count_tokens)
        self._wrap("_calculate_rewards", lambda *a, **k: "reward")
        self._wrap("_prepare_inputs", lambda *a, **k: "prepare_inputs")
        self._wrap("training_step", lambda *a, **k: "training_step")
        self._wrap("_get_per_token_logps_and_entropies", self._logps_phase)

    def _logps_phase(self, model, *args, **kwargs) -> str:
        """Which phase a log-prob call belongs to: the reference model, the policy without or with grad."""
        if model is getattr(self.trainer, "ref_model", None):
            return "ref_logprobs"
        return "policy_logprobs" if torch.is_grad_enabled() else "old_logprobs"

    def _count_tokens(self, result) -> None:
        """Token counts of one _generate result (prompt_ids, completion_ids, ...): real and padded."""
        prompt_ids, completion_ids = result[0], result[1]
        self.acc["prompt_tokens"] += sum(len(x) for x in prompt_ids)
        self.acc["completion_tokens"] += sum(len(x) for x in completion_ids)
        if prompt_ids:  # sequences as the log-prob/update forwards see them: padded to the longest
            self.acc["padded_tokens"] += len(prompt_ids) * (max(map(len, prompt_ids)) + max(map(len, completion_ids), default=0))

    def _wrap(self, name: str, phase_of, on_result=None) -> None:
        fn = getattr(self.trainer, name)

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            phase = phase_of(*args, **kwargs)
            t = time.perf_counter()
            try:
                out = fn(*args, **kwargs)
            finally:
                self.acc[phase] += time.perf_counter() - t
            if on_result is not None:
                on_result(out)
            return out

        setattr(self.trainer, name, timed)

    def on_step_begin(self, args, state, control, **kwargs):
        """Start the step's clock."""
        self.acc.clear()
        self._t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        """Close the step: derive policy_update, add the reward's own split, append one record."""
        a = self.acc
        rec = {"step": state.global_step, "step_seconds": time.perf_counter() - self._t0}
        rec.update({k: a.get(k, 0.0) for k in TIMED})
        rec["policy_update"] = a.get("training_step", 0.0) - a.get("prepare_inputs", 0.0)
        metrics = getattr(self.reward, "last_metrics", {}) or {}
        for k in REWARD_PHASES:
            rec[f"reward/{k}"] = float(metrics.get(f"time/{k}", 0.0))
        rec.update({k: int(a.get(k, 0)) for k in ("prompt_tokens", "completion_tokens", "padded_tokens")})
        rec["other"] = rec["step_seconds"] - sum(rec[k] for k in (*TIMED, "policy_update"))
        self.records.append(rec)
        if self.path is not None and state.is_world_process_zero:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as f:
                f.write(json.dumps(rec) + "\n")

"""Checkpoints of an RL run: the co-optimized reward model inside TRL's checkpoints, and resuming.

In cooper mode the reward model is saved inside every TRL checkpoint (checkpoint-N/cooper_rm: weights,
tokenizer, and rm_state.pt with its optimizer, scheduler, negative-generator RNG and hacking-monitor history),
written to a temp dir and renamed into place; resuming restores all of it before training goes on. Log lines
written after the checkpoint a run resumes from are dropped (the resumed steps write them again).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import torch
from transformers import TrainerCallback

from cooper_rl.io import atomic_dir, atomic_write_json, read_jsonl, write_jsonl

log = logging.getLogger(__name__)

RM_DIR = "cooper_rm"  # inside each checkpoint-N (cooper mode)
RM_STATE = "rm_state.pt"
LOGS = ("metrics.jsonl", "timing.jsonl", "evals.jsonl", "rollouts.jsonl", "rm_pairs.jsonl")  # per-step logs


def _generators(reward) -> dict:
    """The negative generators of a CooperReward by kind (a NegativeMix's members; a single one as 'negatives')."""
    neg = reward.negatives
    return dict(zip(neg.kinds, neg.members)) if hasattr(neg, "members") else {"negatives": neg}


def save_rm_state(reward, checkpoint_dir: str | os.PathLike) -> Path:
    """Write the co-optimized RM of a CooperReward (weights, tokenizer, optimizer, scheduler, negatives RNG,
    monitor, rehearsal draw, recalibration's k0) to checkpoint_dir/cooper_rm atomically. Returns that path."""
    target = Path(checkpoint_dir) / RM_DIR
    with atomic_dir(target) as tmp:
        reward.rm.save_pretrained(tmp)
        torch.save(
            {
                "optimizer": reward.rm.optimizer.state_dict(),
                "scheduler": reward.rm.scheduler.state_dict(),
                "negatives_rng": {k: g.rng.getstate() for k, g in _generators(reward).items() if hasattr(g, "rng")},
                "monitor": reward.monitor.state_dict() if reward.monitor is not None else None,
                "rehearsal": reward.rehearsal.state_dict() if getattr(reward, "rehearsal", None) else None,
                "recalibration": reward.recalibration.state_dict() if getattr(reward, "recalibration", None) else None,
            },
            tmp / RM_STATE,
        )
    return target


def load_rm_state(reward, checkpoint_dir: str | os.PathLike) -> None:
    """Restore optimizer, scheduler, negatives RNG and monitor saved by save_rm_state (the weights are loaded
    with VerifyRM.from_pretrained(checkpoint_dir/cooper_rm); the optimizer must already be configured)."""
    state = torch.load(Path(checkpoint_dir) / RM_DIR / RM_STATE, map_location=reward.rm.device, weights_only=False)
    reward.rm.optimizer.load_state_dict(state["optimizer"])
    reward.rm.scheduler.load_state_dict(state["scheduler"])
    saved = state["negatives_rng"]
    gens = _generators(reward)
    if saved is not None and not isinstance(saved, dict):  # older checkpoints: the one CorruptNegatives' state
        saved = {next(iter(gens)): saved}
    for kind, rng_state in (saved or {}).items():
        if kind in gens and hasattr(gens[kind], "rng"):
            gens[kind].rng.setstate(rng_state)
    if state["monitor"] is not None and reward.monitor is not None:
        reward.monitor.load_state_dict(state["monitor"])
    if state.get("rehearsal") is not None and getattr(reward, "rehearsal", None) is not None:
        reward.rehearsal.load_state_dict(state["rehearsal"])
    if state.get("recalibration") is not None and getattr(reward, "recalibration", None) is not None:
        reward.recalibration.load_state_dict(state["recalibration"])


class RMCheckpointCallback(TrainerCallback):
    """Saves the co-optimized RM into every TRL checkpoint dir, right after TRL has written it."""

    def __init__(self, reward):
        self.reward = reward

    def on_save(self, args, state, control, **kwargs):
        """Write checkpoint-{global_step}/cooper_rm on the main process."""
        if state.is_world_process_zero:
            save_rm_state(self.reward, Path(args.output_dir) / f"checkpoint-{state.global_step}")


MONITOR_STATE = "monitor_state.json"  # rule/model runs (a cooper run keeps its monitor in rm_state.pt)


class MonitorCheckpointCallback(TrainerCallback):
    """Saves the hacking monitor's state into every TRL checkpoint dir of a rule or model run, so a resumed run
    keeps its baseline and flag counts."""

    def __init__(self, monitor):
        self.monitor = monitor

    def on_save(self, args, state, control, **kwargs):
        """Write checkpoint-{global_step}/monitor_state.json on the main process."""
        if state.is_world_process_zero:
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}" / MONITOR_STATE
            atomic_write_json(path, self.monitor.state_dict())


def load_monitor_state(monitor, checkpoint_dir: str | os.PathLike) -> bool:
    """Restore a monitor saved by MonitorCheckpointCallback; False if the checkpoint has none."""
    path = Path(checkpoint_dir) / MONITOR_STATE
    if not path.is_file():
        return False
    monitor.load_state_dict(json.loads(path.read_text()))
    return True


def trim_logs(output_dir: str | os.PathLike, step: int) -> None:
    """Drop lines of the per-step logs written after `step` (a resumed run writes them again), and lines cut
    by a kill."""
    for name in LOGS:
        path = Path(output_dir) / name
        if path.is_file():
            write_jsonl(path, [r for r in read_jsonl(path) if r.get("step") is None or r["step"] <= step])

"""Every use of TRL's and accelerate's private attributes, in one place, checked at start-up.

cooper drives TRL's public API (GRPOTrainer, GRPOConfig, SFTTrainer, callbacks). Two features need more:

- the per-step profiler (callbacks.StepProfiler) times four private GRPOTrainer methods by wrapping them
  on one trainer instance (no subclassing, results unchanged);
- fp32 rollouts under bf16 autocast (callbacks.FP32Generation) restore the model's forward that accelerate
  saved as ``_original_forward`` before wrapping it in autocast.

These names are not TRL's API and may change in any release, so the TRL version is pinned in pyproject
(``SUPPORTED_TRL``), and ``check_trl`` fails at start-up with a message naming that version if a method is
missing, instead of profiling silently nothing.
"""

from __future__ import annotations

SUPPORTED_TRL = ">=1.16,<1.17"  # keep in step with pyproject.toml

# phase name -> private GRPOTrainer method (TRL 1.16)
TRAINER_METHODS = {
    "generate": "_generate",  # rollouts: HF generate or vLLM
    "calculate_rewards": "_calculate_rewards",  # every reward function on the rollouts
    "prepare_inputs": "_prepare_inputs",  # generation + scoring + advantages of a micro-batch
    "logps": "_get_per_token_logps_and_entropies",  # every log-prob forward (policy, old, reference)
}
ACCELERATE_ORIGINAL_FORWARD = "_original_forward"  # set by accelerate.prepare_model under mixed precision


class UnsupportedTRLError(RuntimeError):
    """The installed TRL lacks a private attribute cooper relies on."""


def check_trl() -> None:
    """Raise UnsupportedTRLError (naming the supported TRL version) if GRPOTrainer lacks a wrapped method."""
    import trl
    from trl import GRPOTrainer

    missing = [m for m in TRAINER_METHODS.values() if not callable(getattr(GRPOTrainer, m, None))]
    if missing:
        raise UnsupportedTRLError(
            f"cooper supports trl{SUPPORTED_TRL}; the installed trl {trl.__version__} has no GRPOTrainer."
            f"{', '.join(missing)} (used by the step profiler): pip install 'trl{SUPPORTED_TRL}'"
        )


def wrap_trainer_method(trainer, phase: str, wrapper) -> None:
    """Replace the private method behind ``phase`` (a TRAINER_METHODS key) on this trainer instance by
    ``wrapper(original_bound_method)``."""
    check_trl()
    name = TRAINER_METHODS[phase]
    setattr(trainer, name, wrapper(getattr(trainer, name)))


def restore_unautocast_forward(model) -> bool:
    """Undo accelerate's autocast wrapper of ``model.forward`` (and of ``model.module.forward``) by restoring
    the forward it saved; True if one was restored. TRL still enters autocast around its log-prob forwards."""
    restored = False
    for m in {id(x): x for x in (model, getattr(model, "module", None)) if x is not None}.values():
        original = getattr(m, ACCELERATE_ORIGINAL_FORWARD, None)
        if original is not None:
            m.forward = original
            restored = True
    return restored

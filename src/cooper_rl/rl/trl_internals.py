"""Every use of TRL's and accelerate's private attributes, in one place, checked at start-up.

cooper drives TRL's public API (GRPOTrainer, GRPOConfig, SFTTrainer, callbacks). Two features need more:

- the per-step profiler (callbacks.StepProfiler) times four private GRPOTrainer methods by wrapping them
  on one trainer instance (no subclassing, results unchanged);
- fp32 rollouts under bf16 autocast (callbacks.FP32Generation) restore the model's forward that accelerate
  saved as ``_original_forward`` before wrapping it in autocast.

- TRL's fused LM head scores only the completion positions on Triton devices but every position (prompt and
  padding too) elsewhere; ``score_completions_only`` makes the CPU take the same compact path (identical
  log-probs and gradients, ~40% less LM-head work on the small-batch CPU preset) by wrapping ``trl.trainer.utils._use_triton``.

- shared-prefix GRPO keeps a group's rows in one micro-batch where that gives the same gradient: ``patch_shuffle``
  wraps GRPOTrainer's module-level ``shuffle_sequence_dict`` (shared_prefix.grouped_shuffle).

- a resume keeps the prompt order of a run that never stopped: ``epoch_exact_sampler`` wraps the sampler that
  GRPOTrainer's private ``_get_train_sampler`` returns (TRL's own replays epoch 0's order after a resume in a later
  epoch).

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
TRAIN_SAMPLER = "_get_train_sampler"  # GRPOTrainer: builds the RepeatSampler of the prompts (epoch_exact_sampler)
ACCELERATE_ORIGINAL_FORWARD = "_original_forward"  # set by accelerate.prepare_model under mixed precision
FUSED_HEAD_COMPACT_SWITCH = "_use_triton"  # trl.trainer.utils: whether the fused LM head scores valid positions only
SHUFFLE = "shuffle_sequence_dict"  # trl.trainer.grpo_trainer: shuffles a generation batch before its micro-batches


class UnsupportedTRLError(RuntimeError):
    """The installed TRL lacks a private attribute cooper relies on."""


def check_trl() -> None:
    """Raise UnsupportedTRLError (naming the supported TRL version) if a private attribute used here is missing."""
    import trl
    from trl import GRPOTrainer
    from trl.trainer import utils as trl_utils

    methods = (*TRAINER_METHODS.values(), TRAIN_SAMPLER)
    missing = [f"GRPOTrainer.{m}" for m in methods if not callable(getattr(GRPOTrainer, m, None))]
    if not callable(getattr(trl_utils, FUSED_HEAD_COMPACT_SWITCH, None)):
        missing.append(f"trl.trainer.utils.{FUSED_HEAD_COMPACT_SWITCH}")
    from trl.trainer import grpo_trainer

    if not callable(getattr(grpo_trainer, SHUFFLE, None)):
        missing.append(f"trl.trainer.grpo_trainer.{SHUFFLE}")
    if missing:
        raise UnsupportedTRLError(
            f"cooper supports trl{SUPPORTED_TRL}; the installed trl {trl.__version__} lacks {', '.join(missing)} "
            f"(private attributes used by cooper_rl.rl.trl_internals): pip install 'trl{SUPPORTED_TRL}'"
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


def score_completions_only() -> None:
    """Make TRL's fused LM head score only the positions that have a label (the completion tokens) on every
    device, as it already does on Triton devices; on CPU it otherwise projects every prompt and padding position
    through the 49k-word head as well. Idempotent; results are unchanged (tested)."""
    check_trl()
    from trl.trainer import utils as trl_utils

    original = getattr(trl_utils, FUSED_HEAD_COMPACT_SWITCH)
    if getattr(original, "cooper_compact", False):
        return

    def compact_everywhere(device) -> bool:
        return device.type == "cpu" or original(device)

    compact_everywhere.cooper_compact = True
    compact_everywhere.original = original
    setattr(trl_utils, FUSED_HEAD_COMPACT_SWITCH, compact_everywhere)


def patch_shuffle(make) -> None:
    """Replace GRPOTrainer's generation-batch shuffle (``SHUFFLE`` in trl.trainer.grpo_trainer) by ``make(original)``
    once; the replacement must call the original when it has nothing to change (shared_prefix.grouped_shuffle)."""
    check_trl()
    from trl.trainer import grpo_trainer

    current = getattr(grpo_trainer, SHUFFLE)
    if not getattr(current, "cooper_grouped", False):
        setattr(grpo_trainer, SHUFFLE, make(current))


class EpochExactSampler:
    """TRL's RepeatSampler whose order in epoch e is the same in a resumed process as in one that never stopped.

    RepeatSampler draws each epoch's permutation from one generator seeded once, and has no ``set_epoch``: a process
    resumed in epoch e >= 1 starts that generator over and trains epoch e in epoch 0's order (some prompts twice,
    others not at all in that epoch). This sampler re-seeds it and draws the e earlier permutations before each epoch,
    so the uninterrupted order is TRL's own, unchanged. accelerate's loader sets the epoch before every pass
    (set_epoch); without one, successive passes count epochs themselves. In a multi-process run resumed inside an
    epoch, accelerate's skip loader does not forward set_epoch (its sampler sits under a BatchSamplerShard there):
    ``epoch_exact_sampler``'s callback then sets the epoch from the trainer state at the epoch's start."""

    def __init__(self, inner):
        self.inner, self.epoch = inner, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self):
        import torch

        inner = self.inner
        if getattr(inner, "shuffle", False) and getattr(inner, "seed", None) is not None:
            inner.generator.manual_seed(inner.seed)
            for _ in range(self.epoch):
                torch.randperm(inner.num_samples, generator=inner.generator)
        self.epoch += 1
        return iter(inner)


def epoch_exact_sampler(trainer) -> None:
    """Make this GRPOTrainer's prompt sampler an EpochExactSampler (a resume keeps the uninterrupted prompt order),
    told the epoch at every epoch's start by a callback as well (the multi-process resume that set_epoch misses)."""
    from transformers import TrainerCallback

    check_trl()
    original = getattr(trainer, TRAIN_SAMPLER)
    samplers: list[EpochExactSampler] = []

    def make(*a, **k):
        samplers.append(EpochExactSampler(original(*a, **k)))
        return samplers[-1]

    class EpochFromState(TrainerCallback):
        def on_epoch_begin(self, args, state, control, **kwargs):
            # state.epoch is fractional (e + steps done / steps per epoch, < e + 1 inside epoch e): its floor is the
            # epoch about to run, also in a process resumed inside it; set_epoch, where it arrives, says the same
            if samplers:
                samplers[-1].set_epoch(int(state.epoch or 0))

    setattr(trainer, TRAIN_SAMPLER, make)
    trainer.add_callback(EpochFromState())

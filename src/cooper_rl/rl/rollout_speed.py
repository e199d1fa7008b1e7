"""Rollout-speed machinery of ``cooper rl``: exact savings and precision options around TRL's GRPOTrainer.

autocast_rollouts        rollouts under bf16 autocast (fp32 master weights)
bf16_rollout_copy        rollouts from a bf16 copy of the policy, refreshed before each generation batch
PaddingTrimmer           log-prob forwards skip the padding every row of a call shares (same values, tested)
SamplerLogprobs          TRL's old log-probs taken from the sampling step instead of a second forward
FP32Generation           HF generate kept out of accelerate's bf16 autocast wrapper
keep_freed_memory        glibc's malloc keeps freed memory for reuse instead of page-faulting it in again

Each wraps methods of one trainer instance (no TRL subclassing); private TRL attributes are reached only through
trl_internals.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from transformers import TrainerCallback

from cooper_rl.rl.trl_internals import restore_unautocast_forward, wrap_trainer_method


def autocast_rollouts(trainer, dtype=torch.bfloat16) -> None:
    """Run the trainer's rollout generation under autocast to ``dtype`` (fp32 master weights stay as they are).

    Autocast casts each weight once per generate call (its cast cache lives as long as the context), so decode
    runs bf16 matmuls (AMX on CPU) without a second copy of the model."""
    device_type = trainer.accelerator.device.type

    def wrap(generate):
        @functools.wraps(generate)
        def generate_autocast(*args, **kwargs):
            with torch.autocast(device_type, dtype=dtype):
                return generate(*args, **kwargs)

        return generate_autocast

    wrap_trainer_method(trainer, "generate", wrap)


def bf16_rollout_copy(trainer, dtype=torch.bfloat16):
    """Generate the trainer's rollouts with a ``dtype`` copy of the policy whose weights are refreshed from the fp32
    master weights at the start of every generation batch; returns the copy. Training, log-probs, the reference
    and evaluation keep the fp32 model.

    Faster than autocast_rollouts on CPU (measured: benchmarks/decode_dtype.py): no per-call weight casts, and
    the KV cache and activations are bf16 too, which halves the bytes a large decode batch reads per token.
    Sampling differs from fp32 sampling by bf16 rounding only (next-token TV in the same benchmark)."""
    from transformers import AutoModelForCausalLM

    model = trainer.model
    copy = AutoModelForCausalLM.from_config(model.config, dtype=dtype).to(model.device)
    copy.generation_config = model.generation_config
    copy.requires_grad_(False).eval()
    pairs = list(zip(copy.parameters(), model.parameters(), strict=True))  # same class and config: same order
    for (n16, p16), (n32, p32) in zip(copy.named_parameters(), model.named_parameters(), strict=True):
        if n16 != n32 or p16.shape != p32.shape:
            raise ValueError(f"bf16 rollout copy: parameter {n16} does not match the policy's {n32}")

    def wrap(generate):
        @functools.wraps(generate)
        def generate_with_copy(*args, **kwargs):
            with torch.no_grad():
                for p16, p32 in pairs:
                    p16.copy_(p32)
            model.generate = copy.generate  # an instance attribute only for this call: eval keeps fp32
            try:
                return generate(*args, **kwargs)
            finally:
                del model.generate

        return generate_with_copy

    wrap_trainer_method(trainer, "generate", wrap)
    return copy


def trimmed_span(input_ids, attention_mask, logits_to_keep: int, lead_ok: bool):
    """(first column, end column, new logits_to_keep) that drop the columns every row pads: trailing completion
    padding always (causal attention: later positions change nothing before them), leading prompt padding only if
    ``lead_ok`` (rotary positions: a shift of every row's positions leaves the attention scores unchanged)."""
    width = input_ids.size(1)
    used = attention_mask.bool().any(0)
    prompt_used = used[: width - logits_to_keep]
    lead = int(prompt_used.int().argmax()) if lead_ok and prompt_used.any() else 0
    completion_used = used[width - logits_to_keep :]
    trail = int(completion_used.flip(0).int().argmax()) if completion_used.any() else 0
    trail = min(trail, logits_to_keep - 1)  # keep one completion column: TRL's shapes stay valid
    return lead, width - trail, logits_to_keep - trail


class PaddingTrimmer:
    """Log-prob forwards without the padding TRL gives them. TRL pads a whole generation batch (steps_per_generation
    x the rollouts of one step) to its longest prompt and completion and keeps that width for every micro-batch and
    every reference/old log-prob chunk; on a CPU, where those forwards are compute-bound, the padded positions cost as
    much as real ones. Here each call drops the columns all of its rows pad (see trimmed_span), and no-grad calls over
    many rows (reference and old log-probs) are regrouped into chunks of similar completion length first. The values
    returned are TRL's (same shape, zeros where the completion mask is 0; tested). Install with
    ``install_padding_trimmer``."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.lead_ok = shift_invariant(trainer.model)
        self.columns = [0, 0]  # (positions computed, positions TRL would have computed)
        self.trimmed_calls = {"prompt": 0, "completion": 0}  # calls that dropped leading / trailing columns

    def wrap_logps(self, logps):
        """Wrap TRL's log-prob method (see the class doc)."""
        trimmer = self

        def one(args, kwargs, rows=None):
            model, input_ids, attention_mask, keep = args[:4]
            extra = {k: v for k, v in kwargs.items() if k != "batch_size"}
            if rows is not None:
                input_ids, attention_mask = input_ids[rows], attention_mask[rows]
            lead, end, new_keep = trimmed_span(input_ids, attention_mask, keep, trimmer.lead_ok)
            trimmer.columns[0] += input_ids.size(0) * (end - lead)
            trimmer.columns[1] += input_ids.size(0) * input_ids.size(1)
            trimmer.trimmed_calls["prompt"] += lead > 0
            trimmer.trimmed_calls["completion"] += new_keep < keep
            out = logps(model, input_ids[:, lead:end], attention_mask[:, lead:end], new_keep, *args[4:], **extra)
            pad = keep - new_keep
            logp, entropies, *rest = out
            if pad:
                logp = F.pad(logp, (0, pad))
                entropies = None if entropies is None else F.pad(entropies, (0, pad))
            return (logp, entropies, *rest)

        @functools.wraps(logps)
        def logps_trimmed(*args, **kwargs):
            if (
                len(args) < 4
                or kwargs.get("compute_aux_loss")  # a MoE's load-balancing loss is a mean over chunks
                or any(v is not None for k, v in kwargs.items() if k not in TEXT_ONLY_KWARGS)
            ):
                return logps(*args, **kwargs)  # images and the like ride on row order: TRL's own path
            input_ids, attention_mask, keep = args[1], args[2], args[3]
            batch_size = kwargs.get("batch_size") or input_ids.size(0)
            if torch.is_grad_enabled() or batch_size >= input_ids.size(0):
                return one(args, kwargs)  # the loss's micro-batch: its own width, rows untouched
            # reference / old log-probs over the generation batch: chunks of similar completion length
            lengths = attention_mask[:, input_ids.size(1) - keep :].sum(1)
            order = torch.argsort(lengths, stable=True)
            parts = [one(args, kwargs, order[i : i + batch_size]) for i in range(0, len(order), batch_size)]
            inverse = torch.argsort(order)
            logp = torch.cat([p[0] for p in parts])[inverse]
            ent = None if parts[0][1] is None else torch.cat([p[1] for p in parts])[inverse]
            return logp, ent, None

        return logps_trimmed


ROTARY_TYPES = ("llama", "mistral", "qwen2", "qwen3", "olmo2", "smollm3")  # decoders with rotary positions only


LENGTH_DEPENDENT_ROPE = ("dynamic", "longrope")  # frequencies that depend on the sequence length


def rope_type(model) -> str:
    """The model's RoPE variant ('default' when its config names none)."""
    params = getattr(model.config, "rope_parameters", None) or getattr(model.config, "rope_scaling", None) or {}
    return params.get("rope_type", params.get("type", "default")) if isinstance(params, dict) else "default"


def shift_invariant(model) -> bool:
    """Whether shifting every row's positions by the same amount leaves a forward's log-probs unchanged up to fp32
    rounding: rotary positions of a fixed (not length-dependent) frequency set, fp32 weights (bf16 rounds cos/sin
    differently at each position)."""
    return (
        getattr(model.config, "model_type", None) in ROTARY_TYPES
        and rope_type(model) not in LENGTH_DEPENDENT_ROPE
        and next(model.parameters()).dtype == torch.float32
    )


TEXT_ONLY_KWARGS = ("batch_size", "compute_entropy", "compute_aux_loss")  # other log-prob kwargs: multimodal


def install_padding_trimmer(trainer) -> PaddingTrimmer | None:
    """Make ``trainer``'s log-prob forwards skip the padding every row of a call shares (see PaddingTrimmer);
    None (nothing installed) for a length-dependent RoPE, where the sequence length changes the frequencies."""
    if rope_type(trainer.model) in LENGTH_DEPENDENT_ROPE:
        return None
    trimmer = PaddingTrimmer(trainer)
    wrap_trainer_method(trainer, "logps", trimmer.wrap_logps)
    trainer._cooper_padding_trimmer = trimmer
    return trimmer


class SamplerLogprobs:
    """Old log-probs from the sampler: while the trainer's fp32 policy generates a batch, record the log-prob
    (``log_softmax(logits / temperature)``, as TRL computes it) of every token it samples, and hand them to TRL
    in place of its extra no-grad forward over the same batch (``old_logprobs``: ~13 % of a small-batch CPU preset step).

    Exact only where the sampler is the policy itself: fp32 HF generate of the trainer's model, no bf16 copy, no
    autocast (then the two differ by float rounding of a KV-cached vs a whole-sequence forward; tested). A batch
    whose completions do not match the recorded tokens falls back to TRL's forward (counted in ``fallbacks``).
    Install with ``install_sampler_logprobs``."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.model = trainer.accelerator.unwrap_model(trainer.model)
        self.stash: tuple[torch.Tensor, torch.Tensor] | None = None  # (completion tokens, log-probs), B x T
        self.used = self.fallbacks = 0

    def wrap_generate(self, generate):
        """Wrap the trainer's rollout method: the policy's generate records the sampled tokens' log-probs."""
        model, recorder = self.model, self

        @functools.wraps(generate)
        def generate_recorded(*args, **kwargs):
            recorder.stash = None
            original = model.generate

            @functools.wraps(original)
            def generate_and_record(*g_args, **g_kwargs):
                steps, last = [], [None]
                temperature = recorder.trainer.temperature

                def before(module, f_args, f_kwargs):  # the step's input token is the one sampled last step
                    if last[0] is not None:
                        ids = f_kwargs.get("input_ids", f_args[0] if f_args else None)
                        steps.append(last[0].gather(1, ids[:, -1:]).squeeze(1))
                        last[0] = None

                def after(module, f_args, output):
                    logits = output.logits[:, -1, :].float()
                    last[0] = torch.log_softmax(logits / temperature, dim=-1)

                hooks = [
                    model.register_forward_pre_hook(before, with_kwargs=True),
                    model.register_forward_hook(after),
                ]
                try:
                    sequences = original(*g_args, **g_kwargs)
                finally:
                    for h in hooks:
                        h.remove()
                ids = sequences if torch.is_tensor(sequences) else sequences.sequences
                if last[0] is not None:
                    steps.append(last[0].gather(1, ids[:, -1:]).squeeze(1))
                prompt = g_kwargs.get("input_ids", g_args[0] if g_args else None)
                # one forward per new token, or the values would not belong to the tokens (chunked prefill, synced
                # or speculative generation...): then TRL's forward computes them
                if steps and prompt is not None and len(steps) == ids.size(1) - prompt.size(1):
                    recorder.stash = (ids[:, prompt.size(1) :], torch.stack(steps, dim=1))
                return sequences

            model.generate = generate_and_record  # an instance attribute only for this call
            try:
                return generate(*args, **kwargs)
            finally:
                del model.generate

        return generate_recorded

    def wrap_logps(self, logps):
        """Wrap TRL's log-prob method: its no-grad call on the policy right after a generation batch returns the
        recorded log-probs if the completions match them token for token."""
        recorder = self

        @functools.wraps(logps)
        def logps_or_recorded(*args, **kwargs):
            stash, recorder.stash = recorder.stash, None  # one use: later calls (reference, loss) compute
            if torch.is_grad_enabled() or kwargs.get("compute_entropy") or len(args) < 4:
                return logps(*args, **kwargs)
            if stash is None:  # the old log-probs right after a batch whose recording was not usable
                recorder.fallbacks += args[0] is recorder.trainer.model
                return logps(*args, **kwargs)
            model, input_ids, attention_mask, logits_to_keep = args[:4]
            tokens, values = stash
            mask = attention_mask[:, -logits_to_keep:].bool()
            ids = input_ids[:, -logits_to_keep:]
            if (
                model is not recorder.trainer.model
                or tokens.shape[0] != ids.shape[0]
                or tokens.shape[1] < logits_to_keep
                or not torch.equal(ids[mask], tokens[:, :logits_to_keep].to(ids.device)[mask])
            ):
                recorder.fallbacks += 1
                return logps(*args, **kwargs)
            recorder.used += 1
            values = values[:, :logits_to_keep].to(ids.device).masked_fill(~mask, 0.0)
            return values, None, None

        return logps_or_recorded


def install_sampler_logprobs(trainer) -> SamplerLogprobs:
    """Make ``trainer`` take the old log-probs of its rollouts from the sampling step (see SamplerLogprobs)."""
    recorder = SamplerLogprobs(trainer)
    wrap_trainer_method(trainer, "generate", recorder.wrap_generate)
    wrap_trainer_method(trainer, "logps", recorder.wrap_logps)
    trainer._cooper_sampler_logprobs = recorder  # counts of used/fallback batches, for the run's summary
    return recorder


class FP32Generation(TrainerCallback):
    """Keeps HF generate out of bf16 autocast (slower there on CPU) while TRL's log-prob forwards keep it.

    Accelerate wraps model.forward in autocast when mixed precision is on; TRL also enters
    accelerator.autocast() around every log-prob forward, so restoring the plain forward at train start
    leaves autocast exactly where the loss and the reference log-probs are computed."""

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        """Restore the forward accelerate saved before wrapping it in autocast."""
        restore_unautocast_forward(model)


M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX = -1, -2, -4  # glibc's mallopt parameters (malloc.h)


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep freed memory in the process for reuse: no mmap of large blocks, no trimming of the
    heap (the main arena's; other threads' arenas still map blocks over 64 MB). Process-wide and for good: the process
    keeps the memory of its peak. Under its defaults every block over 32 MB (an LM-head tile of [tokens, 32k words], a batch's MLP
    activations) is mapped fresh and unmapped on free, so each forward and backward page-faults it in again, zeroed
    by the kernel, system time that the policy update spends on every step (benchmarks/shared_prefix_profile.py
    --in_run measures it).
    Values are unchanged. Returns whether it applied (False off glibc: macOS, musl)."""
    import ctypes
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    # (where the heap cannot grow, glibc still falls back to mmap: no allocation fails because of this)
    settings = ((M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, 2**31 - 1), (M_TOP_PAD, 1 << 28))
    return all(libc.mallopt(param, value) == 1 for param, value in settings)

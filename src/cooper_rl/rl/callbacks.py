"""Callbacks of ``cooper rl`` around TRL's GRPOTrainer: step timing, fp32 rollouts, periodic evaluation.

StepProfiler: where an RL step's time goes, wall-clock seconds per phase, one JSON line per optimizer step
(timing.jsonl). Phases (seconds, summed over the step's micro-batches):

    generation      rollouts (HF generate or vLLM)
    old_logprobs    policy log-probs under no_grad (only when TRL needs them, e.g. several iterations;
                    ~0 when SamplerLogprobs takes them from the sampling step)
    ref_logprobs    reference-model log-probs for the KL term
    reward          the whole reward function, of which (from the reward's metrics)
                      verify      rule verifier on the rollouts
                      rm_score    VerifyRM scoring (model, cooper)
                      negatives   negative generation (cooper)
                      rm_update   RM forward/backward/step on the pairs (cooper)
    policy_update   training_step minus input preparation: policy forward/backward (incl. optimizer step*)
    step            on_step_begin -> on_step_end wall time
    *_tokens        prompt/completion tokens generated this step (real), and batch x padded length

*The Trainer's optimizer.step runs outside training_step; it is in `step` but not in `policy_update`.
The profiler wraps methods of one trainer instance (no TRL subclassing, no change to its results); the
private ones are reached only through trl_internals.

FP32Generation keeps rollouts out of accelerate's autocast wrapper, autocast_rollouts puts them under an explicit
bf16 autocast, bf16_rollout_copy generates them with a bf16 copy of the policy; SamplerLogprobs keeps the log-probs
of the sampled tokens as TRL's old log-probs; EvalCallback evaluates policy and RM every N steps.
"""

from __future__ import annotations

import functools
import json
import time
from collections import defaultdict
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import TrainerCallback

from cooper_rl.io import append_jsonl
from cooper_rl.rl.trl_internals import restore_unautocast_forward, wrap_trainer_method

TIMED = ("generation", "old_logprobs", "ref_logprobs", "reward")  # measured directly by the wrappers
PHASES = (*TIMED, "policy_update", "other")  # every record's phases (they sum to step_seconds)
REWARD_PHASES = ("verify", "rm_score", "negatives", "rm_update")


class StepProfiler(TrainerCallback):
    """TrainerCallback that times the phases of every GRPO step and appends them to `path` (main process)."""

    def __init__(self, trainer, reward=None, path: str | Path | None = None):
        self.trainer, self.reward = trainer, reward
        self.path = Path(path) if path else None
        self.acc: dict[str, float] = defaultdict(float)
        self._t0 = None
        wrap_trainer_method(
            trainer, "generate", self._timed(lambda *a, **k: "generation", on_result=self._count_tokens)
        )
        wrap_trainer_method(trainer, "calculate_rewards", self._timed(lambda *a, **k: "reward"))
        wrap_trainer_method(trainer, "prepare_inputs", self._timed(lambda *a, **k: "prepare_inputs"))
        wrap_trainer_method(trainer, "logps", self._timed(self._logps_phase))
        trainer.training_step = self._timed(lambda *a, **k: "training_step")(trainer.training_step)  # public

    def _logps_phase(self, model, *args, **kwargs) -> str:
        """Which phase a log-prob call belongs to: the reference model, the policy without or with grad."""
        if model is getattr(self.trainer, "ref_model", None):
            return "ref_logprobs"
        return "policy_logprobs" if torch.is_grad_enabled() else "old_logprobs"

    def _count_tokens(self, result) -> None:
        """Token counts of one generation result (prompt_ids, completion_ids, ...): real and padded."""
        prompt_ids, completion_ids = result[0], result[1]
        self.acc["prompt_tokens"] += sum(len(x) for x in prompt_ids)
        self.acc["completion_tokens"] += sum(len(x) for x in completion_ids)
        if prompt_ids:  # sequences as the log-prob/update forwards see them: padded to the longest
            self.acc["padded_tokens"] += len(prompt_ids) * (
                max(map(len, prompt_ids)) + max(map(len, completion_ids), default=0)
            )

    def _timed(self, phase_of, on_result=None):
        """A wrapper factory: fn -> fn that adds its wall time to the phase ``phase_of(*args)`` names."""

        def wrap(fn):
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

            return timed

        return wrap

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
        rec["torch_threads"] = torch.get_num_threads()  # runs side by side get fewer: their steps take longer
        if self.path is not None and state.is_world_process_zero:
            append_jsonl(self.path, [rec])


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


def _trimmed(input_ids, attention_mask, logits_to_keep: int, lead_ok: bool):
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
    much as real ones. Here each call drops the columns all of its rows pad (see _trimmed), and no-grad calls over
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
            lead, end, new_keep = _trimmed(input_ids, attention_mask, keep, trimmer.lead_ok)
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
    in place of its extra no-grad forward over the same batch (``old_logprobs``: ~13 % of a CPU preset step).

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


class CompactConsole(TrainerCallback):
    """One console line per logged optimizer step instead of TRL's progress bar and raw log dicts (the numbers
    still reach metrics.jsonl, TensorBoard and the other trackers). Steps that reuse an earlier generation batch
    (steps_per_generation > 1) have no reward metrics of their own: their columns show '-'."""

    COLUMNS = (  # header, log key, format
        ("reward", "cooper/reward_mean", "{:.3f}"),
        ("rule_acc", "cooper/rule_accuracy", "{:.2f}"),
        ("rm~rule", "cooper/rm_rule_agreement", "{:.2f}"),
        ("pairs", "cooper/rm/n_valid", "{:.0f}"),
        ("rm_loss", "cooper/rm/rm_loss", "{:.3f}"),
        ("fooled", "cooper/rm_fooled_rate", "{:.2f}"),
        ("0-spread", "cooper/signal/zero_spread_groups", "{:.2f}"),
        ("info/st", "cooper/signal/informative_groups_per_step", "{:.1f}"),
        ("adv>wrg", "cooper/signal/pos_adv_to_wrong", "{:.2f}"),
        ("len", "completions/mean_length", "{:.0f}"),
    )

    def __init__(self, print_fn=print):
        self.print = print_fn
        self.last_time = self.last_step = None

    def on_train_begin(self, args, state, control, **kwargs):
        """Print the header."""
        if state.is_world_process_zero:
            head = f"{'step':>9} " + " ".join(f"{h:>8}" for h, _, _ in self.COLUMNS) + f" {'monitor':>8} {'s/step':>7}"
            self.print(head)
        self.last_time, self.last_step = time.time(), state.global_step

    def on_log(self, args, state, control, logs=None, **kwargs):
        """One line for a training log (the end-of-training summary log is skipped)."""
        logs = logs or {}
        if not state.is_world_process_zero or "loss" not in logs:
            return
        now = time.time()
        per_step = (now - self.last_time) / max(1, state.global_step - self.last_step)
        self.last_time, self.last_step = now, state.global_step
        cols = []
        for _, key, form in self.COLUMNS:
            v = logs.get(key)
            cols.append(f"{form.format(v) if isinstance(v, (int, float)) else '-':>8}")
        flag = logs.get("cooper/hacking_warning")
        if flag is None:
            flag = "-"
        elif flag > 0:  # which checks fired (cooper/monitor.py), shortened
            fired = [c for c in MONITOR_SHORT if logs.get(f"cooper/monitor/{c}", 0) > 0]
            flag = "!" + ",".join(MONITOR_SHORT[c] for c in fired) if fired else "HACKING"
        elif logs.get("cooper/monitor_ready", 1) == 0:  # fewer reward calls than the monitor's window so far
            flag = "warm-up"
        else:
            flag = "ok"
        self.print(f"{state.global_step:>4}/{state.max_steps:<4} " + " ".join(cols) + f" {flag:>8} {per_step:>7.1f}")


MONITOR_SHORT = {  # console names of the monitor's checks
    "reward_up_acc_down": "rew/acc",
    "rm_fooled": "fooled",
    "rm_disagreement": "disagr",
    "length_collapse": "len",
    "entropy_collapse": "entropy",
    "acc_fall": "acc",
    "wrong_reward": "wrong",
}


class SaveAtGenerationBoundary(TrainerCallback):
    """Moves a scheduled checkpoint to the end of its generation batch (steps that are multiples of ``every``):
    TRL keeps a batch's rollouts in memory only, so a checkpoint inside a batch would resume by generating a new
    batch there (its prompts trained on again, the reward calls renumbered). The last step saves as scheduled."""

    def __init__(self, every: int):
        self.every, self.pending = max(1, every), False

    def on_step_end(self, args, state, control, **kwargs):
        at_boundary = state.global_step % self.every == 0 or state.global_step >= state.max_steps
        if control.should_save and not at_boundary:
            control.should_save, self.pending = False, True
        elif self.pending and at_boundary:
            control.should_save, self.pending = True, False
        return control


class HackingCallback(TrainerCallback):
    """Feeds TRL's logged policy entropy to the reward's hacking monitor and, with stop=True, ends the run
    cleanly (checkpoint saved, the co-optimized RM with it) at the end of the generation batch (``every`` optimizer
    steps) in which the monitor first flagged."""

    def __init__(self, reward, stop: bool = False, every: int = 1):
        self.reward, self.stop, self.every = reward, stop, max(1, every)
        self.flagged_at: int | None = None
        self.stopped_at: int | None = None

    def on_log(self, args, state, control, logs=None, **kwargs):
        """Pass the step's mean token entropy (TRL's 'entropy' log) on to the monitor."""
        monitor = getattr(self.reward, "monitor", None)
        if monitor is not None and logs and isinstance(logs.get("entropy"), (int, float)):
            monitor.observe_entropy(logs["entropy"])

    def on_step_end(self, args, state, control, **kwargs):
        """With stop: once the monitor has flagged, save and stop at the end of that generation batch."""
        monitor = getattr(self.reward, "monitor", None)
        if not self.stop or monitor is None or self.stopped_at is not None:
            return control
        if self.flagged_at is None and monitor.last_flags:
            self.flagged_at, self.flags = state.global_step, list(monitor.last_flags)
        if self.flagged_at is not None and state.global_step % self.every == 0:
            self.stopped_at = state.global_step
            print(
                f"[monitor] step {self.flagged_at}: {', '.join(self.flags)} -> stopping (--stop_on_hacking) at step "
                f"{state.global_step}; checkpoint saved",
                flush=True,
            )
            control.should_save = True
            control.should_training_stop = True
        return control


class FP32Generation(TrainerCallback):
    """Keeps HF generate out of bf16 autocast (slower there on CPU) while TRL's log-prob forwards keep it.

    Accelerate wraps model.forward in autocast when mixed precision is on; TRL also enters
    accelerator.autocast() around every log-prob forward, so restoring the plain forward at train start
    leaves autocast exactly where the loss and the reference log-probs are computed."""

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        """Restore the forward accelerate saved before wrapping it in autocast."""
        restore_unautocast_forward(model)


STEP0_PRECISION = ("bf16", "bf16_autocast", "rollout_autocast", "rollout_bf16_weights")


def step0_fingerprint(cfg) -> str | None:
    """sha256 of what a run's step-0 policy evaluation depends on beyond its EvalConfig: the policy's weights file,
    the evaluation data files and the precision settings (cfg: an RLConfig or anything with its fields). None if
    the policy is not a local safetensors dir."""
    import hashlib

    weights = Path(cfg.policy) / "model.safetensors"
    if not weights.is_file():
        return None
    h = hashlib.sha256()
    for f in (weights, *(Path(d) for d in cfg.eval_datasets if Path(d).is_file())):
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
    h.update(json.dumps({k: getattr(cfg, k, None) for k in STEP0_PRECISION}, sort_keys=True).encode())
    return h.hexdigest()


class EvalCallback(TrainerCallback):
    """Every cfg.eval_steps steps (and before the first): avg@k of the policy on cfg.eval_datasets (T=0.7,
    top-p 0.95) and, with cfg.rm_eval_data, the RM's metrics on that labelled file. One JSON line per
    evaluation in output_dir/evals.jsonl; samples under output_dir/eval/step-N."""

    def __init__(self, cfg, trainer, reward):
        """cfg: the run's RLConfig; trainer: its GRPOTrainer; reward: its reward callable."""
        from cooper_rl.rm.data import load_rm_rows

        self.cfg, self.trainer, self.reward = cfg, trainer, reward
        self.rm_rows = load_rm_rows(cfg.rm_eval_data) if cfg.rm_eval_data else None

    def eval_config(self, step: int):
        """The policy evaluation's EvalConfig at `step` (its sampling seed is cfg.seed + step)."""
        from cooper_rl.evaluate import EvalConfig

        cfg = self.cfg
        return EvalConfig(
            model=cfg.policy,
            datasets=cfg.eval_datasets,
            k=cfg.eval_k,
            prompt_template=cfg.prompt_template,
            max_new_tokens=cfg.eval_max_new_tokens or cfg.max_completion_length,
            batch_size=cfg.eval_batch_size,
            output_dir=str(Path(cfg.output_dir) / "eval" / f"step-{step}"),
            seed=cfg.seed + step,
            resume=False,
        )

    def reuse_step0(self, ecfg, fingerprint: str | None) -> tuple[dict, str] | None:
        """The step-0 policy evaluation of the first run dir in cfg.eval_step0_from that finished one with the same
        fingerprint (policy weights, evaluation data, precision) and EvalConfig (sets, k, sampling seed, lengths,
        batch): (its per-dataset metrics, its dir), with its samples copied to ecfg.output_dir. None if none has.
        A dir may also be a committed log of a run (evals.jsonl, eval/step-0/summary.json, samples.jsonl.gz): its
        gzipped files are copied uncompressed, so a run on a new machine reuses the step-0 evaluation committed
        with an earlier one."""
        import gzip
        import shutil
        from dataclasses import asdict

        from cooper_rl.io import read_jsonl

        if fingerprint is None:
            return None
        want = {k: v for k, v in asdict(ecfg).items() if k not in ("output_dir", "resume")}
        for d in map(Path, self.cfg.eval_step0_from):
            src = d / "eval" / "step-0"
            if not (src / "summary.json").is_file() or d.resolve() == Path(self.cfg.output_dir).resolve():
                continue
            try:
                rec = next((r for r in read_jsonl(d / "evals.jsonl", missing_ok=True) if r.get("step") == 0), None)
                done = json.loads((src / "summary.json").read_text())
            except (OSError, ValueError):
                continue
            got = {k: v for k, v in done.get("config", {}).items() if k not in ("output_dir", "resume")}
            if rec is not None and rec.get("step0_fingerprint") == fingerprint and got == want:
                shutil.copytree(src, ecfg.output_dir, dirs_exist_ok=True)
                for gz in Path(ecfg.output_dir).rglob("*.gz"):
                    with gzip.open(gz, "rb") as fin, open(gz.with_suffix(""), "wb") as fout:
                        shutil.copyfileobj(fin, fout)
                    gz.unlink()
                return rec["policy"], str(d)
        return None

    def evaluate(self, step: int) -> dict:
        """Run both evaluations now (at step 0 the policy's may be reused: cfg.eval_step0_from); return (and
        append) the record."""
        from cooper_rl.evaluate import evaluate
        from cooper_rl.rm.evaluate import labelled_metrics

        cfg, out = self.cfg, Path(self.cfg.output_dir)
        ecfg = self.eval_config(step)
        t0 = time.perf_counter()
        fingerprint = step0_fingerprint(cfg) if step == 0 else None
        reused = self.reuse_step0(ecfg, fingerprint) if cfg.eval_step0_from and step == 0 else None
        if reused is None:
            model = self.trainer.accelerator.unwrap_model(self.trainer.model)
            was_training = model.training
            model.eval()
            try:  # evaluate() seeds torch: keep the training RNG streams untouched
                with torch.random.fork_rng(devices=range(torch.cuda.device_count())):
                    summary = evaluate(ecfg, model=model, tokenizer=self.trainer.processing_class)
            finally:
                model.train(was_training)
            keep = ("avg@k_strict", "avg@k_lenient", "pass@k_strict", "answered_rate", "mean_new_tokens", "n_problems")
            policy = {name: {k: v for k, v in d.items() if k in keep} for name, d in summary["per_dataset"].items()}
        else:
            policy = reused[0]
        rec = {"step": step, "eval_seconds": time.perf_counter() - t0, "policy": policy}
        if fingerprint is not None:  # lets a later run of the same policy and seed reuse this evaluation
            rec["step0_fingerprint"] = fingerprint
        if reused is not None:
            rec["policy_eval_reused_from"] = reused[1]
        rm = getattr(self.reward, "rm", None)
        if self.rm_rows is not None and rm is not None:
            rec["rm"] = labelled_metrics(rm, self.rm_rows, batch_size=cfg.rm_batch_size)
        append_jsonl(out / "evals.jsonl", [rec])
        print(
            json.dumps(
                {
                    "eval_step": step,
                    **{n: round(d["avg@k_strict"], 4) for n, d in rec["policy"].items()},
                    **({"rm_accuracy": round(rec["rm"]["accuracy"], 4)} if "rm" in rec else {}),
                }
            )
        )
        return rec

    def on_train_begin(self, args, state, control, **kwargs):
        """Evaluate the starting policy (not when resuming)."""
        if state.global_step == 0 and state.is_world_process_zero:
            self.evaluate(0)

    def on_step_end(self, args, state, control, **kwargs):
        """Evaluate every eval_steps steps."""
        if state.global_step % self.cfg.eval_steps == 0 and state.is_world_process_zero:
            self.evaluate(state.global_step)

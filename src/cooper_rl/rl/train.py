"""``cooper rl``: GRPO on math problems with a rule, model or Cooper (co-optimized) reward.

The RL engine is TRL's GRPOTrainer: G completions per prompt, group-normalised advantages
A_i = (r_i - mean(r)) / std(r), clipped policy-gradient loss, and a KL penalty to the reference policy with the
k3 estimator  KL = exp(ref - logp) - (ref - logp) - 1  weighted by beta (1e-3 in the paper). This module only
builds the dataset and the reward function (cooper/rewards.py) and hands both to TRL.

Prompts are the evaluation prompt (generation.PROMPT_TEMPLATE, answer in \\boxed{}), sent as a chat message when the
policy's tokenizer has a chat template (TRL applies it); rows carry `question` and `reference` columns for the
reward. Prompts longer than max_prompt_length tokens are dropped (and counted): TRL 1.16 has no prompt truncation.

In cooper mode the reward model is saved inside every TRL checkpoint and restored on resume (checkpoint.py).
The options are RLConfig (config.py); callbacks add per-step timing, the console and periodic evaluation
(callbacks.py); rollout_speed.py holds the precision options and exact savings around TRL's forwards.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict
from pathlib import Path

import torch

from cooper_rl.cooper.monitor import HackingMonitor, logged_signals
from cooper_rl.cooper.negatives import make_negative_generator
from cooper_rl.cooper.recalibration import Recalibration
from cooper_rl.cooper.rehearsal import Rehearsal
from cooper_rl.cooper.rewards import CooperReward, ModelReward, RuleReward
from cooper_rl.formats import restyle
from cooper_rl.generation import chat_messages, render_messages
from cooper_rl.io import DataError, atomic_write_json
from cooper_rl.rl.callbacks import (
    CompactConsole,
    EvalCallback,
    HackingCallback,
    SaveAtGenerationBoundary,
    StepProfiler,
    StopBeforeEvaluation,
)
from cooper_rl.rl.checkpoint import (
    RM_DIR,
    RM_STATE,
    MonitorCheckpointCallback,
    RMCheckpointCallback,
    load_monitor_state,
    load_rm_state,
    trim_logs,
)
from cooper_rl.rl.config import RLConfig, check_resume_identity, generation_batch_steps, rm_weights_sha256
from cooper_rl.rl.rollout_speed import (
    FP32Generation,
    autocast_rollouts,
    bf16_rollout_copy,
    install_padding_trimmer,
    install_sampler_logprobs,
    keep_freed_memory,
)
from cooper_rl.rl.shared_prefix import (
    can_share,
    install_group_microbatches,
    install_shared_prefill,
    install_shared_prefix,
)
from cooper_rl.rl.trl_internals import check_trl, epoch_exact_sampler, score_completions_only
from cooper_rl.rm.data import load_rm_rows
from cooper_rl.trainer_hooks import (
    ElapsedTime,
    SaveOnSignal,
    checkpoint_step,
    resolve_checkpoint,
    seconds_until,
    signal_at,
    train_until_signal,
)

log = logging.getLogger(__name__)


def build_dataset(cfg: RLConfig, tokenizer):
    """(datasets.Dataset with prompt/question/reference columns, number of prompts dropped as too long)."""
    from datasets import Dataset

    from cooper_rl.data import load_problems

    if cfg.reference_positives and cfg.reward != "cooper":
        raise ValueError(f"--reference_positives is a Cooper option: it needs --reward cooper (got {cfg.reward!r})")
    chat = bool(getattr(tokenizer, "chat_template", None))
    rows, dropped = [], 0
    for source in cfg.datasets:
        for p in load_problems(
            source,
            question_field=cfg.question_field,
            answer_field=cfg.answer_field,
            seed=cfg.seed if cfg.data_seed is None else cfg.data_seed,
        ).problems:
            messages = chat_messages(p.question, cfg.prompt_template)
            text = render_messages(tokenizer, messages)  # what the policy will read
            if (
                cfg.max_prompt_length
                and len(tokenizer(text, add_special_tokens=False)["input_ids"]) > cfg.max_prompt_length
            ):
                dropped += 1
                continue
            # conversational rows when the tokenizer has a chat template: TRL applies it
            row = {"prompt": messages if chat else text, "question": p.question, "reference": p.answer}
            if cfg.reference_positives:  # the positive of a prompt the policy gets wrong (cooper/step.py)
                row["solution"] = restyle(p.solution, "boxed", drop_calc=True) if p.solution else None
            rows.append(row)
    if not rows:
        raise ValueError(f"no training prompts left from {cfg.datasets} ({dropped} longer than max_prompt_length)")
    if cfg.reference_positives and not any(r["solution"] for r in rows):
        raise ValueError(f"reference_positives: no problem of {cfg.datasets} has a worked solution ending in '#### N'")
    return Dataset.from_list(rows), dropped


def _rm_device() -> str:
    """This process's device for the RM (its own GPU under torchrun)."""
    if not torch.cuda.is_available():
        return "cpu"
    return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"


def recalibration_source(cfg: RLConfig) -> str | None:
    """The known negatives the co-optimized RM's threshold is recalibrated on (--rm_recalibrate), or None: auto is
    the file shipped with cooper (issue 106's decision), unless rehearsal keeps the RM calibrated instead."""
    if cfg.rm_recalibrate == "auto":
        from cooper_rl.models import KNOWN_NEGATIVES

        return None if cfg.rm_rehearsal else str(KNOWN_NEGATIVES)
    return cfg.rm_recalibrate


def build_reward(cfg: RLConfig, checkpoint: str | None = None):
    """The reward callable for cfg.reward; in cooper mode the RM (and its state) comes from `checkpoint` if given."""
    from cooper_rl.cooper.reward_model import VerifyRM

    metrics_path = Path(cfg.output_dir) / "metrics.jsonl"
    common = {
        "metrics_path": metrics_path,
        "mode": "strict",
        "timeout": cfg.verify_timeout,
        "rollouts_path": Path(cfg.output_dir) / "rollouts.jsonl" if cfg.log_rollouts else None,
        "group_size": cfg.num_generations,
        "scale_rewards": cfg.scale_rewards,
        "steps_per_generation": cfg.steps_per_generation,
    }
    monitor = HackingMonitor.from_config(cfg)
    if cfg.reward == "rule":
        return RuleReward(monitor=monitor, **common)
    if cfg.reward == "model":
        rm = VerifyRM.from_pretrained(cfg.rm, max_length=cfg.rm_max_length, device=_rm_device())
        rm.model.eval().requires_grad_(False)
        rm.autocast = cfg.rm_bf16_autocast
        return ModelReward(rm, monitor=monitor, batch_size=cfg.rm_batch_size, binary=cfg.rm_binary_reward, **common)
    if cfg.reward != "cooper":
        raise ValueError(f"unknown reward {cfg.reward!r}: use rule, model or cooper")
    source = cfg.rm
    if checkpoint is not None:
        source = str(Path(checkpoint) / RM_DIR)
        if not (Path(source) / RM_STATE).is_file():
            raise FileNotFoundError(f"{checkpoint} has no {RM_DIR}/{RM_STATE}: it was not written by a cooper-mode run")
    recalibrate = recalibration_source(cfg)
    if cfg.rm_rehearsal and recalibrate:  # rehearsal would fit the offset's logits and recalibration move it
        raise ValueError("--rm_rehearsal and --rm_recalibrate are two ways of keeping the RM calibrated: use one")
    if cfg.rm_train_params not in ("auto", "adapter", "all"):
        raise ValueError(f"rm_train_params must be auto, adapter or all, got {cfg.rm_train_params!r}")
    rm = VerifyRM.from_pretrained(
        source, max_length=cfg.rm_max_length, device=_rm_device(), trainable_adapter=cfg.rm_train_params != "all"
    )
    if cfg.rm_train_params == "adapter" and not rm.is_adapter:
        raise ValueError(f"--rm_train_params adapter needs an RM saved as a LoRA adapter; {source} is a full model")
    rm.autocast = cfg.rm_bf16_autocast
    rm.configure_optimizer(lr=cfg.rm_learning_rate, weight_decay=cfg.rm_weight_decay, warmup_steps=cfg.rm_warmup_steps)
    negatives = make_negative_generator(
        cfg.negatives,
        cfg.assistant,
        seed=cfg.seed,
        concurrency=cfg.assistant_concurrency,
        timeout=cfg.assistant_timeout,
        max_retries=cfg.assistant_max_retries,
        max_tokens=cfg.assistant_max_tokens,
        temperature=cfg.assistant_temperature,
    )
    reward = CooperReward(
        rm,
        negatives,
        cfg.pairs_per_prompt,
        reference_positives=cfg.reference_positives,
        pairs_path=Path(cfg.output_dir) / "rm_pairs.jsonl" if cfg.log_rollouts else None,
        rehearsal=Rehearsal(
            load_rm_rows(cfg.rm_rehearsal), cfg.rm_rehearsal_rows, cfg.rm_rehearsal_weight, cfg.seed, cfg.rm_rehearsal
        )
        if cfg.rm_rehearsal
        else None,
        recalibration=Recalibration(load_rm_rows(recalibrate), cfg.rm_recalibrate_rows, cfg.seed, recalibrate)
        if recalibrate
        else None,
        monitor=monitor,
        batch_size=cfg.rm_batch_size,
        binary=cfg.rm_binary_reward,
        **common,
    )
    if checkpoint is not None:
        load_rm_state(reward, checkpoint)
    return reward


def fill_monitor_baseline(monitor: HackingMonitor, output_dir: str) -> None:
    """Give a resumed run's monitor the baseline signals its checkpoint lacks (saved before their check existed)
    from the run's logs. The monitor only warns, so a log it cannot read costs a warning, not the run."""
    try:
        filled = monitor.fill_baseline(logged_signals(output_dir))
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("hacking monitor: could not read the baseline signals from %s's logs (%s)", output_dir, e)
        return
    if filled:
        log.info("hacking monitor: baseline %s taken from the run's logs (the checkpoint predates them)", filled)


def sharded_weights(trainer) -> bool:
    """Whether the policy's weights are sharded across processes (FSDP or DeepSpeed)."""
    return bool(trainer.is_fsdp_enabled or trainer.is_deepspeed_enabled)


def sampler_logprobs_apply(cfg: RLConfig, trainer) -> bool:
    """Whether the old log-probs can come from the sampler: asked for, TRL needs them (several optimizer steps or
    iterations per generation batch), and the sampler is the fp32 policy (no vLLM, bf16 copy or autocast, no
    adapters, no tool calls, unsharded weights)."""
    return bool(
        cfg.sampler_logprobs
        and cfg.steps_per_generation * cfg.num_iterations > 1
        and not (cfg.use_vllm or cfg.bf16 or cfg.bf16_autocast or cfg.rollout_autocast or cfg.rollout_bf16_weights)
        and not hasattr(trainer.model, "peft_config")
        # sharded weights: generate runs synced across processes, and a process falling back to TRL's forward
        # alone would wait for the others in the weight gather
        and not sharded_weights(trainer)
        and not getattr(trainer, "tools", None)
    )


def build_trainer(cfg: RLConfig):
    """(GRPOTrainer, reward callable, info dict) ready to train; nothing is trained yet."""
    from transformers.trainer_callback import ProgressCallback
    from trl import GRPOConfig, GRPOTrainer

    from cooper_rl.models import load_tokenizer, resolve_model

    world = int(os.environ.get("WORLD_SIZE", "1"))
    per_step = cfg.prompts_per_step * cfg.num_generations
    if per_step % (world * cfg.gradient_accumulation_steps):
        raise ValueError(
            f"prompts_per_step * num_generations = {per_step} must be divisible by "
            f"processes ({world}) * gradient_accumulation_steps ({cfg.gradient_accumulation_steps})"
        )
    if cfg.console not in ("compact", "trl"):
        raise ValueError(f"console must be compact or trl, got {cfg.console!r}")
    if cfg.rollout_bf16_weights and cfg.use_vllm:
        raise ValueError("rollout_bf16_weights applies to HF generate; vLLM rollouts have their own dtype")
    check_trl()
    if cfg.compact_lm_head and not torch.cuda.is_available():
        score_completions_only()  # TRL's CPU path would also push prompt and padding positions through the LM head
    checkpoint = resolve_checkpoint(
        cfg.output_dir, cfg.resume_from_checkpoint, require=f"{RM_DIR}/{RM_STATE}" if cfg.reward == "cooper" else None
    )
    if int(os.environ.get("RANK", "0")) == 0:  # resumed steps are logged again; a fresh start owns its logs
        trim_logs(cfg.output_dir, -1 if checkpoint is None else checkpoint_step(checkpoint))
    tokenizer = load_tokenizer(cfg.policy)
    tokenizer.padding_side = "left"
    dataset, dropped = build_dataset(cfg, tokenizer)
    reward = build_reward(cfg, checkpoint if cfg.reward == "cooper" else None)
    args = GRPOConfig(
        output_dir=cfg.output_dir,
        seed=cfg.seed,
        max_steps=cfg.max_steps,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler_type,
        warmup_steps=cfg.warmup_steps,
        per_device_train_batch_size=per_step // (world * cfg.gradient_accumulation_steps),
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        steps_per_generation=cfg.steps_per_generation * cfg.gradient_accumulation_steps,  # TRL counts micro-steps
        num_iterations=cfg.num_iterations,
        num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        beta=cfg.beta,
        loss_type=cfg.loss_type,
        scale_rewards=cfg.scale_rewards,
        logging_steps=cfg.logging_steps,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        report_to=cfg.report_to,
        use_vllm=cfg.use_vllm,
        vllm_mode=cfg.vllm_mode,
        bf16=cfg.bf16 or cfg.bf16_autocast,
        use_cpu=not torch.cuda.is_available(),
        gradient_checkpointing=cfg.gradient_checkpointing,
        cache_implementation=cfg.cache_implementation,
        model_init_kwargs={"dtype": "bfloat16" if cfg.bf16 else "float32"},
    )
    trainer = GRPOTrainer(
        model=resolve_model(cfg.policy),
        reward_funcs=reward,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        callbacks=[RMCheckpointCallback(reward)] if cfg.reward == "cooper" else None,
    )
    epoch_exact_sampler(trainer)  # a resume after the first epoch keeps the prompt order (TRL's replays epoch 0's)
    if cfg.bf16_autocast and not cfg.bf16:
        trainer.add_callback(FP32Generation())
    if cfg.rollout_bf16_weights:
        if sharded_weights(trainer):  # the copy could not sync
            raise ValueError("rollout_bf16_weights needs unsharded weights (one process or DDP), not FSDP/DeepSpeed")
        bf16_rollout_copy(trainer)
    elif cfg.rollout_autocast:
        autocast_rollouts(trainer)
    # before the sampler's wrapper: that one must see TRL's whole call
    if cfg.shared_prefix and not sharded_weights(trainer) and can_share(trainer.model):
        install_shared_prefix(trainer, cfg.shared_prefix_mechanism)  # trims the padding too
        # micro-batches of whole groups: the same gradient where one optimizer step takes the whole generation
        # batch and its loss is the mean over equal micro-batches
        one_step = cfg.steps_per_generation * cfg.num_iterations == 1
        if cfg.gradient_accumulation_steps > 1 and one_step and cfg.loss_type in ("grpo", "dr_grpo", "dapo"):
            install_group_microbatches(trainer, cfg.num_generations)
    elif cfg.trim_padding and not sharded_weights(trainer):
        install_padding_trimmer(trainer)
    if sampler_logprobs_apply(cfg, trainer):
        install_sampler_logprobs(trainer)
    # vLLM has its own prefix caching
    if cfg.shared_prefix and not (cfg.use_vllm or sharded_weights(trainer)) and can_share(trainer.model):
        install_shared_prefill(trainer)  # after the other rollout wrappers: it must run first (outermost)
    # after the rollout wrappers, so the profiler's "generation" includes the bf16 copy's weight sync
    trainer.add_callback(StepProfiler(trainer, reward, Path(cfg.output_dir) / "timing.jsonl"))
    trainer.add_callback(ElapsedTime(checkpoint))  # the time to train, over every process of the run
    every = generation_batch_steps(cfg)
    if every > 1:  # checkpoints at the ends of generation batches only (resume is exact there)
        trainer.add_callback(SaveAtGenerationBoundary(every))
        if checkpoint is not None and checkpoint_step(checkpoint) % every:
            log.warning(
                "resuming from %s, inside a generation batch of %d steps: TRL generates a new batch there, and "
                "later checkpoints fall inside batches",
                checkpoint,
                every,
            )
    if cfg.console == "compact":
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(CompactConsole())
    if cfg.stop_on_hacking and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # each process monitors its own rollouts: they would flag at different steps and the others would hang
        raise ValueError("stop_on_hacking is single-process only (each process's monitor sees its own rollouts)")
    trainer.add_callback(HackingCallback(reward, stop=cfg.stop_on_hacking, every=every))
    if cfg.reward != "cooper":  # a cooper run checkpoints its monitor with the RM state
        trainer.add_callback(MonitorCheckpointCallback(reward.monitor))
        if checkpoint is not None:
            load_monitor_state(reward.monitor, checkpoint)
    if checkpoint is not None and reward.monitor is not None and int(os.environ.get("WORLD_SIZE", "1")) == 1:
        fill_monitor_baseline(reward.monitor, cfg.output_dir)
    if cfg.eval_steps > 0:
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            raise ValueError("eval_steps > 0 is single-process only; evaluate checkpoints with `cooper eval` instead")
        trainer.add_callback(EvalCallback(cfg, trainer, reward))
    return trainer, reward, {"checkpoint": checkpoint, "n_prompts": len(dataset), "n_dropped_long_prompts": dropped}


def run_rl(cfg: RLConfig) -> dict:
    """``cooper rl``: train, then save the policy (output_dir/policy), the RM in cooper mode (output_dir/rm) and
    output_dir/rl_summary.json. metrics.jsonl in output_dir has one line of reward metrics per step."""
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = {**asdict(cfg), "rm_sha256": rm_weights_sha256(cfg.rm) if cfg.reward != "rule" else None}
    if cfg.resume_from_checkpoint and (out / "rl_config.json").is_file():
        check_resume_identity(json.loads((out / "rl_config.json").read_text()), config, out / "rl_config.json")
    stale = sorted(p.name for p in out.glob("checkpoint-*"))
    if not cfg.resume_from_checkpoint and stale:  # a later resume could pick up the old run's checkpoint
        raise DataError(
            f"{out} holds checkpoints of an earlier run ({', '.join(stale[:3])}{', ...' if len(stale) > 3 else ''}): "
            "continue it with --resume_from_checkpoint last, or start the new run in another --output_dir"
        )
    atomic_write_json(out / "rl_config.json", config)
    # SIGTERM/SIGUSR1: checkpoint at the end of the generation batch in flight, stop, exit 143; caught from here on,
    # loading included (the ranks of a multi-process run would catch a signal at different steps and hang in the save)
    on_signal = SaveOnSignal(generation_batch_steps(cfg)) if int(os.environ.get("WORLD_SIZE", "1")) == 1 else None
    if cfg.stop_at and on_signal is None:
        raise ValueError("--stop_at is single-process only (the ranks would stop at different steps)")
    deadline = time.time() + seconds_until(cfg.stop_at) if cfg.stop_at else None
    timer = signal_at(cfg.stop_at)  # a deadline is a signal at that time
    # process-wide and for good: set by the run that owns the process (run_rl), not by build_trainer's other callers
    kept = cfg.keep_freed_memory and not torch.cuda.is_available() and keep_freed_memory()
    try:
        trainer, reward, info = build_trainer(cfg)
        if deadline is not None and cfg.eval_steps > 0:  # added before on_signal, which acts on its request
            trainer.add_callback(
                StopBeforeEvaluation(on_signal, deadline, cfg.eval_steps, out / "evals.jsonl", on_signal.every)
            )
        if on_signal is not None:
            train_until_signal(trainer, on_signal, info["checkpoint"], finish_loaded=True)
        else:  # (multi-process: the engine's own resume; a checkpoint at max_steps takes one step more there)
            trainer.train(resume_from_checkpoint=info["checkpoint"])
    finally:
        if timer is not None:
            timer.cancel()
        if on_signal is not None:
            on_signal.restore()
    elapsed = next(c for c in trainer.callback_handler.callbacks if isinstance(c, ElapsedTime))
    trainer.save_model(str(out / "policy"))
    summary = {
        "output_dir": str(out),
        "reward": cfg.reward,
        "global_step": trainer.state.global_step,
        "train_seconds": elapsed.process(),  # this process's, from the trainer built (evaluations included)
        # every process's that made this run (None: resumed from a checkpoint without the record)
        "train_seconds_total": elapsed.total(),
        **info,
        "freed_memory_kept": kept,  # keep_freed_memory applied (CPU, glibc)
        "policy_dir": str(out / "policy"),
        "last_metrics": reward.last_metrics,
    }
    if reward.monitor is not None:  # what the hacking monitor saw over the whole run
        summary["monitor"] = {
            "n_flags": reward.monitor.n_flags,
            "first_flag_step": reward.monitor.first_flag_step,
            "checks": reward.monitor.counts,
            # the step --stop_on_hacking ended the run at (None: it ran to max_steps or was not asked to stop)
            "stopped_at": next(
                (c.stopped_at for c in trainer.callback_handler.callbacks if isinstance(c, HackingCallback)), None
            ),
        }
    recorder = getattr(trainer, "_cooper_sampler_logprobs", None)
    if recorder is not None:  # generation batches whose old log-probs came from the sampler / from TRL's forward
        summary["sampler_logprobs"] = {"used": recorder.used, "fallbacks": recorder.fallbacks}
    shared = getattr(trainer, "_cooper_shared_prefix", None)
    if shared is not None:  # log-prob calls with each prompt computed once / sent to TRL's path; positions computed
        summary["shared_prefix"] = {"calls": shared.calls, "fallbacks": shared.fallbacks, "positions": shared.tokens}
    trimmer = getattr(trainer, "_cooper_padding_trimmer", None)
    if trimmer is not None:  # positions the log-prob forwards computed, and those of TRL's padded batches
        summary["padding_trimmer"] = {"positions": trimmer.columns}
    prefill = getattr(trainer, "_cooper_shared_prefill", None)
    if prefill is not None:  # generate calls that prefilled each distinct prompt once: [calls, rows, prompts]
        summary["shared_prefill"] = {"calls": prefill[0], "rows": prefill[1], "prompts": prefill[2]}
    if isinstance(reward, CooperReward) and trainer.is_world_process_zero():
        reward.rm.save_pretrained(out / "rm", {"cooper_rl_steps": trainer.state.global_step})
        summary["rm_dir"] = str(out / "rm")
    if trainer.is_world_process_zero():
        atomic_write_json(out / "rl_summary.json", summary)
        print(f"[rl] {summary['global_step']} steps, reward {summary['reward']}: {out}/rl_summary.json", flush=True)
    return summary

"""``cooper rl``: GRPO on math problems with a rule, model or Cooper (co-optimized) reward.

The RL engine is TRL's GRPOTrainer: G completions per prompt, group-normalised advantages
A_i = (r_i - mean(r)) / std(r), clipped policy-gradient loss, and a KL penalty to the reference policy with the
k3 estimator  KL = exp(ref - logp) - (ref - logp) - 1  weighted by beta (1e-3 in the paper). This module only
builds the dataset and the reward function (cooper/rewards.py) and hands both to TRL.

Prompts are the evaluation prompt (generation.PROMPT_TEMPLATE, answer in \\boxed{}), sent as a chat message when the
policy's tokenizer has a chat template (TRL applies it); rows carry `question` and `reference` columns for the
reward. Prompts longer than max_prompt_length tokens are dropped (and counted): TRL 1.16 has no prompt truncation.

In cooper mode the reward model is saved inside every TRL checkpoint and restored on resume (checkpoint.py).
Callbacks add per-step timing, fp32 rollouts under bf16 autocast and periodic evaluation (callbacks.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch

from cooper_rl import verify
from cooper_rl.cooper.monitor import HackingMonitor, logged_signals
from cooper_rl.cooper.negatives import make_negative_generator
from cooper_rl.cooper.rewards import CooperReward, ModelReward, RuleReward
from cooper_rl.formats import restyle
from cooper_rl.generation import PROMPT_TEMPLATE, chat_messages, render_messages
from cooper_rl.io import DataError, atomic_write_json
from cooper_rl.models import bf16_flag
from cooper_rl.rl.callbacks import (
    CompactConsole,
    EvalCallback,
    FP32Generation,
    HackingCallback,
    SaveAtGenerationBoundary,
    StepProfiler,
    autocast_rollouts,
    bf16_rollout_copy,
    install_padding_trimmer,
    install_sampler_logprobs,
)
from cooper_rl.rl.checkpoint import (
    RM_DIR,
    RM_STATE,
    MonitorCheckpointCallback,
    RMCheckpointCallback,
    checkpoint_step,
    load_monitor_state,
    load_rm_state,
    resolve_checkpoint,
    trim_logs,
)
from cooper_rl.rl.trl_internals import check_trl, score_completions_only
from cooper_rl.trainer_hooks import SaveOnSignal, train_until_signal

log = logging.getLogger(__name__)

BF16_VALUES = " true | false | auto (= true where bf16 matmuls are native: AVX512-BF16/AMX CPUs, bf16 GPUs)."


@dataclass
class RLConfig:
    """Options of ``cooper rl``."""

    reward: str = field(
        default="cooper",
        metadata={"help": "rule (verifier), model (frozen VerifyRM) or cooper (VerifyRM co-optimized)."},
    )
    policy: str = field(
        default="smollm2-135m-instruct", metadata={"help": "Policy: registry name, local path or hub id."}
    )
    rm: str = field(
        default="minilm-l6",
        metadata={"help": "Reward model (model/cooper): a trained VerifyRM dir, or a backbone for a fresh one."},
    )
    rm_max_length: int | None = field(default=None, metadata={"help": "RM input tokens (default: the RM's own)."})
    datasets: list[str] = field(
        default_factory=lambda: ["builtin:train:256"],
        metadata={
            "help": "Training problem sources (see cooper data). To train only on prompts the starting policy "
            "solves sometimes (GRPO learns nothing from a group whose rewards are all equal), pass the file that "
            "`cooper filter --policy POLICY --datasets ...` writes: pass rate of k samples in a band, per row."
        },
    )
    question_field: str | None = field(
        default=None, metadata={"help": "Question column of file sources (auto-detected if unset)."}
    )
    answer_field: str | None = field(
        default=None, metadata={"help": "Reference answer column of file sources (auto-detected if unset)."}
    )
    prompt_template: str = field(
        default=PROMPT_TEMPLATE, metadata={"help": "User message; format string with {question}."}
    )
    num_generations: int = field(
        default=4, metadata={"help": "G: rollouts per prompt, the group over which GRPO normalises rewards."}
    )
    prompts_per_step: int = field(default=2, metadata={"help": "Prompts per optimizer step (over all processes)."})
    gradient_accumulation_steps: int = field(
        default=1,
        metadata={"help": "Micro-batches per optimizer step (prompts_per_step * num_generations is split over them)."},
    )
    beta: float = field(
        default=1e-3,
        metadata={"help": "KL coefficient (k3 estimator) to the reference policy (paper: 1e-3; 0: no KL term)."},
    )
    learning_rate: float = field(default=1e-6, metadata={"help": "Policy learning rate (AdamW; paper: 1e-6)."})
    lr_scheduler_type: str = field(
        default="constant",
        metadata={"help": "Policy learning-rate schedule (transformers names: constant, linear, cosine, ...)."},
    )
    warmup_steps: int = field(
        default=0,
        metadata={
            "help": "Optimizer steps of linear learning-rate warm-up from 0 (policy; 0: none); needs a schedule "
            "that has one: constant_with_warmup, linear, cosine, ..."
        },
    )
    loss_type: str = field(default="grpo", metadata={"help": "TRL loss_type: grpo (paper), dapo, dr_grpo, bnpo, ..."})
    scale_rewards: str = field(
        default="group",
        metadata={
            "help": "GRPO advantage = reward - its group's mean, divided by (TRL scale_rewards): group (the group's "
            "reward std; paper's GRPO), batch (the generation batch's std) or none (no division, as Dr. GRPO)."
        },
    )
    temperature: float = field(default=1.0, metadata={"help": "Rollout sampling temperature (paper: 1.0)."})
    top_p: float = field(default=1.0, metadata={"help": "Rollout nucleus sampling threshold."})
    max_prompt_length: int | None = field(
        default=512, metadata={"help": "Drop training prompts longer than this, in tokens (0: keep all)."}
    )
    max_completion_length: int = field(
        default=128, metadata={"help": "Longest rollout, in new tokens (paper: 512; CPU preset: 128)."}
    )
    rm_learning_rate: float = field(
        default=1e-5, metadata={"help": "AdamW learning rate of the co-optimized RM (paper: 1e-5)."}
    )
    rm_weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay of the co-optimized RM."})
    rm_warmup_steps: int = field(
        default=0, metadata={"help": "RM updates with a linear learning-rate warm-up (0: none)."}
    )
    rm_batch_size: int = field(
        default=64, metadata={"help": "Sequences per RM scoring forward pass (model and cooper rewards)."}
    )
    rm_binary_reward: bool = field(
        default=False,
        metadata={
            "help": "Model and cooper rewards: 1 where the RM's score (sigmoid) is >= 0.5, else 0, instead of the "
            "score itself (the authors' reward_model.reward_scale). GRPO then ranks only what the RM accepts above "
            "what it rejects, not one rejected answer above another. Cooper's RM update still uses the scores."
        },
    )
    negatives: str = field(
        default="corrupt",
        metadata={
            "help": "Cooper negatives, one kind or several joined by commas (one pair per positive and kind): "
            "corrupt (offline rewrite of the positive's final result; paper-style), api / local (an assistant LLM "
            "rewrites it; the paper's), mined (the prompt's own rollout that the rule confidently rejects and the RM "
            "scores highest; rollouts with no extractable answer are never mined: they may be right in a form the rule "
            "cannot read), truncate (the positive cut before its final answer), masterkey (':', 'Solution', "
            "\"Let's solve this step by step.\" ...; arXiv 2507.08794), prefix (the positive's final result "
            "replaced by a proper prefix of the reference's digits: 2 or 23 for 232), echo (... by a number copied "
            "from the question). E.g. corrupt,mined,truncate"
        },
    )
    assistant: str | None = field(
        default=None,
        metadata={"help": "Assistant LLM for negatives: openai:MODEL@http://HOST:PORT/v1 (api) or hf:NAME (local)."},
    )
    assistant_concurrency: int = field(
        default=16, metadata={"help": "Assistant requests in flight at once (api negatives)."}
    )
    assistant_timeout: float = field(default=60.0, metadata={"help": "Seconds per assistant request."})
    assistant_max_retries: int = field(
        default=1, metadata={"help": "Retries of a failed assistant request (timeouts, 429, 5xx)."}
    )
    assistant_max_tokens: int = field(
        default=1024, metadata={"help": "Longest negative the assistant may write, in tokens."}
    )
    assistant_temperature: float = field(
        default=0.7, metadata={"help": "Assistant sampling temperature for negatives."}
    )
    pairs_per_prompt: int = field(
        default=1,
        metadata={
            "help": "Up to N (positive, negative) pairs per prompt and negative kind (paper: 1): distinct verified "
            "rollouts first, then the same ones again with other negatives (mined: the next wrong rollout; a pair "
            "made twice is masked as a duplicate)."
        },
    )
    reference_positives: bool = field(
        default=False,
        metadata={
            "help": "Cooper, beyond the paper: a prompt with no rule-verified rollout takes its worked solution (the "
            "problem's `solution`, final line in the prompt's \\boxed{} format, as cooper sft trains on it) as the "
            "positive, paired with every negative kind (mined: that prompt's confidently wrong rollout the RM scores "
            "highest). Keeps the RM corrected where the policy fails; with rollout positives only, Cooper's updates "
            "vanish as the policy collapses (docs/RESULTS.md)."
        },
    )
    monitor_window: int = field(
        default=20,
        metadata={
            "help": "Hacking monitor: steps (reward calls) compared, first half vs second half of the window; the "
            "baseline checks compare the last half window with the run's first half window (cooper/monitor.py)."
        },
    )
    monitor_reward_rise: float = field(
        default=0.1,
        metadata={
            "help": "Hacking monitor: least rise of the mean reward over the window (second half vs first) that flags a step."
        },
    )
    monitor_acc_drop: float = field(
        default=0.05,
        metadata={
            "help": "Hacking monitor: least fall of the rollouts' rule accuracy over the window that flags a step (both must hold)."
        },
    )
    monitor_fooled_rise: float = field(
        default=0.2,
        metadata={
            "help": "Hacking monitor: least rise of the RM-fooled rate (rule-wrong rollouts scored >= 0.5), last half "
            "window vs the run's first half window, that flags a step."
        },
    )
    monitor_agreement_drop: float = field(
        default=0.2,
        metadata={
            "help": "Hacking monitor: least fall of RM-vs-rule agreement (last half window vs first) that flags."
        },
    )
    monitor_length_ratio: float = field(
        default=0.5,
        metadata={
            "help": "Hacking monitor: flag when the mean completion length of the last half window is at most this "
            "fraction of the run's first half window (the collapse to one-token answers)."
        },
    )
    monitor_entropy_ratio: float = field(
        default=0.5,
        metadata={
            "help": "Hacking monitor: flag when the policy's token entropy (TRL's, averaged over the optimizer steps "
            "since the last reward call) falls to this fraction of its start."
        },
    )
    monitor_acc_fall: float = field(
        default=0.15,
        metadata={
            "help": "Hacking monitor: least fall of the rollouts' rule accuracy (last half window vs the run's first "
            "half window) that flags a step while the mean reward has not fallen (a reward that no longer tracks "
            "correctness)."
        },
    )
    monitor_acc_fall_margin: float = field(
        default=0.05,
        metadata={
            "help": "Hacking monitor: the rule-accuracy fall flags only where the mean reward also exceeds the rule "
            "accuracy by at least this much (the reward pays for wrong answers)."
        },
    )
    monitor_wrong_reward_rise: float = field(
        default=0.05,
        metadata={
            "help": "Hacking monitor: least rise of the reward paid to rule-wrong rollouts (mean over all rollouts of "
            "reward x rule-wrong), last half window vs the run's first half window, that flags a step (0 under the "
            "rule reward)."
        },
    )
    stop_on_hacking: bool = field(
        default=False,
        metadata={
            "help": "Stop the run cleanly (checkpoint saved, RM included) at the end of the generation batch in "
            "which the monitor first flags (single process)."
        },
    )
    verify_timeout: float = field(
        default=verify.DEFAULT_TIMEOUT,
        metadata={"help": "Rule-verifier limit per symbolic check (s); a check past it counts as wrong."},
    )
    max_steps: int = field(default=100, metadata={"help": "Optimizer steps to train."})
    save_steps: int = field(
        default=50, metadata={"help": "Checkpoint (policy, optimizer and, in cooper mode, the RM) every N steps."}
    )
    save_total_limit: int | None = field(default=None, metadata={"help": "Keep at most N checkpoints (None: all)."})
    logging_steps: int = field(default=1, metadata={"help": "Log TRL metrics every N steps."})
    output_dir: str = field(
        default="results/rl",
        metadata={"help": "Where checkpoints, logs (metrics/rollouts/timing/evals jsonl), policy/ and rm/ go."},
    )
    seed: int = field(
        default=0, metadata={"help": "Seed of training, sampling, negatives and the built-in problem generator."}
    )
    data_seed: int | None = field(
        default=None,
        metadata={
            "help": "Seed of the built-in problem generator only (default: seed). Fix it to train every seed of an "
            "experiment on the same prompts, and set it apart from the warm-up's (cooper sft --seed) so RL does "
            "not train on the problems the policy was warmed up on."
        },
    )
    report_to: str = field(default="none", metadata={"help": "none, tensorboard, wandb, trackio, ..."})
    use_vllm: bool = field(
        default=False, metadata={"help": "Generate rollouts with vLLM (GPU; install the vllm extra)."}
    )
    vllm_mode: str = field(default="colocate", metadata={"help": "colocate or server (TRL)."})
    bf16: bool = field(default=False, metadata={"help": "Policy weights in bf16 (GPU); on CPU prefer bf16_autocast."})
    bf16_autocast: str = field(
        default="false",
        metadata={
            "help": "fp32 weights/optimizer, bf16 autocast for the log-prob forwards and backward (CPU with AMX: ~1.5x "
            "faster update); rollouts follow rollout_autocast. Values:" + BF16_VALUES
        },
    )
    gradient_checkpointing: bool = field(
        default=False, metadata={"help": "Recompute activations in the backward pass (less memory, slower)."}
    )
    rollout_autocast: str = field(
        default="false",
        metadata={
            "help": "Generate rollouts under bf16 autocast (fp32 master weights; ~2x faster decode on CPUs with AMX); "
            "the sampling distribution differs from fp32 sampling only by bf16 rounding. Values:" + BF16_VALUES
        },
    )
    console: str = field(
        default="compact",
        metadata={
            "help": "compact: one line per step (reward, rule accuracy, RM-rule agreement, valid pairs, RM loss, "
            "fooled rate, monitor, s/step); trl: TRL's progress bar and raw log dicts. Logs and trackers get "
            "every number either way."
        },
    )
    rm_bf16_autocast: str = field(
        default="false",
        metadata={
            "help": "VerifyRM scoring and updates under bf16 autocast (fp32 RM weights and optimizer; CPUs with AMX: "
            "faster, most for a decoder-LLM RM). Values:" + BF16_VALUES
        },
    )
    rollout_bf16_weights: str = field(
        default="false",
        metadata={
            "help": "Generate rollouts with a bf16 copy of the policy refreshed from the fp32 master weights before "
            "each generation batch (bf16 KV cache too; faster than rollout_autocast on CPU, same bf16 rounding of the "
            "sampling distribution); HF generate only. Supersedes rollout_autocast. Values:" + BF16_VALUES
        },
    )
    steps_per_generation: int = field(
        default=1,
        metadata={
            "help": "Optimizer steps that share one generation batch: rollouts of prompts_per_step x N prompts are "
            "generated at once (a larger, faster decode batch) and split over N optimizer steps, each on "
            "prompts_per_step x G rollouts; steps 2..N are slightly off-policy, which GRPO's clipped importance "
            "ratio covers (TRL). 1 = the paper's on-policy step."
        },
    )
    num_iterations: int = field(
        default=1,
        metadata={"help": "GRPO iterations (mu): optimizer passes over each generation batch (paper: 1)."},
    )
    compact_lm_head: bool = field(
        default=True,
        metadata={
            "help": "On CPU, TRL's fused LM head scores only the completion positions, as it does on GPUs (identical "
            "log-probs and gradients, less work); false: TRL's own CPU path, which scores every position."
        },
    )
    trim_padding: bool = field(
        default=True,
        metadata={
            "help": "Log-prob forwards (loss, reference, old) skip the padding all rows of a call share; reference "
            "and old log-probs are computed in chunks of similar completion length. TRL pads every micro-batch to "
            "the longest prompt and completion of the whole generation batch. Same values (tested); single process "
            "or DDP."
        },
    )
    sampler_logprobs: bool = field(
        default=True,
        metadata={
            "help": "When old log-probs are needed (steps_per_generation or num_iterations > 1) and rollouts come "
            "from the fp32 policy itself, take them from the sampling step instead of a second forward over the "
            "batch (equal up to float rounding; the loss is unchanged). Off by itself under a bf16 rollout copy, "
            "rollout or log-prob autocast, vLLM."
        },
    )
    cache_implementation: str | None = field(
        default=None, metadata={"help": "KV cache of HF generate rollouts (e.g. static); default dynamic."}
    )
    resume_from_checkpoint: str | None = field(
        default=None, metadata={"help": "A checkpoint-N dir, or 'last' for the newest in output_dir."}
    )
    log_rollouts: bool = field(
        default=True,
        metadata={"help": "Append every rollout with its verdict and reward to output_dir/rollouts.jsonl."},
    )
    eval_steps: int = field(
        default=0,
        metadata={
            "help": "Evaluate the policy (avg@k; the RM with rm_eval_data) every N steps and at step 0 (0: never)."
        },
    )
    eval_datasets: list[str] = field(
        default_factory=lambda: ["builtin:test:32"], metadata={"help": "Held-out problem sources for avg@k."}
    )
    eval_k: int = field(default=4, metadata={"help": "Samples per problem in the periodic evaluation (paper: 8)."})
    eval_max_new_tokens: int | None = field(
        default=None,
        metadata={"help": "Longest completion in the periodic evaluation, in tokens (default: max_completion_length)."},
    )
    eval_batch_size: int = field(
        default=64, metadata={"help": "Sequences per generate() call in the periodic evaluation."}
    )
    rm_eval_data: str | None = field(
        default=None, metadata={"help": "Labelled file for the RM's accuracy over training (model/cooper)."}
    )
    eval_step0_from: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Run dirs whose finished step-0 policy evaluation to reuse (the first of the same policy file, "
            "seed, precision and evaluation settings; its samples are copied): every run of one policy and seed "
            "evaluates the same step-0 policy with the same sampling seed. A run's committed logs (gzipped samples) "
            "count as a run dir. The RM is still evaluated."
        },
    )

    def __post_init__(self):
        if self.scale_rewards not in ("group", "batch", "none"):
            raise ValueError(f"--scale_rewards must be group, batch or none (got {self.scale_rewards!r})")
        if self.warmup_steps and self.lr_scheduler_type == "constant":  # transformers would ignore the warm-up
            raise ValueError("--warmup_steps needs --lr_scheduler_type constant_with_warmup (or linear, cosine, ...)")
        if self.rm_binary_reward and self.reward == "rule":
            raise ValueError("--rm_binary_reward is an RM option: it needs --reward model or cooper (got rule)")
        # 'auto' bf16 options become what this machine runs natively; rl_config.json records the resolved values
        for name in ("bf16_autocast", "rollout_autocast", "rollout_bf16_weights", "rm_bf16_autocast"):
            setattr(self, name, bf16_flag(getattr(self, name)))


def generation_batch_steps(cfg: RLConfig) -> int:
    """Optimizer steps that share one generation batch (TRL generates every steps_per_generation x num_iterations
    steps): checkpoints and clean stops go at multiples of it."""
    return max(1, cfg.steps_per_generation * cfg.num_iterations)


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
    rm = VerifyRM.from_pretrained(source, max_length=cfg.rm_max_length, device=_rm_device())
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
    if cfg.bf16_autocast and not cfg.bf16:
        trainer.add_callback(FP32Generation())
    if cfg.rollout_bf16_weights:
        if sharded_weights(trainer):  # the copy could not sync
            raise ValueError("rollout_bf16_weights needs unsharded weights (one process or DDP), not FSDP/DeepSpeed")
        bf16_rollout_copy(trainer)
    elif cfg.rollout_autocast:
        autocast_rollouts(trainer)
    if cfg.trim_padding and not sharded_weights(trainer):
        install_padding_trimmer(trainer)  # before the sampler's wrapper: that one must see TRL's whole call
    if sampler_logprobs_apply(cfg, trainer):
        install_sampler_logprobs(trainer)
    # after the rollout wrappers, so the profiler's "generation" includes the bf16 copy's weight sync
    trainer.add_callback(StepProfiler(trainer, reward, Path(cfg.output_dir) / "timing.jsonl"))
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


# What a run optimizes. Resuming with other values would mix two experiments in one run dir (and rl_config.json
# would show only the second), so run_rl refuses it; the other fields (max_steps, logging, evaluation, speed
# options whose results are the same) may change on resume.
RUN_IDENTITY = {
    "all": (
        "reward", "policy", "datasets", "question_field", "answer_field", "prompt_template", "num_generations",
        "prompts_per_step", "gradient_accumulation_steps", "beta", "learning_rate", "lr_scheduler_type", "warmup_steps", "loss_type",
        "scale_rewards", "temperature", "top_p", "max_prompt_length", "max_completion_length", "seed", "data_seed",
        "steps_per_generation", "num_iterations",
    ),
    "model": ("rm", "rm_max_length", "rm_sha256", "rm_binary_reward"),
    "cooper": (
        "rm", "rm_max_length", "rm_sha256", "rm_binary_reward", "rm_learning_rate", "rm_weight_decay", "rm_warmup_steps",
        "negatives", "assistant", "pairs_per_prompt", "reference_positives",
    ),
}  # fmt: skip


def rm_weights_sha256(rm: str | None) -> str | None:
    """sha256 of a VerifyRM directory's model.safetensors (the static/initial RM's identity); None for a backbone
    name or a directory without that file."""
    f = Path(rm) / "model.safetensors" if rm else None
    if f is None or not f.is_file():
        return None
    h = hashlib.sha256()
    with open(f, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def check_resume_identity(previous: dict, current: dict, path: Path) -> None:
    """Raise DataError naming the differing fields if `current` (rl_config of a resume) is another experiment than
    `previous` (the run dir's rl_config.json)."""
    reward = previous.get("reward")
    keys = RUN_IDENTITY["all"] + RUN_IDENTITY.get(reward, ())
    defaults = {f.name: f.default for f in fields(RLConfig)}  # a field newer than the run had its default then
    diffs = [
        f"{k}: {previous.get(k, defaults.get(k))!r} -> {current.get(k)!r}"
        for k in keys
        if (k in previous or k in defaults) and previous.get(k, defaults.get(k)) != current.get(k)
    ]
    if diffs:
        raise DataError(
            f"{path}: the run in this output_dir was started with other settings ({'; '.join(diffs)}); resume it "
            "with the same ones, or give the new experiment its own --output_dir"
        )


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
    try:
        trainer, reward, info = build_trainer(cfg)
        if on_signal is not None:
            train_until_signal(trainer, on_signal, info["checkpoint"])
        else:
            trainer.train(resume_from_checkpoint=info["checkpoint"])
    finally:
        if on_signal is not None:
            on_signal.restore()
    trainer.save_model(str(out / "policy"))
    summary = {
        "output_dir": str(out),
        "reward": cfg.reward,
        "global_step": trainer.state.global_step,
        **info,
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
    if isinstance(reward, CooperReward) and trainer.is_world_process_zero():
        reward.rm.save_pretrained(out / "rm", {"cooper_rl_steps": trainer.state.global_step})
        summary["rm_dir"] = str(out / "rm")
    if trainer.is_world_process_zero():
        atomic_write_json(out / "rl_summary.json", summary)
        print(f"[rl] {summary['global_step']} steps, reward {summary['reward']}: {out}/rl_summary.json", flush=True)
    return summary

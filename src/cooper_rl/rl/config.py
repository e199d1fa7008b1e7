"""The options of ``cooper rl`` (RLConfig: one field per flag, with its help line) and what makes a run itself:
the fields a resume must not change, and the RM's identity (sha256 of its weights)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from cooper_rl import verify
from cooper_rl.generation import PROMPT_TEMPLATE
from cooper_rl.io import DataError, weights_sha256
from cooper_rl.models import VERIFYRM, bf16_flag, resolve_model

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
        default="verifyrm",
        metadata={
            "help": "Reward model (model/cooper): verifyrm (the shipped VerifyRM), a trained VerifyRM dir, or a "
            "backbone for a fresh, untrained one."
        },
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
        default=128, metadata={"help": "Longest rollout, in new tokens (paper: 512; CPU presets: 128)."}
    )
    rm_learning_rate: float = field(
        default=1e-5, metadata={"help": "AdamW learning rate of the co-optimized RM (paper: 1e-5)."}
    )
    rm_train_params: str = field(
        default="auto",
        metadata={
            "help": "What the co-optimized RM's online update moves: adapter (a LoRA RM such as the shipped "
            "`verifyrm`: its adapter and score head, the backbone frozen; the run's RM is saved as an adapter of a "
            "few MB), all (every weight; an adapter is merged first), auto (adapter where the RM is one, else all)."
        },
    )
    rm_rehearsal: str | None = field(
        default=None,
        metadata={
            "help": "Beyond the paper: labelled rows (question, reference, completion, label; e.g. the RM's own "
            "offline training data) of which each RM update also fits rm_rehearsal_rows by BCE, so the RM keeps its "
            "calibration on text unlike its policy's (cooper/rehearsal.py). Off (None) by default."
        },
    )
    rm_rehearsal_rows: int = field(default=16, metadata={"help": "Rehearsed rows drawn per RM update."})
    rm_rehearsal_weight: float = field(
        default=1.0, metadata={"help": "Weight of the rehearsed rows' mean BCE beside the pairs' mean loss."}
    )
    rm_recalibrate: str | None = field(
        default="auto",
        metadata={
            "help": "Beyond the paper: labelled rows whose label-0 rows are known negatives (e.g. other models' wrong "
            "completions of training questions, labelled by the rule); after each RM update the RM's threshold "
            "rises just enough that it accepts no more of them than the starting RM did; the ranking is untouched "
            "(cooper/recalibration.py). auto (default, issue 106's decision): the known negatives shipped with "
            "cooper (GSM8K-style wrong solutions), unless --rm_rehearsal is given; none: off, the paper's Cooper."
        },
    )
    rm_recalibrate_rows: int = field(
        default=256, metadata={"help": "Known negatives drawn once (seeded) from rm_recalibrate, scored per update."}
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
            "vanish as the policy collapses (experiments/reward_hacking/README.md)."
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
    shared_prefix: bool = field(
        default=True,
        metadata={
            "help": "Compute each group's prompt once: HF-generate rollouts prefill each distinct prompt once, and the "
            "log-prob forwards (loss, reference, old) run one forward of the distinct prompts whose key/value cache "
            "the group's completions attend to; the gradient of the prompt positions is the sum over the group "
            "(exact up to float rounding; tested). Trims padding as trim_padding does. Where it cannot apply "
            "(multimodal, DDP/FSDP/DeepSpeed, non-rotary or sliding-window decoders, the loss under gradient "
            "checkpointing with shared_prefix_mechanism cache) TRL's path runs; vLLM has its own prefix caching. "
            "false: every row forwards its prompt."
        },
    )
    shared_prefix_mechanism: str = field(
        default="auto",
        metadata={
            "help": "How shared_prefix computes a prompt once in the log-prob forwards: cache (a forward of the "
            "distinct prompts, whose key/value cache each row's completion attends to), packed (one sequence per "
            "group, the prompt then every completion, with a prefix/suffix attention mask: Prefix Grouper's form; "
            "it also shares the loss forward under gradient checkpointing, where cache falls back to TRL's path) "
            "or auto (cache, packed under gradient checkpointing). Same values either way (tested); speed: "
            "benchmarks/README.md."
        },
    )
    keep_freed_memory: bool = field(
        default=True,
        metadata={
            "help": "On CPU under glibc: freed memory stays in the process for reuse (mallopt: no mmap of large "
            "blocks, no trimming) instead of going back to the OS, so the large tensors of every forward and "
            "backward are not page-faulted in anew each time; same values; the process keeps the memory of its "
            "peak. Set by run_rl (`cooper rl`) for its whole process. false: glibc's defaults."
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
    stop_at: str | None = field(
        default=None,
        metadata={
            "help": "A wall-clock budget: HH:MM (UTC, the next such time), an ISO time, or +SECONDS from the start. "
            "Then the run checkpoints at the end of its generation batch and stops with exit code 143 (resume "
            "with --resume_from_checkpoint last), as on SIGTERM: a job that must end by a deadline loses no "
            "finished step; when a periodic evaluation (--eval_steps) would end after the deadline (estimated from "
            "this run's step times and its longest evaluation so far), it stops at the step before it instead, and "
            "the resumed run evaluates. Single process."
        },
    )
    log_rollouts: bool = field(
        default=True,
        metadata={
            "help": "Append every rollout with its verdict and reward to output_dir/rollouts.jsonl (and, with "
            "reward cooper, every RM training pair to output_dir/rm_pairs.jsonl)."
        },
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
    eval_data_seed: int | None = field(
        default=0,
        metadata={
            "help": "Seed of the built-in problem generator for the periodic evaluation: the same held-out problems at "
            "every evaluation and in every run, so gains pair by problem (None: seed + step, runs before 2026-12-01)."
        },
    )
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
        if isinstance(self.rm_recalibrate, str) and self.rm_recalibrate.strip().lower() in ("", "none"):
            self.rm_recalibrate = None  # off: recorded as null, as runs before the option was the default
        if self.rm_binary_reward and self.reward == "rule":
            raise ValueError("--rm_binary_reward is an RM option: it needs --reward model or cooper (got rule)")
        # 'auto' bf16 options become what this machine runs natively; rl_config.json records the resolved values
        for name in ("bf16_autocast", "rollout_autocast", "rollout_bf16_weights", "rm_bf16_autocast"):
            setattr(self, name, bf16_flag(getattr(self, name)))


def generation_batch_steps(cfg: RLConfig) -> int:
    """Optimizer steps that share one generation batch (TRL generates every steps_per_generation x num_iterations
    steps): checkpoints and clean stops go at multiples of it."""
    return max(1, cfg.steps_per_generation * cfg.num_iterations)


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
        "rm", "rm_max_length", "rm_sha256", "rm_binary_reward", "rm_learning_rate", "rm_train_params", "rm_weight_decay",
        "rm_warmup_steps", "rm_rehearsal", "rm_rehearsal_rows", "rm_rehearsal_weight", "rm_recalibrate", "rm_recalibrate_rows", "negatives", "assistant", "pairs_per_prompt", "reference_positives",
    ),
}  # fmt: skip


def rm_weights_sha256(rm: str | None) -> str | None:
    """sha256 of a VerifyRM's weights file (model.safetensors, or a LoRA RM's adapter_model.safetensors; the
    static/initial RM's identity; the shipped `verifyrm`'s too); None for a backbone name or a directory without
    either file."""
    if rm == VERIFYRM and not Path(rm).exists():
        rm = resolve_model(VERIFYRM)
    return weights_sha256(rm)


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

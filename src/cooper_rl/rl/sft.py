"""``cooper sft``: a short supervised warm-up of the policy on worked solutions, before RL.

A policy that never answers correctly gives RL nothing to work with: the rule reward is 0 for every
rollout (zero advantages, no gradient) and Cooper finds no positive to pair. The embedded SmolLM2-135M
is such a policy on these tasks (strict avg@4 ~0% at step 0). This command fine-tunes it on
(question, worked solution) pairs with TRL's SFTTrainer — the same chat prompt as `cooper rl`, loss on
the solution tokens only, the solution's final line rewritten to the prompt's answer format
(`The answer is $\\boxed{N}$.`) — and saves a policy directory that `cooper rl --policy DIR` takes.

Sources: any problem source of `cooper data` whose rows carry a worked solution ending in `#### N`
(built-in tasks, GSM8K); rows without one are skipped and counted.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from cooper_rl.generation import PROMPT_TEMPLATE, chat_messages
from cooper_rl.io import atomic_write_json
from cooper_rl.models import bf16_flag


@dataclass
class SFTRunConfig:
    """Options of ``cooper sft``."""

    policy: str = field(
        default="smollm2-135m-instruct", metadata={"help": "Policy: registry name, local path or hub id."}
    )
    datasets: list[str] = field(
        default_factory=lambda: ["builtin:train:2000:1,2"],
        metadata={"help": "Problem sources whose rows carry a worked solution ending in '#### N' (see cooper data)."},
    )
    answer_style: str = field(
        default="boxed",
        metadata={"help": "Final line of each solution: boxed (\\boxed{N}), hash (#### N), answer_is or plain."},
    )
    prompt_template: str = field(
        default=PROMPT_TEMPLATE,
        metadata={
            "help": "User message; format string with {question} (the same prompt as cooper rl and cooper eval)."
        },
    )
    num_train_epochs: float = field(
        default=1.0, metadata={"help": "Passes over the solutions (max_steps > 0 overrides)."}
    )
    max_steps: int = field(default=-1, metadata={"help": "Stop after N optimizer steps (-1: the epochs decide)."})
    batch_size: int = field(default=8, metadata={"help": "Examples per optimizer step."})
    learning_rate: float = field(
        default=5e-5,
        metadata={"help": "AdamW learning rate (cosine schedule after a warm-up over the first 5 percent of steps)."},
    )
    max_length: int = field(
        default=512, metadata={"help": "Longest prompt + solution, in tokens (longer ones are truncated)."}
    )
    bf16_autocast: str = field(
        default="false",
        metadata={
            "help": "fp32 weights, bf16 autocast compute (CPU with AMX: ~1.5x): true | false | auto (= true where "
            "bf16 matmuls are native)."
        },
    )
    save_steps: int = field(
        default=50,
        metadata={
            "help": "Checkpoint every N steps (the last one is kept, for --resume_from_checkpoint); 0: no "
            "checkpoints, only the final policy/ (a killed run starts over)."
        },
    )
    compact_lm_head: bool = field(
        default=True,
        metadata={
            "help": "On CPU, TRL's fused LM head scores only the solution positions (identical loss and gradients, "
            "less work: the prompt is ~2/3 of a built-in row); false: TRL's CPU path, which scores every position."
        },
    )
    resume_from_checkpoint: str | None = field(
        default=None, metadata={"help": "A checkpoint-N dir, or 'last' for the newest complete one in output_dir."}
    )
    output_dir: str = field(
        default="results/sft", metadata={"help": "Where checkpoints, policy/ (safetensors) and sft_summary.json go."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of training and of the built-in problem generator."})

    def __post_init__(self):
        self.bf16_autocast = bf16_flag(self.bf16_autocast)  # "auto" -> what this machine runs natively


def sft_rows(cfg: SFTRunConfig) -> tuple[list[dict], int]:
    """(prompt/completion chat rows, number of problems skipped for lacking a '#### N' solution)."""
    from cooper_rl.data import load_problems
    from cooper_rl.formats import restyle

    rows, skipped = [], 0
    for source in cfg.datasets:
        for p in load_problems(source, seed=cfg.seed).problems:
            target = restyle(p.solution, cfg.answer_style, drop_calc=True) if p.solution else None
            if target is None:
                skipped += 1
                continue
            rows.append(
                {
                    "prompt": chat_messages(p.question, cfg.prompt_template),
                    "completion": [{"role": "assistant", "content": target}],
                }
            )
    if not rows:
        raise ValueError(f"no worked solutions ending in '#### N' in {cfg.datasets}")
    return rows, skipped


def run_sft(cfg: SFTRunConfig) -> dict:
    """Fine-tune the policy on worked solutions; save it (safetensors + tokenizer) to output_dir/policy and
    output_dir/sft_summary.json."""
    from cooper_rl.trainer_hooks import SaveOnSignal

    on_signal = SaveOnSignal()  # SIGTERM/SIGUSR1 from here on, loading included: checkpoint, stop, exit 143
    try:
        return _run_sft(cfg, on_signal)
    finally:
        on_signal.restore()


def _run_sft(cfg: SFTRunConfig, on_signal) -> dict:
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from cooper_rl.models import load_tokenizer, resolve_model
    from cooper_rl.rl.trl_internals import score_completions_only
    from cooper_rl.trainer_hooks import ElapsedTime, bar_only_progress, resolve_checkpoint, train_until_signal

    if cfg.compact_lm_head and not torch.cuda.is_available():
        score_completions_only()  # the prompt and padding positions would also go through the 49k-word head
    out = Path(cfg.output_dir)
    checkpoint = resolve_checkpoint(out, cfg.resume_from_checkpoint)  # before any work: a bad value fails at once
    out.mkdir(parents=True, exist_ok=True)
    rows, skipped = sft_rows(cfg)
    tokenizer = load_tokenizer(cfg.policy)
    tokenizer.padding_side = "right"
    args = SFTConfig(
        output_dir=str(out),
        seed=cfg.seed,
        num_train_epochs=cfg.num_train_epochs,
        max_steps=cfg.max_steps,
        per_device_train_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=0.05,
        max_length=cfg.max_length,
        completion_only_loss=True,
        logging_steps=5,
        save_strategy="steps" if cfg.save_steps > 0 else "no",
        save_steps=max(cfg.save_steps, 1),
        save_total_limit=1,
        report_to="none",
        bf16=cfg.bf16_autocast,
        use_cpu=not torch.cuda.is_available(),
        model_init_kwargs={"dtype": "float32"},
    )
    trainer = SFTTrainer(
        model=resolve_model(cfg.policy), args=args, train_dataset=Dataset.from_list(rows), processing_class=tokenizer
    )
    bar_only_progress(trainer)  # progress bar, no raw log dicts on the console
    trainer.add_callback(ElapsedTime(checkpoint))  # the time to train, over every process of the run
    result = train_until_signal(trainer, on_signal, checkpoint, finish_loaded=True)
    # the callback list's (transformers' callback restore, where enabled, replaces the instance)
    elapsed = next(c for c in trainer.callback_handler.callbacks if isinstance(c, ElapsedTime))
    train_seconds, train_seconds_total = elapsed.process(), elapsed.total()  # training's, not the saves below
    policy_dir = out / "policy"
    trainer.save_model(str(policy_dir))  # safetensors
    tokenizer.padding_side = "left"
    tokenizer.save_pretrained(str(policy_dir))
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    summary = {
        "policy_dir": str(policy_dir),
        "n_examples": len(rows),
        "n_skipped": skipped,
        "global_step": trainer.state.global_step,
        "resumed_from": checkpoint,
        "train_seconds": train_seconds,  # this process's
        "train_seconds_total": train_seconds_total,  # every process's that made it (None: resumed from an unrecorded checkpoint)
        "train_loss": result.training_loss,
        "first_logged_loss": losses[0] if losses else None,
        "last_logged_loss": losses[-1] if losses else None,
        "config": asdict(cfg),
    }
    atomic_write_json(out / "sft_summary.json", summary)
    return summary

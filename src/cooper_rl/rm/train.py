"""Train VerifyRM offline with BCE on labelled (question, reference, completion, label) rows.

Rows come from .jsonl/.json/.parquet. Accepted fields: question; reference | reference_answer | answer;
completion; label | gold_correct (bool, 0/1, or "true"/"false"). The authors' published VerifyRM parquet
(question, reference_answer, completion, label) loads as is, and so does VerifyBench.

The split into train/validation is grouped by question (no question in both). Training uses the HF Trainer
with BCEWithLogitsLoss on the single logit; inputs are built by rm_inputs.encode_rm_inputs, the same
function the RM uses for scoring. The checkpoint with the best validation accuracy is kept and saved with
VerifyRM.save_pretrained, next to train_metrics.json (which records the data file's row count and sha256).
Checkpoints go to OUTPUT_DIR.checkpoints/ while training runs (removed when it ends): a killed run continues
with --resume_from_checkpoint last; SIGTERM or SIGUSR1 first checkpoints the step in flight (exit status 143).
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from cooper_rl.cooper.reward_model import VerifyRM
from cooper_rl.io import atomic_write_json, file_sha256
from cooper_rl.models import bf16_flag
from cooper_rl.rm.data import load_rm_rows


@dataclass
class TrainRMConfig:
    """Options of ``cooper train-rm``."""

    data: str = field(
        default="data/rm_train.jsonl",
        metadata={"help": "Labelled .jsonl/.json/.parquet (question, reference, completion, label)."},
    )
    backbone: str = field(
        default="minilm-l6",
        metadata={"help": "Backbone (registry name, local path or hub id; a fresh 1-logit head), or a trained RM dir."},
    )
    output_dir: str = field(
        default="results/rm",
        metadata={"help": "Where the trained RM (safetensors, tokenizer, cooper_rm.json) and train_metrics.json go."},
    )
    max_length: int | None = field(
        default=None, metadata={"help": "Max tokens per input (default min(512, model limit))."}
    )
    epochs: float = field(default=3.0, metadata={"help": "Training epochs (paper: 3)."})
    max_steps: int = field(
        default=-1, metadata={"help": "If > 0, stop after this many optimizer steps (overrides epochs)."}
    )
    learning_rate: float = field(default=2e-5, metadata={"help": "AdamW learning rate (paper: 2e-5)."})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay."})
    head_lr_multiplier: float = field(
        default=20.0,
        metadata={
            "help": "Learning rate of a freshly initialised classification head = learning_rate x this. Encoder "
            "backbones feed the head small pooled features (MiniLM: |tanh pooler| ~0.05), so at the backbone's "
            "learning rate the logit stays near 0 and validation accuracy sits at the class prior for hundreds "
            "of steps; 1 = one learning rate for all weights."
        },
    )
    warmup_ratio: float = field(
        default=0.1, metadata={"help": "Fraction of the steps with a linear learning-rate warm-up."}
    )
    batch_size: int = field(default=16, metadata={"help": "Rows per optimizer step (train and validation)."})
    val_fraction: float = field(default=0.1, metadata={"help": "Fraction of questions held out for validation."})
    eval_steps: int | None = field(
        default=None,
        metadata={"help": "Evaluate on the held-out questions and checkpoint every N steps (default: every epoch)."},
    )
    max_rows: int | None = field(default=None, metadata={"help": "Use only the first N rows of the file."})
    seed: int = field(default=0, metadata={"help": "Seed of the split, the head initialisation and the data order."})
    device: str = field(default="auto", metadata={"help": "auto (cuda if visible, else cpu), cpu, cuda, cuda:N."})
    bf16_autocast: str = field(
        default="false",
        metadata={
            "help": "fp32 weights and optimizer, forward/backward under bf16 autocast (faster on CPUs with bf16 "
            "units): true | false | auto (= true where bf16 matmuls are native)."
        },
    )
    lora_rank: int = field(
        default=0,
        metadata={
            "help": "0: train every weight. > 0: freeze the backbone and train a PEFT LoRA adapter of this rank on "
            "--lora_targets plus the score head; the RM is saved as the adapter and head alone (a few MB)."
        },
    )
    lora_alpha: float | None = field(default=None, metadata={"help": "LoRA scale numerator (default 2 x rank)."})
    lora_targets: str = field(
        default="all-linear",
        metadata={"help": "Modules the adapter wraps: 'all-linear' or comma-separated names (q_proj,v_proj,...)."},
    )
    resume_from_checkpoint: str | None = field(
        default=None,
        metadata={
            "help": "'last': continue a killed run from the newest checkpoint in OUTPUT_DIR.checkpoints; or a dir."
        },
    )

    def __post_init__(self):
        self.bf16_autocast = bf16_flag(self.bf16_autocast)  # "auto" -> what this machine runs natively


def split_by_question(rows: list[dict], val_fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Deterministic (train, val) split holding out round(val_fraction * #questions) whole questions
    (at least one if val_fraction > 0 and there are two or more questions)."""
    questions = sorted({r["question"] for r in rows})
    random.Random(seed).shuffle(questions)
    n_val = round(val_fraction * len(questions))
    if val_fraction > 0 and len(questions) > 1:
        n_val = min(max(n_val, 1), len(questions) - 1)
    held_out = set(questions[:n_val])
    return [r for r in rows if r["question"] not in held_out], [r for r in rows if r["question"] in held_out]


def base_parameter_name(name: str) -> str:
    """A parameter's name in the plain model, with what PEFT adds around it removed
    ('base_model.model.score.modules_to_save.default.weight' -> 'score.weight')."""
    if name.startswith("base_model.model."):
        name = name[len("base_model.model.") :]
    return name.replace(".modules_to_save.default", "")


def class_balance(rows: list[dict]) -> dict:
    """{n, n_pos, pos_rate} of labelled rows."""
    n_pos = sum(r["label"] for r in rows)
    return {"n": len(rows), "n_pos": n_pos, "pos_rate": n_pos / len(rows) if rows else None}


def build_rm_dataset(rm: VerifyRM, rows: list[dict]) -> list[dict]:
    """Trainer examples {input_ids, labels}; ids come from rm.encode (= encode_rm_inputs, as in scoring)."""
    ids = rm.encode([r["question"] for r in rows], [r["reference"] for r in rows], [r["completion"] for r in rows])
    return [{"input_ids": x, "labels": float(r["label"])} for x, r in zip(ids, rows)]


class RMCollator:
    """Right-pads input_ids, builds attention_mask, stacks float labels."""

    def __init__(self, pad_token_id: int):
        self.pad = pad_token_id

    def __call__(self, examples: list[dict]) -> dict:
        width = max(len(e["input_ids"]) for e in examples)
        ids = [e["input_ids"] + [self.pad] * (width - len(e["input_ids"])) for e in examples]
        mask = [[1] * len(e["input_ids"]) + [0] * (width - len(e["input_ids"])) for e in examples]
        return {
            "input_ids": torch.tensor(ids),
            "attention_mask": torch.tensor(mask),
            "labels": torch.tensor([e["labels"] for e in examples], dtype=torch.float32),
        }


def _rm_trainer_class():
    """Trainer subclass whose loss is BCEWithLogits on the single logit (imported lazily: transformers is slow)."""
    from transformers import Trainer

    class RMTrainer(Trainer):
        """HF Trainer with BCEWithLogitsLoss(logit, label)."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            logits = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"]).logits.squeeze(-1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits.float(), inputs["labels"])
            return (loss, {"logits": logits}) if return_outputs else loss

    return RMTrainer


def compute_metrics(eval_pred) -> dict:
    """Accuracy of sigmoid(logit) >= 0.5, i.e. logit >= 0, against the 0/1 labels."""
    logits, labels = eval_pred.predictions, eval_pred.label_ids
    preds = (logits.reshape(-1) >= 0).astype(int)
    return {"accuracy": float((preds == labels.reshape(-1).astype(int)).mean())}


def run_train_rm(cfg: TrainRMConfig) -> dict:
    """``cooper train-rm``: BCE-train VerifyRM, keep the best-validation checkpoint, save it to output_dir."""
    from cooper_rl.trainer_hooks import SaveOnSignal

    on_signal = SaveOnSignal()  # SIGTERM/SIGUSR1: checkpoint the step in flight and stop (resume continues there)
    try:
        return _train_rm(cfg, on_signal)
    finally:
        on_signal.restore()


def _train_rm(cfg: TrainRMConfig, on_signal) -> dict:
    from transformers import TrainingArguments, set_seed

    from cooper_rl.trainer_hooks import (
        ElapsedTime,
        bar_only_progress,
        checkpoint_step,
        resolve_checkpoint,
        train_until_signal,
    )

    set_seed(cfg.seed)
    rows = load_rm_rows(cfg.data, cfg.max_rows)
    train_rows, val_rows = split_by_question(rows, cfg.val_fraction, cfg.seed)
    balance = {"train": class_balance(train_rows), "val": class_balance(val_rows)}
    print(f"[train-rm] {len(rows)} rows from {cfg.data}: train {balance['train']}, val {balance['val']}", flush=True)

    rm = VerifyRM.from_pretrained(cfg.backbone, max_length=cfg.max_length, device=cfg.device)
    if cfg.lora_rank > 0:
        rm.add_adapter(rank=cfg.lora_rank, alpha=cfg.lora_alpha, targets=cfg.lora_targets)
    train_ds, val_ds = build_rm_dataset(rm, train_rows), build_rm_dataset(rm, val_rows)
    has_val = len(val_ds) > 0
    strategy = ("steps" if cfg.eval_steps else "epoch") if has_val else "no"

    out = Path(cfg.output_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    ckpt_dir = out.with_name(out.name + ".checkpoints")  # kept while training runs, for resuming; removed at the end
    resume = resolve_checkpoint(ckpt_dir, cfg.resume_from_checkpoint)
    resumed_step = checkpoint_step(resume) if resume else 0  # validations before it ran in an earlier process
    if resume is None and ckpt_dir.exists():
        shutil.rmtree(ckpt_dir)  # a fresh start never mixes with a killed run's checkpoints
    args = TrainingArguments(
        output_dir=str(ckpt_dir),
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        learning_rate=cfg.learning_rate,
        weight_decay=cfg.weight_decay,
        warmup_steps=cfg.warmup_ratio,  # a float < 1 is a ratio of the total steps
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        eval_strategy=strategy,
        save_strategy=strategy,
        eval_steps=cfg.eval_steps,
        save_steps=cfg.eval_steps or 500,
        save_only_model=False,  # optimizer, scheduler and RNG states too: a resumed run continues exactly
        save_total_limit=2,
        load_best_model_at_end=has_val,
        metric_for_best_model="accuracy",
        greater_is_better=True,
        logging_steps=max(1, cfg.eval_steps or 10),
        report_to=[],
        seed=cfg.seed,
        use_cpu=str(rm.device) == "cpu",
        bf16=cfg.bf16_autocast,
        dataloader_num_workers=0,
        train_sampling_strategy="group_by_length",  # batches of similar length: little padding
        remove_unused_columns=False,
    )
    if rm.offset:  # a recalibrated threshold (cooper/recalibration.py): the Trainer fits raw logits, so drop it
        print(f"[train-rm] dropping the RM's logit offset {rm.offset:+.3f}: training refits its threshold", flush=True)
        rm.offset = 0.0
    head = set(rm.new_parameters)
    groups: dict[tuple[bool, bool], dict] = {}
    for name, p in rm.model.named_parameters():
        if not p.requires_grad:  # a frozen backbone under a LoRA adapter
            continue
        n = base_parameter_name(name)
        no_decay = n.endswith("bias") or "norm" in n.lower()  # as the HF Trainer does: no decay on biases/norms
        g = groups.setdefault(
            (n in head, no_decay),
            {
                "params": [],
                "weight_decay": 0.0 if no_decay else cfg.weight_decay,
                "lr": cfg.learning_rate * (cfg.head_lr_multiplier if n in head else 1.0),
            },
        )
        g["params"].append(p)
    optimizer = torch.optim.AdamW(list(groups.values()), lr=cfg.learning_rate)
    trainer = _rm_trainer_class()(
        model=rm.model,
        optimizers=(optimizer, None),  # the Trainer adds its warm-up/decay schedule to both groups
        args=args,
        train_dataset=train_ds,
        eval_dataset=val_ds if has_val else None,
        data_collator=RMCollator(rm.tokenizer.pad_token_id),
        compute_metrics=compute_metrics,
    )
    bar_only_progress(trainer)  # progress bar, no raw log dicts on the console
    trainer.add_callback(ElapsedTime(resume))  # the time to train, over every process of the run
    try:
        train_out = train_until_signal(trainer, on_signal, resume, finish_loaded=True)
        history = list(trainer.state.log_history)  # the scheduled validations (the final evaluate() not among them)
        # the callback list's (transformers' callback restore, where enabled, replaces the instance)
        elapsed = next(c for c in trainer.callback_handler.callbacks if isinstance(c, ElapsedTime))
        rm.model = trainer.model  # best checkpoint (load_best_model_at_end)
        t_eval = time.time()
        # the best checkpoint's scheduled validation measured these weights already: a second pass over the
        # validation rows (minutes on a CPU) only where the log lacks it
        best = trainer.state.best_model_checkpoint
        best_step = checkpoint_step(best) if best else None
        logged = [h for h in history if best and "eval_accuracy" in h and h.get("step") == best_step]
        val_metrics = logged[-1] if logged else trainer.evaluate() if has_val else {}
        final_eval_seconds = time.time() - t_eval
    except BaseException:
        print(f"[train-rm] stopped; continue with --resume_from_checkpoint last ({ckpt_dir})", flush=True)
        raise
    report = {
        "data": cfg.data,
        "data_rows": len(rows),
        "data_sha256": file_sha256(cfg.data),
        "resumed_from": resume,
        "new_head_parameters": sorted(head),
        "adapter": rm.adapter_info(),
        "backbone": cfg.backbone,
        "max_length": rm.max_length,
        "n_rows": len(rows),
        "class_balance": balance,
        "n_train_questions": len({r["question"] for r in train_rows}),
        "n_val_questions": len({r["question"] for r in val_rows}),
        "global_step": train_out.global_step,
        "train_loss": train_out.training_loss,
        "train_seconds": elapsed.process(),  # this process's; includes its validations (eval_seconds of it)
        # every process's that made this RM, up to here (None: resumed from a checkpoint without the record)
        "train_seconds_total": elapsed.total(),
        "eval_seconds": final_eval_seconds
        + sum(h.get("eval_runtime", 0.0) for h in history if h.get("step", 0) > resumed_step),
        # validation accuracy over training (this process's evaluations and those of the checkpoint it resumed)
        "eval_history": [
            {"step": h["step"], "accuracy": h["eval_accuracy"], "loss": h.get("eval_loss")}
            for h in history
            if "eval_accuracy" in h
        ],
        "best_val_accuracy": trainer.state.best_metric,
        "val_accuracy": val_metrics.get("eval_accuracy"),  # the returned (best) model's
        "val_loss": val_metrics.get("eval_loss"),
        "config": asdict(cfg),
    }
    rm.save_pretrained(
        out, metadata={"train": {k: v for k, v in report.items() if k != "config"}, "train_config": asdict(cfg)}
    )
    atomic_write_json(out / "train_metrics.json", report)
    shutil.rmtree(ckpt_dir, ignore_errors=True)
    print(
        f"[train-rm] val accuracy {report['val_accuracy']} (best {report['best_val_accuracy']}); saved to {out}",
        flush=True,
    )
    return report

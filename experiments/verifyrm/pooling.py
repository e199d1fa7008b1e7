"""Issue 14, item 4: is MiniLM-L6's pooling why its VerifyRM training sits at the class prior?

Hugging Face's BertForSequenceClassification reads the [CLS] state through the pretrained pooler (dense + tanh);
all-MiniLM-L6-v2 was trained by sentence-transformers with *mean* pooling over the tokens, so its [CLS] state was
never trained to summarise the text. This runs the same training as head_lr.sh's x1 arm (head_lr.sh: in git
history, commit f82a1a1; rm-data rows of 600 built-in problems, 100 steps x 16 rows, lr 5e-5, 5 % warm-up,
validation every 25 steps) with the classifier reading (a) the pooler's [CLS] output, as `cooper train-rm` does,
and (b) the masked mean of the last hidden states, the representation the backbone was trained to produce. Same
seeds, side by side.

usage: .venv/bin/python experiments/verifyrm/pooling.py [SEED ...]      (default seeds 0 1)
writes experiments/verifyrm/results/pooling/{train_<pooling>_s<seed>.json, summary.json}; weights under runs/.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

R = Path("experiments/verifyrm/results/pooling")
RUNS = Path("runs/verifyrm-pooling")
ROWS = Path("runs/verifyrm-head-lr/rows.jsonl")  # head_lr.sh's rows (rebuilt here if missing)
POOLINGS = ("cls", "mean")


def install_mean_pooling() -> None:
    """Make every BertModel of this process pool by the masked mean of its last hidden states (no dense/tanh)."""
    import torch
    from transformers.models.bert import modeling_bert as mb

    mask: dict = {}

    def stash_mask(module, args, kwargs):
        mask["m"] = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)

    def mean_pool(self, hidden_states: torch.Tensor) -> torch.Tensor:
        m = mask.get("m")
        if m is None:
            m = torch.ones(hidden_states.shape[:2], device=hidden_states.device)
        m = m.unsqueeze(-1).to(hidden_states.dtype)
        return (hidden_states * m).sum(1) / m.sum(1).clamp(min=1.0)

    init = mb.BertModel.__init__

    def patched_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.register_forward_pre_hook(stash_mask, with_kwargs=True)

    mb.BertModel.__init__ = patched_init
    mb.BertPooler.forward = mean_pool


def train(pooling: str, seed: int) -> int:
    """One training run in this process (the child of main)."""
    if pooling == "mean":
        install_mean_pooling()
    from cooper_rl.cli import main as cooper

    return cooper(
        ["train-rm", "--data", str(ROWS), "--backbone", "minilm-l6", "--output_dir", str(RUNS / f"{pooling}_s{seed}"),
         "--max_steps", "100", "--batch_size", "16", "--learning_rate", "5e-5", "--warmup_ratio", "0.05",
         "--max_length", "256", "--eval_steps", "25", "--bf16_autocast", "auto", "--seed", str(seed)]
    )  # fmt: skip


def main(seeds: list[int]) -> None:
    from cooper_rl.io import atomic_write_json

    R.mkdir(parents=True, exist_ok=True)
    RUNS.mkdir(parents=True, exist_ok=True)
    if not ROWS.is_file():
        ROWS.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [".venv/bin/cooper", "rm-data", "--solutions", "builtin:train:600", "--output", str(ROWS), "--seed", "0"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    for seed in seeds:  # seed-major: a partial run still compares both poolings
        for pooling in POOLINGS:
            out = R / f"train_{pooling}_s{seed}.json"
            if out.is_file():
                continue
            log = RUNS / f"{pooling}_s{seed}.log"
            with open(log, "w") as f:
                subprocess.run([sys.executable, __file__, "--run", pooling, str(seed)], check=True, stdout=f, stderr=f)
            m = json.loads((RUNS / f"{pooling}_s{seed}" / "train_metrics.json").read_text())
            m["pooling"] = pooling
            m["val_accuracy_by_eval"] = [h["accuracy"] for h in m["eval_history"]]
            atomic_write_json(out, m)
            print(pooling, seed, m["val_accuracy_by_eval"], flush=True)
    summary = {}
    for pooling in POOLINGS:
        runs = [json.loads(p.read_text()) for p in sorted(R.glob(f"train_{pooling}_s*.json"))]
        if not runs:
            continue
        prior = [max(r["class_balance"]["val"]["pos_rate"], 1 - r["class_balance"]["val"]["pos_rate"]) for r in runs]
        summary[pooling] = {
            "seeds": [r["config"]["seed"] for r in runs],
            "val_accuracy_by_eval": [r["val_accuracy_by_eval"] for r in runs],
            "final_val_accuracy": [r["val_accuracy"] for r in runs],
            "final_val_accuracy_mean": statistics.mean(r["val_accuracy"] for r in runs),
            "class_prior": prior,
            "evals_within_2_points_of_prior": [
                sum(abs(a - p) < 0.02 for a in r["val_accuracy_by_eval"]) for r, p in zip(runs, prior)
            ],
            "train_seconds": [r["train_seconds"] for r in runs],
        }
    atomic_write_json(R / "summary.json", summary)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        sys.exit(train(sys.argv[2], int(sys.argv[3])))
    main([int(s) for s in sys.argv[1:]] or [0, 1])

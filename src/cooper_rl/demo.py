"""``cooper demo``: offline run on the embedded defaults (no files, no network).

For now: load the embedded policy, evaluate it with avg@k on a small built-in test set, and print
the table plus one sampled completion. Later stages of the method extend this to the whole loop.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from cooper_rl.evaluate import EvalConfig, evaluate, format_table
from cooper_rl.models import SMOLLM2


@dataclass
class DemoConfig:
    """Options of ``cooper demo``."""

    model: str = SMOLLM2
    n_problems: int = field(default=16, metadata={"help": "Built-in test problems to evaluate."})
    k: int = field(default=4, metadata={"help": "Samples per problem."})
    max_new_tokens: int = 192
    output_dir: str = "results/demo"
    seed: int = 0


def run_demo(cfg: DemoConfig) -> dict:
    """Evaluate the embedded policy on built-in tasks; print and return the summary."""
    t0 = time.time()
    ecfg = EvalConfig(
        model=cfg.model, datasets=[f"builtin:test:{cfg.n_problems}"], k=cfg.k, max_new_tokens=cfg.max_new_tokens,
        output_dir=str(Path(cfg.output_dir) / "eval"), seed=cfg.seed, resume=False,
    )
    summary = evaluate(ecfg)
    print("\n" + format_table(summary))
    with open(Path(ecfg.output_dir) / "samples.jsonl") as f:
        example = json.loads(f.readline())
    print(f"\nexample  Q: {example['question']}\n         reference: {example['reference']}")
    print(f"         completion: {example['completion'][:400]!r}")
    print(f"         extracted: {example['extracted']!r}  correct: {example['correct']}")
    print(f"\ndemo finished in {time.time() - t0:.0f} s; results in {cfg.output_dir}")
    return summary

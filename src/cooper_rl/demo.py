"""``cooper demo``: the whole Cooper pipeline on the embedded defaults, offline, on a CPU.

  1. VerifyRM: built-in worked solutions -> hard-negative rows (rm.data.verification_rows: same solution
     correct / corrupted / with a wrong reference, varied answer styles) -> rule labels -> BCE training of the
     MiniLM-L6 backbone (cooper train-rm). Cached in $COOPER_CACHE keyed by its settings, so reruns skip it.
  2. Evaluate the starting policy (avg@k on built-in test problems).
  3. Cooper RL (cooper rl --reward cooper, corrupt negatives) for a few steps on built-in train problems,
     with the RM evaluated on held-out labelled rows every eval_steps.
  4. Evaluate the trained policy the same way; print the before/after table; write the training-dynamics
     plot (cooper plot) to output_dir/dynamics.png.

The defaults fit well under 30 minutes on 2 cores. A few steps of RL at lr 1e-6 do not change a 135M
policy's accuracy measurably; the demo shows the machinery and its logs, not a result (see docs/RESULTS.md).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cooper_rl import verify
from cooper_rl.io import atomic_write_json, read_jsonl, write_jsonl
from cooper_rl.models import MINILM, SMOLLM2, cache_dir


@dataclass
class DemoConfig:
    """Options of ``cooper demo``."""

    model: str = field(default=SMOLLM2, metadata={"help": "Policy: registry name, local path or hub id."})
    rm_backbone: str = field(
        default=MINILM, metadata={"help": "Backbone of the demo's VerifyRM (registry name, local path or hub id)."}
    )
    rm_problems: int = field(
        default=1000,
        metadata={"help": "Built-in train problems whose solutions (and their corruptions) make the RM data."},
    )
    rm_steps: int = field(default=200, metadata={"help": "Optimizer steps of the demo RM's training."})
    rm_batch_size: int = field(default=32, metadata={"help": "Rows per RM training step."})
    rm: str | None = field(default=None, metadata={"help": "Use this trained VerifyRM dir instead of building one."})
    n_problems: int = field(default=16, metadata={"help": "Built-in test problems to evaluate before/after."})
    k: int = field(default=4, metadata={"help": "Samples per problem in the before/after evaluation (avg@k)."})
    max_new_tokens: int = field(
        default=128, metadata={"help": "Longest completion in RL rollouts and evaluations, in tokens."}
    )
    rl_steps: int = field(default=8, metadata={"help": "Cooper RL steps."})
    num_generations: int = field(default=4, metadata={"help": "G: rollouts per prompt."})
    prompts_per_step: int = field(default=2, metadata={"help": "Prompts per RL step."})
    learning_rate: float = field(
        default=1e-6, metadata={"help": "Policy learning rate of the Cooper RL run (paper: 1e-6)."}
    )
    rl_levels: str = field(
        default="1", metadata={"help": "Built-in levels of the RL training problems (e.g. '1' or '1,2')."}
    )
    eval_steps: int = field(default=4, metadata={"help": "Evaluate policy and RM every N RL steps (and at step 0)."})
    output_dir: str = field(
        default="results/demo", metadata={"help": "Where the demo writes its runs, table data and figure."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of everything the demo draws."})


def _rm_key(cfg: DemoConfig) -> str:
    blob = json.dumps(
        {
            "v": 1,
            "backbone": cfg.rm_backbone,
            "n": cfg.rm_problems,
            "steps": cfg.rm_steps,
            "batch": cfg.rm_batch_size,
            "seed": cfg.seed,
        }
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def build_demo_rm(cfg: DemoConfig, work: Path) -> tuple[str, dict]:
    """(path of a VerifyRM trained on built-in hard-negative rows, info); reused from the cache when present."""
    from cooper_rl.rm.train import TrainRMConfig, run_train_rm

    out = cache_dir() / "demo-rm" / _rm_key(cfg)
    if (out / "cooper_rm.json").is_file():
        return str(out), {"cached": True, **json.loads((out / "train_metrics.json").read_text())}
    data = labelled_rows(cfg.rm_problems, "train", cfg.seed + 1, random.Random(cfg.seed), work / "rm_train.jsonl")
    report = run_train_rm(
        TrainRMConfig(
            data=str(data),
            backbone=cfg.rm_backbone,
            output_dir=str(out),
            max_length=256,
            max_steps=cfg.rm_steps,
            learning_rate=1e-4,
            batch_size=cfg.rm_batch_size,
            eval_steps=max(1, cfg.rm_steps // 3),
            seed=cfg.seed,
        )
    )
    return str(out), {"cached": False, **report}


def labelled_rows(n: int, split: str, seed: int, rng: random.Random, path: Path) -> Path:
    """Hard-negative rows (rm.data.verification_rows) of n built-in `split` problems, labelled by the
    lenient rule verifier, written to `path` as jsonl."""
    from cooper_rl.rm.data import verification_rows
    from cooper_rl.tasks import generate_problems

    rows = []
    for p in generate_problems(n, split=split, seed=seed):
        rows += verification_rows(p.question, p.answer, p.solution, rng, source=f"builtin-{split}")
    labels = verify.verify_batch([r["completion"] for r in rows], [r["reference"] for r in rows], "lenient")
    write_jsonl(path, ({**r, "label": int(y)} for r, y in zip(rows, labels)))
    return path


def _table(before: dict, after: dict) -> str:
    """Before/after rows for the overall avg@k and pass@k (strict, lenient)."""
    keys = ("avg@k_strict", "pass@k_strict", "avg@k_lenient", "answered_rate", "mean_new_tokens")
    lines = [f"{'metric':<16}{'before':>10}{'after':>10}", "-" * 36]
    for k in keys:
        b, a = before["overall"].get(k), after["overall"].get(k)
        fmt = (lambda x: f"{x:.1f}") if k == "mean_new_tokens" else (lambda x: f"{100 * x:.1f}%")
        lines.append(f"{k:<16}{fmt(b):>10}{fmt(a):>10}")
    return "\n".join(lines)


def run_demo(cfg: DemoConfig) -> dict:
    """Run the whole pipeline (RM, eval, Cooper RL, eval, plot); print the table; return a summary dict."""
    from cooper_rl.evaluate import EvalConfig, evaluate
    from cooper_rl.plot import PlotConfig, plot_runs
    from cooper_rl.rl.train import RLConfig, run_rl

    t0 = time.time()
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    times = {}

    print("[demo] 1/4 VerifyRM", flush=True)
    t = time.time()
    rm_path, rm_info = (cfg.rm, {"cached": True, "given": True}) if cfg.rm else build_demo_rm(cfg, out / "rm_data")
    times["rm_seconds"] = time.time() - t
    rm_eval = labelled_rows(
        48, "test", cfg.seed + 2, random.Random(cfg.seed + 99), out / "rm_data" / "rm_heldout.jsonl"
    )

    def policy_eval(model: str, name: str) -> dict:
        ecfg = EvalConfig(
            model=model,
            datasets=[f"builtin:test:{cfg.n_problems}"],
            k=cfg.k,
            max_new_tokens=cfg.max_new_tokens,
            output_dir=str(out / name),
            seed=cfg.seed,
            resume=False,
        )
        return evaluate(ecfg)

    print("[demo] 2/4 evaluate the starting policy", flush=True)
    t = time.time()
    before = policy_eval(cfg.model, "eval_before")
    times["eval_before_seconds"] = time.time() - t

    print(f"[demo] 3/4 Cooper RL, {cfg.rl_steps} steps", flush=True)
    t = time.time()
    levels = ",".join(x.strip() for x in cfg.rl_levels.split(","))
    rl_dir = out / "rl"
    if rl_dir.exists():  # a demo always starts from the embedded policy: clear an earlier run's logs
        import shutil

        shutil.rmtree(rl_dir)
    rl = run_rl(
        RLConfig(
            reward="cooper",
            policy=cfg.model,
            rm=rm_path,
            datasets=[f"builtin:train:256:{levels}"],
            num_generations=cfg.num_generations,
            prompts_per_step=cfg.prompts_per_step,
            learning_rate=cfg.learning_rate,
            max_completion_length=cfg.max_new_tokens,
            max_steps=cfg.rl_steps,
            save_steps=cfg.rl_steps,
            # the CPU preset's throughput settings (configs/rl_cpu.yaml); bf16 only where it is native
            bf16_autocast="auto",
            rollout_bf16_weights="auto",
            rm_bf16_autocast="auto",
            steps_per_generation=4,
            save_total_limit=1,
            eval_steps=cfg.eval_steps,
            eval_datasets=[f"builtin:test:{cfg.n_problems}"],
            eval_k=2,
            rm_eval_data=str(rm_eval),
            output_dir=str(rl_dir),
            seed=cfg.seed,
        )
    )
    times["rl_seconds"] = time.time() - t

    print("[demo] 4/4 evaluate the trained policy", flush=True)
    t = time.time()
    after = policy_eval(rl["policy_dir"], "eval_after")
    times["eval_after_seconds"] = time.time() - t
    figure = plot_runs(
        PlotConfig(
            run_dirs=[str(rl_dir)],
            output=str(out / "dynamics.png"),
            smooth=3,
            title=f"cooper demo: {cfg.rl_steps} Cooper steps on {Path(cfg.model).name}",
        )
    )

    evals = read_jsonl(rl_dir / "evals.jsonl")
    summary = {
        "before": before["overall"],
        "after": after["overall"],
        "rm": rm_path,
        "rm_val_accuracy": rm_info.get("best_val_accuracy"),
        "rm_heldout_accuracy": [(e["step"], e["rm"]["accuracy"]) for e in evals if "rm" in e],
        "rl_last_metrics": rl["last_metrics"],
        "figure": str(figure),
        **times,
        "total_seconds": time.time() - t0,
        "config": asdict(cfg),
    }
    atomic_write_json(out / "demo_summary.json", summary)
    print(f"\n{Path(cfg.model).name}: built-in test, {cfg.n_problems} problems x {cfg.k} samples, T=0.7\n")
    print(_table(before, after))
    print(
        f"\nVerifyRM ({'cached' if rm_info.get('cached') else 'trained now'}): val accuracy "
        f"{rm_info.get('best_val_accuracy')}; held-out accuracy over RL steps {summary['rm_heldout_accuracy']}"
    )
    print(f"dynamics plot: {figure}\ndemo finished in {summary['total_seconds']:.0f} s; results in {out}")
    return summary

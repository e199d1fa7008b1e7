"""``cooper demo``: Cooper co-optimizing a policy and its reward model, on the embedded defaults, offline, on a CPU.

  1. VerifyRM: `cooper rm-data` rows from built-in worked solutions (correct answers in many formats, traps) ->
     BCE training of a MiniLM-L6 classifier (`cooper train-rm`). Cached in $COOPER_CACHE by its settings.
  2. Warm-up: a short `cooper sft` of the embedded SmolLM2 on built-in worked solutions, so the policy gets some
     answers right and the Cooper step has positives to build pairs from (the cold policy gets ~0 % right).
     Cached the same way.
  3. The starting point: policy avg@k on built-in test problems; RM accuracy on held-out labelled rows (every
     rm-data category on built-in test problems).
  4. Cooper RL (`cooper rl --reward cooper`, negatives corrupt + mined + truncate): one console line per step;
     the RM is updated on (verified rollout, negative) pairs.
  5. The same measurements after; a summary of the co-optimization (pairs made, invalid negatives by reason, rule
     accuracy of the rollouts, RM-fooled rate, RM accuracy before -> after) and the dynamics figure.

Logs and trackers: output_dir/rl/metrics.jsonl, and TensorBoard event files in output_dir/rl/runs when
--report_to tensorboard (default): `tensorboard --logdir results/demo/rl` shows the cooper/* curves live.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

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
        default=600, metadata={"help": "Built-in train problems whose solutions make the RM data (rm-data rows)."}
    )
    rm_steps: int = field(
        default=40,
        metadata={
            "help": "Optimizer steps of the demo RM's training (MiniLM stays near the class prior on these rows in "
            "100 steps too: docs/VERIFYRM.md)."
        },
    )
    rm_batch_size: int = field(default=16, metadata={"help": "Rows per RM training step."})
    rm: str | None = field(default=None, metadata={"help": "Use this trained VerifyRM dir instead of building one."})
    sft_steps: int = field(
        default=24, metadata={"help": "Warm-up steps of the policy on worked solutions (0: start from the model)."}
    )
    sft_batch_size: int = field(default=8, metadata={"help": "Worked solutions per warm-up step."})
    levels: str = field(
        default="1", metadata={"help": "Built-in levels of the warm-up, RL and evaluation problems (e.g. '1,2')."}
    )
    n_problems: int = field(default=16, metadata={"help": "Built-in test problems to evaluate before/after."})
    k: int = field(default=4, metadata={"help": "Samples per problem in the before/after evaluation (avg@k)."})
    rm_eval_problems: int = field(
        default=16, metadata={"help": "Built-in test problems whose rm-data categories are the RM's held-out rows."}
    )
    max_new_tokens: int = field(
        default=96, metadata={"help": "Longest completion in RL rollouts and evaluations, in tokens."}
    )
    rl_steps: int = field(
        default=8,
        metadata={"help": "Cooper RL steps (optimizer steps; 4 share a generation batch, one RM update each batch)."},
    )
    num_generations: int = field(default=4, metadata={"help": "G: rollouts per prompt."})
    prompts_per_step: int = field(default=2, metadata={"help": "Prompts per RL step."})
    pairs_per_prompt: int = field(
        default=2,
        metadata={"help": "Cooper pairs per prompt and negative kind (cooper rl --pairs_per_prompt; paper: 1)."},
    )
    negatives: str = field(
        default="corrupt,mined,truncate",
        metadata={
            "help": "Negatives of the Cooper step (cooper rl --negatives): corrupt = the paper's offline rewrite; "
            "mined, truncate: beyond the paper, one pair per positive and kind."
        },
    )
    learning_rate: float = field(
        default=1e-6, metadata={"help": "Policy learning rate of the Cooper RL run (paper: 1e-6)."}
    )
    report_to: str = field(
        default="tensorboard", metadata={"help": "Tracker of the RL run: tensorboard, none, wandb, trackio."}
    )
    output_dir: str = field(
        default="results/demo", metadata={"help": "Where the demo writes its runs, table data and figure."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of everything the demo draws."})


def _key(**settings) -> str:
    """A short hash of settings: the cache entry of what they produce."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]


def _quiet_rm_data(rm_data_cfg) -> dict:
    """`cooper rm-data` (a quiet config: the per-category table is in the stats file), reported in one line."""
    from cooper_rl.rm.build import run_rm_data

    stats = run_rm_data(rm_data_cfg)
    n = sum(c["n"] for c in stats["per_category"].values())
    pos = sum(c["positive"] for c in stats["per_category"].values())
    print(
        f"[demo] rm-data: {n} labelled rows ({pos} correct) in {len(stats['per_category'])} categories -> {rm_data_cfg.output}"
    )
    return stats


def build_demo_rm(cfg: DemoConfig, work: Path) -> tuple[str, dict]:
    """(path of a VerifyRM trained on rm-data rows of built-in problems, info); reused from the cache when present."""
    from cooper_rl.rm.build import RMDataConfig
    from cooper_rl.rm.train import TrainRMConfig, run_train_rm

    key = _key(v=3, backbone=cfg.rm_backbone, n=cfg.rm_problems, steps=cfg.rm_steps, b=cfg.rm_batch_size, s=cfg.seed)
    out = cache_dir() / "demo-rm" / key
    if (out / "train_metrics.json").is_file():  # written last: a killed training leaves no usable entry
        return str(out), {"cached": True, **json.loads((out / "train_metrics.json").read_text())}
    data = work / "rm_train.jsonl"
    _quiet_rm_data(
        RMDataConfig(solutions=[f"builtin:train:{cfg.rm_problems}"], output=str(data), seed=cfg.seed, quiet=True)
    )
    report = run_train_rm(
        TrainRMConfig(
            data=str(data),
            backbone=cfg.rm_backbone,
            output_dir=str(out),
            max_length=256,
            max_steps=cfg.rm_steps,
            learning_rate=5e-5,
            warmup_ratio=0.05,
            batch_size=cfg.rm_batch_size,
            eval_steps=max(1, cfg.rm_steps // 3),
            bf16_autocast="auto",
            seed=cfg.seed,
        )
    )
    return str(out), {"cached": False, **report}


def build_demo_policy(cfg: DemoConfig) -> tuple[str, dict]:
    """(path of the warm-started policy, info): cooper sft on built-in worked solutions, cached by its settings."""
    from cooper_rl.rl.sft import SFTRunConfig, run_sft

    if cfg.sft_steps <= 0:
        return cfg.model, {"cached": True, "skipped": True}
    key = _key(v=1, model=cfg.model, steps=cfg.sft_steps, b=cfg.sft_batch_size, levels=cfg.levels, s=cfg.seed)
    out = cache_dir() / "demo-sft" / key
    if (out / "sft_summary.json").is_file():
        return str(out / "policy"), {"cached": True, **json.loads((out / "sft_summary.json").read_text())}
    summary = run_sft(
        SFTRunConfig(
            policy=cfg.model,
            datasets=[f"builtin:train:2000:{cfg.levels}"],
            max_steps=cfg.sft_steps,
            batch_size=cfg.sft_batch_size,
            save_steps=0,  # no trainer checkpoint (1.6 GB with the optimizer): a killed warm-up starts over
            bf16_autocast="auto",
            output_dir=str(out),
            seed=cfg.seed,
        )
    )
    return str(out / "policy"), {"cached": False, **summary}


def rm_accuracy(rm_path: str, rows_path: Path) -> dict:
    """Accuracy, AUROC and fooled rate (wrong rows scored >= 0.5) of a VerifyRM on labelled rows."""
    from cooper_rl.cooper.reward_model import VerifyRM
    from cooper_rl.rm.evaluate import binary_metrics

    rows = read_jsonl(rows_path)
    rm = VerifyRM.from_pretrained(rm_path, device="cpu")
    probs = rm.score([r["question"] for r in rows], [r["reference"] for r in rows], [r["completion"] for r in rows])
    m = binary_metrics([r["label"] for r in rows], probs)
    wrong = [p for p, r in zip(probs, rows) if not r["label"]]
    return {"accuracy": m["accuracy"], "auroc": m["auroc"], "fooled_rate": sum(p >= 0.5 for p in wrong) / len(wrong)}


def cooper_activity(metrics: list[dict]) -> dict:
    """What the Cooper step did over a run, from its metrics.jsonl rows (one per reward call)."""
    invalid, valid = Counter(), Counter()
    for m in metrics:
        invalid.update({k.split("/", 2)[2]: int(v) for k, v in m.items() if k.startswith("rm/invalid/") and v})
        valid.update({k.split("/", 2)[2]: int(v) for k, v in m.items() if k.startswith("rm/valid/") and v})
    fooled = [m["rm_fooled_rate"] for m in metrics if m.get("rm_fooled_rate") is not None]
    return {
        "rm_updates": sum(1 for m in metrics if m.get("rm/n_valid", 0) > 0),
        "valid_pairs": sum(int(m.get("rm/n_valid", 0)) for m in metrics),
        "pairs_tried": sum(int(m.get("rm/n_pairs", 0)) for m in metrics),
        "valid_by_kind": dict(valid),
        "invalid": dict(invalid),
        "rule_accuracy_first": metrics[0]["rule_accuracy"] if metrics else None,
        "rule_accuracy_last": metrics[-1]["rule_accuracy"] if metrics else None,
        "rule_accuracy_mean": sum(m["rule_accuracy"] for m in metrics) / len(metrics) if metrics else None,
        "rm_fooled_rate_mean": sum(fooled) / len(fooled) if fooled else None,
    }


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


COMMITTED = Path("experiments/reward_hacking/results")  # issue 15's experiment, in a clone of the repository


def committed_experiment(root: Path = COMMITTED, step: str = "300") -> str:
    """Lines on the committed reward-hacking experiment (its summary.json, not this run), '' outside a clone."""
    try:
        conds = json.loads((root / "summary.json").read_text())["every_seed_by_step"][step]["conditions"]
        conds = {c: v for c, v in conds.items() if v.get("heldout_final_ci95")}  # a condition without a CI: left out
    except (OSError, KeyError, ValueError, TypeError, AttributeError):
        return ""
    if not conds:
        return ""
    names = {"rule": "rule", "model": "static RM", "cooper": "Cooper (paper)", "cooper_ref_bin": "Cooper ref+0/1"}
    cells = []
    for c, label in names.items():
        if c in conds:
            lo, hi = conds[c]["heldout_final_ci95"]
            cells.append(f"{label} {100 * conds[c]['heldout_final_mean']:.1f} % ({100 * lo:.1f}-{100 * hi:.1f})")
    seeds = len(next(iter(conds.values()))["seeds"])
    return (
        "\n\nThe numbers above are live, from this run. The committed experiment (not this run: "
        f"{seeds} seeds per condition, held-out avg@4 at step {step}, 95 % CI): "
        + "; ".join(cells)
        + f". Figure: {root / 'dynamics.png'}; report: docs/RESULTS.md"
    )


def run_demo(cfg: DemoConfig) -> dict:
    """Run the whole pipeline; print the summary; return it as a dict (also written to demo_summary.json)."""
    import datasets
    from transformers.utils import logging as hf_logging

    from cooper_rl.evaluate import EvalConfig, evaluate
    from cooper_rl.plot import PlotConfig, plot_runs
    from cooper_rl.rl.config import RLConfig
    from cooper_rl.rl.train import run_rl
    from cooper_rl.rm.build import RMDataConfig

    hf_logging.disable_progress_bar()  # weight loading/saving bars; the long phases keep their own bars
    datasets.disable_progress_bars()  # tokenizing/mapping bars of the warm-up
    t0 = time.time()
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    times = {}
    levels = ",".join(x.strip() for x in cfg.levels.split(","))

    print("[demo] 1/5 VerifyRM (MiniLM-L6 classifier on rm-data rows of built-in problems)", flush=True)
    t = time.time()
    rm_path, rm_info = (cfg.rm, {"cached": True, "given": True}) if cfg.rm else build_demo_rm(cfg, out / "rm_data")
    times["rm_seconds"] = time.time() - t

    print(f"[demo] 2/5 policy warm-up ({cfg.sft_steps} SFT steps on worked solutions)", flush=True)
    t = time.time()
    policy, sft_info = build_demo_policy(cfg)
    times["sft_seconds"] = time.time() - t

    print("[demo] 3/5 starting point: policy avg@k, RM accuracy on held-out rows", flush=True)
    t = time.time()
    rm_rows = out / "rm_heldout.jsonl"
    _quiet_rm_data(
        RMDataConfig(
            solutions=[f"builtin:test:{cfg.rm_eval_problems}:{levels}"],
            mode="suite",
            output=str(rm_rows),
            seed=1,
            quiet=True,
        )
    )

    def policy_eval(model: str, name: str) -> dict:
        ecfg = EvalConfig(
            model=model,
            datasets=[f"builtin:test:{cfg.n_problems}:{levels}"],
            k=cfg.k,
            max_new_tokens=cfg.max_new_tokens,
            output_dir=str(out / name),
            seed=cfg.seed,
            resume=False,
        )
        return evaluate(ecfg)

    before = policy_eval(policy, "eval_before")
    rm_before = rm_accuracy(rm_path, rm_rows)
    times["eval_before_seconds"] = time.time() - t

    print(f"[demo] 4/5 Cooper RL, {cfg.rl_steps} steps", flush=True)
    t = time.time()
    rl_dir = out / "rl"
    if rl_dir.exists():  # a demo always starts from the warm-started policy: clear an earlier run
        shutil.rmtree(rl_dir)
    rl = run_rl(
        RLConfig(
            reward="cooper",
            policy=policy,
            rm=rm_path,
            datasets=[f"builtin:train:256:{levels}"],
            num_generations=cfg.num_generations,
            prompts_per_step=cfg.prompts_per_step,
            pairs_per_prompt=cfg.pairs_per_prompt,
            negatives=cfg.negatives,
            learning_rate=cfg.learning_rate,
            max_completion_length=cfg.max_new_tokens,
            max_steps=cfg.rl_steps,
            save_steps=cfg.rl_steps,
            # the small-batch CPU preset (configs/rl_cpu_small.yaml): shared generation batches, bf16 only where it is native
            bf16_autocast="auto",
            rollout_bf16_weights="auto",
            rm_bf16_autocast="auto",
            steps_per_generation=4,
            save_total_limit=1,
            report_to=cfg.report_to,
            output_dir=str(rl_dir),
            seed=cfg.seed,
        )
    )
    times["rl_seconds"] = time.time() - t

    print("[demo] 5/5 after: policy avg@k, RM accuracy", flush=True)
    t = time.time()
    after = policy_eval(rl["policy_dir"], "eval_after")
    rm_after = rm_accuracy(str(rl_dir / "rm"), rm_rows)
    times["eval_after_seconds"] = time.time() - t
    # the before/after measurements as the run's evaluations: the figure's held-out and RM panels show them
    write_jsonl(
        rl_dir / "evals.jsonl",
        [
            {"step": step, "policy": ev["per_dataset"], "rm": rm_m}
            for step, ev, rm_m in ((0, before, rm_before), (rl["global_step"], after, rm_after))
        ],
    )
    figure = plot_runs(
        PlotConfig(
            run_dirs=[str(rl_dir)],
            output=str(out / "dynamics.png"),
            smooth=1,
            title=f"cooper demo: {cfg.rl_steps} Cooper steps from {Path(policy).parent.name or policy}",
        )
    )
    activity = cooper_activity(read_jsonl(rl_dir / "metrics.jsonl"))
    summary = {
        "policy_start": policy,
        "before": before["overall"],
        "after": after["overall"],
        "rm": rm_path,
        "rm_val_accuracy": rm_info.get("best_val_accuracy"),
        "rm_heldout_before": rm_before,
        "rm_heldout_after": rm_after,
        "cooper": activity,
        "figure": str(figure),
        **times,
        "total_seconds": time.time() - t0,
        "config": asdict(cfg),
    }
    atomic_write_json(out / "demo_summary.json", summary)
    inv = ", ".join(f"{k} {v}" for k, v in sorted(activity["invalid"].items())) or "none"
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(activity["valid_by_kind"].items())) or "none"
    print(
        f"\n== cooper demo: {cfg.rl_steps} RL steps, {cfg.n_problems} built-in test problems x {cfg.k} samples ==\n"
        f"{'':<34}{'before':>10}{'after':>10}\n"
        f"{'policy avg@k (strict rule)':<34}{_pct(before['overall']['avg@k_strict']):>10}"
        f"{_pct(after['overall']['avg@k_strict']):>10}\n"
        f"{'RM accuracy, held-out rows':<34}{_pct(rm_before['accuracy']):>10}{_pct(rm_after['accuracy']):>10}\n"
        f"{'RM fooled rate, held-out wrong':<34}{_pct(rm_before['fooled_rate']):>10}{_pct(rm_after['fooled_rate']):>10}\n"
        f"Cooper step: {activity['valid_pairs']} valid pairs of {activity['pairs_tried']} tried in "
        f"{activity['rm_updates']} RM updates (valid negatives: {kinds}; invalid: {inv})\n"
        f"rollouts: rule accuracy {_pct(activity['rule_accuracy_mean'])} (first batch "
        f"{_pct(activity['rule_accuracy_first'])}, last {_pct(activity['rule_accuracy_last'])}); "
        f"RM-fooled rate {_pct(activity['rm_fooled_rate_mean'])}\n"
        f"VerifyRM {'cached' if rm_info.get('cached') else 'trained now'} (val accuracy "
        f"{_pct(rm_info.get('best_val_accuracy'))}); warm-up {'cached' if sft_info.get('cached') else 'trained now'}\n"
        + (
            ""
            if cfg.rm
            else "The demo's RM is MiniLM-L6 because it trains within a first run's budget; it stays near the class "
            "prior on these rows. The project's VerifyRM (SmolLM2-135M, docs/VERIFYRM.md: ~85 min on 2 cores with "
            "experiments/verifyrm/run_v3.sh for integer answers, ~2.5 h with run_v4.sh for LaTeX ones too) plugs in "
            "with --rm DIR.\n"
        )
        + f"figure: {figure}   logs: {rl_dir}/metrics.jsonl"
        + (f"   live curves: tensorboard --logdir {rl_dir}" if cfg.report_to == "tensorboard" else "")
        + f"\ndemo finished in {summary['total_seconds']:.0f} s; results in {out}"
        + committed_experiment()
    )
    return summary

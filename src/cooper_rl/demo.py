"""``cooper demo``: Cooper co-optimizing a policy and its reward model, on the embedded defaults, offline, on a CPU.

  1. The shipped VerifyRM (`verifyrm`): its accuracy on held-out labelled rows (every `cooper rm-data` category,
     formats and traps, on built-in test problems).
  2. What it is for: rollouts with which a policy learned to fool a weaker RM in the committed issue-67 experiment
     (experiments/rl_learns, the static-RM runs' last quarter: the weaker RM's reward >= 0.5, the rule says wrong),
     with the score that weaker RM gave them (recorded), the shipped RM's score and the rule's verdict (in a clone).
  3. Warm-up: a short `cooper sft` of the embedded SmolLM2 on built-in worked solutions, so the policy gets some
     answers right and the Cooper step has positives to build pairs from (the cold policy gets ~0 % right).
     Cached in $COOPER_CACHE by its settings.
  4. Cooper RL (`cooper rl --reward cooper`, negatives corrupt + mined + truncate) from the shipped RM, its LoRA
     adapter and score head updated on (verified rollout, negative) pairs; one console line per step.
  5. Policy avg@k and RM accuracy before and after; a summary of the co-optimization (pairs made, invalid
     negatives by reason, rule accuracy of the rollouts, RM-fooled rate) and the figure (demo.png).

Logs and trackers: output_dir/rl/metrics.jsonl, and TensorBoard event files in output_dir/rl/runs when
--report_to tensorboard (default): `tensorboard --logdir results/demo/rl` shows the cooper/* curves live.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cooper_rl.io import atomic_write_json, read_jsonl, write_jsonl
from cooper_rl.models import SMOLLM2, VERIFYRM, cache_dir


@dataclass
class DemoConfig:
    """Options of ``cooper demo``."""

    model: str = field(default=SMOLLM2, metadata={"help": "Policy: registry name, local path or hub id."})
    rm: str = field(
        default=VERIFYRM, metadata={"help": "The VerifyRM: verifyrm (the shipped one) or a trained VerifyRM dir."}
    )
    hacked_rollouts: int = field(
        default=48,
        metadata={"help": "Rollouts that fooled the weaker RM in the committed issue-67 runs, drawn to be rescored."},
    )
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
        # the threshold recalibration (--rm_recalibrate, the default): its total logit offset after the last update
        "rm_offset": next((m["rm/recal_offset"] for m in reversed(metrics) if "rm/recal_offset" in m), None),
        "recalibrate_seconds": sum(m.get("time/recalibrate", 0.0) for m in metrics),
    }


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


COMMITTED = Path("experiments/rl_learns/results")  # issue 67's experiment, in a clone of the repository
NAMES = {
    "rule": "rule",
    "model": "static weaker RM",
    "model_strong": "static strong RM",
    "cooper_paper": "Cooper (paper)",
}


def hacked_rollouts(root: Path = COMMITTED, n: int = 48, seed: int = 0) -> list[dict]:
    """Rollouts with which the policy fooled the static weaker RM in the committed issue-67 runs (runs/model-s*, the
    last quarter of their steps: the weaker RM's recorded reward >= 0.5, the rule verifier's verdict wrong), ``n``
    of them drawn with ``seed``; [] outside a clone of the repository."""
    rows = []
    for run in sorted((root / "runs").glob("model-s*")):
        rollouts = read_jsonl(run / "rollouts.jsonl.gz", missing_ok=True)
        if rollouts:
            last = max(r["step"] for r in rollouts)
            rows += [
                {**r, "run": run.name}
                for r in rollouts
                if r["step"] > 0.75 * last and r["verdict"] is False and r["reward"] >= 0.5
            ]
    return random.Random(seed).sample(rows, min(n, len(rows)))


def committed_experiment(root: Path = COMMITTED) -> str:
    """Lines on the committed issue-67 comparison (its summary.json, not this run), '' outside a clone."""
    try:
        conds = json.loads((root / "summary.json").read_text())["comparison"]["conditions"]
    except (OSError, KeyError, ValueError, TypeError):
        return ""
    cells = []
    for c, label in NAMES.items():
        if c in conds:
            end = conds[c]["end"]["built-in test"]
            collapsed = len(conds[c].get("collapsed") or [])
            cells.append(
                f"{label} {end['mean']:.1f} % ({end['ci95'][0]:.1f}-{end['ci95'][1]:.1f}), collapsed in {collapsed} "
                f"of {len(conds[c]['seeds'])} seeds"
            )
    if not cells:
        return ""
    return (
        "\n\nThe numbers above are live, from this run. The committed experiment (issue 67, not this run: 50 steps "
        "of 64 rollouts where GRPO learns, built-in held-out accuracy at the end, 95 % CI over seeds): "
        + "; ".join(cells)
        + f". Figure: {root / 'comparison.png'}; report: docs/RESULTS.md"
    )


def rm_metrics(rm, rows: list[dict]) -> dict:
    """Accuracy, AUROC and fooled rate (wrong rows scored >= 0.5) of a VerifyRM on labelled rows."""
    from cooper_rl.rm.evaluate import binary_metrics

    probs = rm.score([r["question"] for r in rows], [r["reference"] for r in rows], [r["completion"] for r in rows])
    m = binary_metrics([r["label"] for r in rows], probs)
    wrong = [p for p, r in zip(probs, rows) if not r["label"]]
    return {"accuracy": m["accuracy"], "auroc": m["auroc"], "fooled_rate": sum(p >= 0.5 for p in wrong) / len(wrong)}


def _tail(text: str, n: int = 90) -> str:
    """The last n characters of a completion on one line (where its final answer, or the lack of one, is)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= n else "..." + flat[-n:]


def run_demo(cfg: DemoConfig) -> dict:
    """Run the whole pipeline; print the summary; return it as a dict (also written to demo_summary.json)."""
    import datasets
    from transformers.utils import logging as hf_logging

    from cooper_rl.cooper.reward_model import VerifyRM
    from cooper_rl.evaluate import EvalConfig, evaluate
    from cooper_rl.plot import plot_demo
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

    print(f"[demo] 1/5 the VerifyRM ({cfg.rm}): accuracy on held-out labelled rows", flush=True)
    t = time.time()
    rm_rows = out / "rm_heldout.jsonl"
    _quiet_rm_data(
        RMDataConfig(
            solutions=[f"builtin:test:{cfg.rm_eval_problems}:{levels}"], mode="suite", output=str(rm_rows), seed=1,
            quiet=True,
        )
    )  # fmt: skip
    rows = read_jsonl(rm_rows)
    rm = VerifyRM.from_pretrained(cfg.rm, device="cpu")
    rm_before = rm_metrics(rm, rows)
    times["rm_seconds"] = time.time() - t

    print("[demo] 2/5 what it is for: rollouts that fooled a weaker RM in the committed issue-67 runs", flush=True)
    t = time.time()
    hacks = hacked_rollouts(n=cfg.hacked_rollouts, seed=cfg.seed)
    if hacks:
        scores = rm.score(
            [h["question"] for h in hacks], [h["reference"] for h in hacks], [h["completion"] for h in hacks]
        )
        hacks = [{**h, "verifyrm": p} for h, p in zip(hacks, scores)]
    del rm
    times["hacks_seconds"] = time.time() - t

    print(f"[demo] 3/5 policy warm-up ({cfg.sft_steps} SFT steps on worked solutions)", flush=True)
    t = time.time()
    policy, sft_info = build_demo_policy(cfg)
    times["sft_seconds"] = time.time() - t

    def policy_eval(model: str, name: str) -> dict:
        ecfg = EvalConfig(
            model=model, datasets=[f"builtin:test:{cfg.n_problems}:{levels}"], k=cfg.k,
            max_new_tokens=cfg.max_new_tokens, output_dir=str(out / name), seed=cfg.seed, resume=False,
        )  # fmt: skip
        return evaluate(ecfg)

    print(f"[demo] 4/5 policy avg@k, then Cooper RL ({cfg.rl_steps} steps, the RM's adapter updated)", flush=True)
    t = time.time()
    before = policy_eval(policy, "eval_before")
    rl_dir = out / "rl"
    if rl_dir.exists():  # a demo always starts from the warm-started policy: clear an earlier run
        shutil.rmtree(rl_dir)
    rl = run_rl(
        RLConfig(
            reward="cooper",
            policy=policy,
            rm=cfg.rm,
            datasets=[f"builtin:train:256:{levels}"],
            num_generations=cfg.num_generations,
            prompts_per_step=cfg.prompts_per_step,
            pairs_per_prompt=cfg.pairs_per_prompt,
            negatives=cfg.negatives,
            learning_rate=cfg.learning_rate,
            max_completion_length=cfg.max_new_tokens,
            max_steps=cfg.rl_steps,
            save_steps=cfg.rl_steps,
            # the default of --reward cooper (issue 106): after each RM update its threshold is raised so that it
            # accepts no more of the packaged known negatives than at the start (the small preset, kept by the
            # committed experiments, turns it off; the demo shows the default)
            rm_recalibrate="auto",
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
    rm_after = rm_metrics(VerifyRM.from_pretrained(str(rl_dir / "rm"), device="cpu"), rows)
    times["eval_after_seconds"] = time.time() - t
    activity = cooper_activity(read_jsonl(rl_dir / "metrics.jsonl"))
    write_jsonl(out / "hacked_rollouts.jsonl", hacks)
    accepted = sum(h["verifyrm"] >= 0.5 for h in hacks) / len(hacks) if hacks else None
    figure = plot_demo(
        out / "demo.png",
        hacks,
        {
            "policy avg@k\n(strict rule)": (before["overall"]["avg@k_strict"], after["overall"]["avg@k_strict"]),
            "RM accuracy,\nheld-out rows": (rm_before["accuracy"], rm_after["accuracy"]),
            "RM fooled rate,\nheld-out wrong": (rm_before["fooled_rate"], rm_after["fooled_rate"]),
        },
        title=f"cooper demo: the shipped VerifyRM ({cfg.rm}) and {cfg.rl_steps} Cooper steps",
    )
    summary = {
        "policy_start": policy,
        "before": before["overall"],
        "after": after["overall"],
        "rm": cfg.rm,
        "rm_heldout_before": rm_before,
        "rm_heldout_after": rm_after,
        "hacked_rollouts": {"n": len(hacks), "verifyrm_accepts": accepted, "file": str(out / "hacked_rollouts.jsonl")},
        "cooper": activity,
        "figure": str(figure),
        **times,
        "total_seconds": time.time() - t0,
        "config": asdict(cfg),
    }
    atomic_write_json(out / "demo_summary.json", summary)
    inv = ", ".join(f"{k} {v}" for k, v in sorted(activity["invalid"].items())) or "none"
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(activity["valid_by_kind"].items())) or "none"
    if hacks:
        shown = sorted(hacks, key=lambda h: -h["reward"])[:3]
        hack_lines = (
            f"\nThe hack: {len(hacks)} rollouts with which a policy fooled the static weaker RM (issue 67's runs, "
            f"committed; each scored >= 0.5 by that RM, each wrong by the rule). The shipped RM accepts "
            f"{_pct(accepted)} of them.\n"
            f"{'weaker RM':>10}{'verifyrm':>10}{'rule':>7}  completion (its end)\n"
            + "".join(
                f"{h['reward']:>10.2f}{h['verifyrm']:>10.2f}{'wrong':>7}  {_tail(h['completion'])}\n" for h in shown
            )
        )
    else:
        hack_lines = "\n(the committed issue-67 rollouts are in a clone of the repository: not found here)\n"
    recal = (
        f"; threshold recalibrated on known negatives: logit offset {activity['rm_offset']:+.3f} "
        f"({activity['recalibrate_seconds']:.0f} s)"
        if activity["rm_offset"] is not None
        else ""
    )
    print(
        f"\n== cooper demo: {cfg.rl_steps} RL steps, {cfg.n_problems} built-in test problems x {cfg.k} samples ==\n"
        f"{'':<34}{'before':>10}{'after':>10}\n"
        f"{'policy avg@k (strict rule)':<34}{_pct(before['overall']['avg@k_strict']):>10}"
        f"{_pct(after['overall']['avg@k_strict']):>10}\n"
        f"{'RM accuracy, held-out rows':<34}{_pct(rm_before['accuracy']):>10}{_pct(rm_after['accuracy']):>10}\n"
        f"{'RM fooled rate, held-out wrong':<34}{_pct(rm_before['fooled_rate']):>10}{_pct(rm_after['fooled_rate']):>10}\n"
        f"Cooper step: {activity['valid_pairs']} valid pairs of {activity['pairs_tried']} tried in "
        f"{activity['rm_updates']} RM updates (valid negatives: {kinds}; invalid: {inv}){recal}\n"
        f"rollouts: rule accuracy {_pct(activity['rule_accuracy_mean'])} (first batch "
        f"{_pct(activity['rule_accuracy_first'])}, last {_pct(activity['rule_accuracy_last'])}); "
        f"RM-fooled rate {_pct(activity['rm_fooled_rate_mean'])}; warm-up "
        f"{'cached' if sft_info.get('cached') else 'trained now'}\n"
        + hack_lines
        + f"figure: {figure}   logs: {rl_dir}/metrics.jsonl"
        + (f"   live curves: tensorboard --logdir {rl_dir}" if cfg.report_to == "tensorboard" else "")
        + f"\ndemo finished in {summary['total_seconds']:.0f} s; results in {out}"
        + committed_experiment()
    )
    return summary

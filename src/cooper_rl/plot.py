"""``cooper plot RUN_DIR...``: training-dynamics figures of one or more ``cooper rl`` runs (cf. the paper's Fig. 3/4).

Reads each run's metrics.jsonl (one line per step: rule_accuracy of the rollouts, reward_mean, hacking_warning,
rm_rule_agreement, rm/...) and evals.jsonl (periodic held-out avg@k and RM accuracy, when eval_steps > 0), and
draws, with one colour per run:

    rollout rule accuracy (train)     policy reward (train; x = hacking-monitor warnings)
    held-out accuracy avg@k (strict)  RM accuracy on the fixed labelled set (solid) / RM-vs-rule agreement (dotted)

and, when the runs logged rollouts.jsonl (or a gzipped copy, rollouts.jsonl.gz), a third row:

    rollout length (characters)       share of wrong rollouts (rule verifier) rewarded >= 0.5 (RM fooled)

and, when metrics.jsonl has the learning-signal metrics (learning_signal.py), a last row:

    informative groups per step       zero-spread groups (solid), all-wrong groups (dashed), positive advantage
                                      to rule-wrong rollouts (dotted)

Training curves are smoothed with a trailing moving average (raw values faint behind); curves of up to FEW_POINTS
points are drawn as measured, with markers. A panel these runs logged nothing for says so.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from cooper_rl.io import atomic_write_bytes, read_jsonl


@dataclass
class PlotConfig:
    """Options of ``cooper plot``."""

    POSITIONAL = "run_dirs"  # `cooper plot A B` == `cooper plot --run_dirs A B`

    run_dirs: list[str] = field(default_factory=list, metadata={"help": "Run directories of `cooper rl` (positional)."})
    labels: list[str] | None = field(
        default=None, metadata={"help": "Legend labels, one per run (default: reward mode + dir name)."}
    )
    output: str | None = field(
        default=None, metadata={"help": "PNG path (default: RUN_DIR/dynamics.png of the first run)."}
    )
    smooth: int = field(default=5, metadata={"help": "Moving-average window (steps) for training curves."})
    title: str | None = field(default=None, metadata={"help": "Figure title."})
    max_step: int | None = field(
        default=None, metadata={"help": "Draw steps up to this one only (runs compared at one budget)."}
    )


FEW_POINTS = 20  # up to this many points a curve is drawn as measured, with markers, not smoothed


def moving_average(values: list[float], window: int) -> list[float]:
    """Trailing mean over the last `window` values at each position."""
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def load_run(run_dir: str | Path, max_step: int | None = None) -> dict:
    """{label, metrics (rows with a step), evals, lengths, fooled} of one run directory, up to max_step
    (FileNotFoundError if it has neither metrics nor evals)."""
    d = Path(run_dir)
    upto = lambda rows: [r for r in rows if r.get("step") is not None and (max_step is None or r["step"] <= max_step)]
    metrics = upto(read_jsonl(d / "metrics.jsonl", missing_ok=True))
    evals = upto(read_jsonl(d / "evals.jsonl", missing_ok=True))
    if not metrics and not evals:
        raise FileNotFoundError(f"{d}: no metrics.jsonl or evals.jsonl (is it a `cooper rl` output_dir?)")
    cfg = json.loads((d / "rl_config.json").read_text()) if (d / "rl_config.json").is_file() else {}
    per_step: dict[int, list[dict]] = {}
    # a run's own log, or the gzipped copy that experiments commit
    logged = read_jsonl(d / "rollouts.jsonl", missing_ok=True) or read_jsonl(d / "rollouts.jsonl.gz", missing_ok=True)
    for r in upto(logged):
        per_step.setdefault(r["step"], []).append(r)
    lengths, fooled = [], []
    for step, rs in sorted(per_step.items()):
        lengths.append((step, sum(len(r["completion"]) for r in rs) / len(rs)))
        wrong = [r for r in rs if not r["verdict"]]
        if wrong and cfg.get("reward") != "rule":
            fooled.append((step, sum(r["reward"] >= 0.5 for r in wrong) / len(wrong)))
    return {
        "label": f"{cfg.get('reward', '?')} ({d.name})",
        "metrics": metrics,
        "evals": evals,
        "lengths": lengths,
        "fooled": fooled,
    }


def plot_runs(cfg: PlotConfig) -> Path:
    """Draw the 2x2 figure (a row more with rollouts, one more with learning-signal metrics) for cfg.run_dirs and write it as PNG; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cooper_rl.data import DataError

    if not cfg.run_dirs:
        raise DataError("give at least one run directory: cooper plot RUN_DIR [RUN_DIR ...]")
    runs = [load_run(d, cfg.max_step) for d in cfg.run_dirs]
    if cfg.labels:
        if len(cfg.labels) != len(runs):
            raise DataError(f"{len(cfg.labels)} labels for {len(runs)} runs")
        for r, lab in zip(runs, cfg.labels):
            r["label"] = lab
    has_len = any(r["lengths"] for r in runs)
    has_signal = any("signal/zero_spread_groups" in m for r in runs for m in r["metrics"])
    rows = 2 + has_len + has_signal
    fig, axes = plt.subplots(rows, 2, figsize=(12, 4 * rows), sharex=True)
    (ax_acc, ax_rew), (ax_test, ax_rm) = axes[:2]

    def curve(ax, pts, color, label=None, ls="-"):
        """A training curve: raw values faint, their moving average on top; a handful of points (a short run, one
        reward call per generation batch) as they are, with markers."""
        if not pts:
            return
        xs, ys = zip(*pts)
        if len(pts) <= FEW_POINTS:
            ax.plot(xs, ys, color=color, lw=1.5, ls=ls, marker="o", ms=4, label=label)
            return
        ax.plot(xs, ys, color=color, alpha=0.2, lw=0.8, ls=ls)
        ax.plot(xs, moving_average(list(ys), cfg.smooth), color=color, lw=2, ls=ls, label=label)

    for i, run in enumerate(runs):
        color = f"C{i}"
        m = run["metrics"]
        steps = [r["step"] for r in m]
        for ax, key in ((ax_acc, "rule_accuracy"), (ax_rew, "reward_mean")):
            curve(ax, [(s, r[key]) for s, r in zip(steps, m) if r.get(key) is not None], color, run["label"])
        warn = [(r["step"], r["reward_mean"]) for r in m if r.get("hacking_warning")]
        if warn:
            ax_rew.scatter(*zip(*warn), marker="x", color=color, s=30, zorder=3)
        agree = [(r["step"], r["rm_rule_agreement"]) for r in m if r.get("rm_rule_agreement") is not None]
        if agree:
            ax_rm.plot(*zip(*agree), color=color, ls=":", alpha=0.6, marker="." if len(agree) <= FEW_POINTS else None)
        ev = run["evals"]
        if ev:
            names = sorted({n for e in ev for n in e.get("policy", {})})
            for j, name in enumerate(names):
                pts = [(e["step"], e["policy"][name]["avg@k_strict"]) for e in ev if name in e.get("policy", {})]
                ax_test.plot(
                    *zip(*pts),
                    color=color,
                    marker="o",
                    ms=3,
                    ls=("-", "--", "-.", ":")[j % 4],
                    label=f"{run['label']} · {Path(name).stem if '/' in name else name}",
                )
            rm = [(e["step"], e["rm"]["accuracy"]) for e in ev if e.get("rm")]
            if rm:
                ax_rm.plot(*zip(*rm), color=color, marker="o", ms=3, label=run["label"])
        if has_len:
            curve(axes[2][0], run["lengths"], color, run["label"])
            curve(axes[2][1], run["fooled"], color, run["label"])
        if has_signal:
            sig = lambda k, m=m: [(r["step"], r[f"signal/{k}"]) for r in m if r.get(f"signal/{k}") is not None]
            curve(axes[-1][0], sig("informative_groups_per_step"), color, run["label"])
            curve(axes[-1][1], sig("zero_spread_groups"), color, run["label"])
            curve(axes[-1][1], sig("all_wrong_groups"), color, ls="--")
            curve(axes[-1][1], sig("pos_adv_to_wrong"), color, ls=":")
    ax_acc.set_title("rollout accuracy (rule verifier, train)")
    ax_rew.set_title("policy reward (train; x = hacking warning)")
    ax_test.set_title("held-out accuracy avg@k (strict)")
    ax_rm.set_title("RM accuracy on labelled set (·· RM-vs-rule agreement on rollouts)")
    if has_len:
        axes[2][0].set_title("rollout length (characters, train)")
        axes[2][1].set_title("wrong rollouts rewarded >= 0.5 (RM fooled, train)")
    if has_signal:
        axes[-1][0].set_title("informative groups per step (reward spread > 0)")
        axes[-1][1].set_title("zero-spread (—), all-wrong (--) groups; +advantage to wrong (··)")
    for ax in axes.flat:
        ax.grid(alpha=0.3)
        if not ax.has_data():  # e.g. RM panels of rule runs, evaluations of a run without eval_steps
            ax.text(0.5, 0.5, "not logged by these runs", ha="center", va="center", transform=ax.transAxes, alpha=0.6)
            ax.set_yticks([])
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("step")
    if cfg.title:
        fig.suptitle(cfg.title)
    fig.tight_layout(rect=(0, 0, 1, 0.97) if cfg.title else None)
    out = Path(cfg.output) if cfg.output else Path(cfg.run_dirs[0]) / "dynamics.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out, buf.getvalue())
    return out


def run_plot(cfg: PlotConfig) -> Path:
    """``cooper plot``: write the figure and print its path."""
    out = plot_runs(cfg)
    print(f"[plot] wrote {out}")
    return out


def plot_demo(path, hacks: list[dict], before_after: dict, title: str) -> Path:
    """`cooper demo`'s figure: left, the rollouts that fooled the weaker RM (its recorded score beside the shipped RM's,
    each rollout a line, the 0.5 threshold marked); right, the run's measurements before and after as bars on a fixed
    0-100 % axis. Written as PNG; returns the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_h, ax_b) = plt.subplots(1, 2, figsize=(13, 5.2), gridspec_kw={"width_ratios": [1, 1.3]})
    if hacks:
        weak = [h["reward"] for h in hacks]
        ours = [h["verifyrm"] for h in hacks]
        for w, o in zip(weak, ours):
            ax_h.plot([0, 1], [w, o], color="0.75", lw=0.8, zorder=1)
        ax_h.scatter([0] * len(weak), weak, color="tab:red", s=28, zorder=2)
        ax_h.scatter([1] * len(ours), ours, color="tab:green", s=28, zorder=2)
        acc_w = sum(w >= 0.5 for w in weak) / len(weak)
        acc_o = sum(o >= 0.5 for o in ours) / len(ours)
        ax_h.set_xticks(
            [0, 1],
            [f"weaker RM\n(recorded)\naccepts {100 * acc_w:.0f} %", f"shipped verifyrm\naccepts {100 * acc_o:.0f} %"],
        )
        ax_h.set_title(
            f"{len(hacks)} rollouts that fooled a weaker RM\n(issue 67's static-RM runs; all wrong by the rule)"
        )
    else:
        ax_h.text(0.5, 0.5, "committed issue-67 rollouts\nnot found (outside a clone)", ha="center", va="center")
        ax_h.set_xticks([])
    ax_h.axhline(0.5, color="k", ls="--", lw=1)
    ax_h.text(1.58, 0.51, "accepted: ≥ 0.5", ha="right", va="bottom", fontsize=9)
    ax_h.set_xlim(-0.4, 1.6)
    ax_h.set_ylim(0, 1)
    ax_h.set_ylabel("reward (RM score)")
    names = list(before_after)
    xs = range(len(names))
    b = [100 * (before_after[n][0] or 0) for n in names]
    a = [100 * (before_after[n][1] or 0) for n in names]
    bars_b = ax_b.bar([x - 0.2 for x in xs], b, 0.4, color="tab:blue", alpha=0.55, label="before")
    bars_a = ax_b.bar([x + 0.2 for x in xs], a, 0.4, color="tab:blue", label="after")
    for bars in (bars_b, bars_a):
        ax_b.bar_label(bars, fmt="%.1f", fontsize=9, padding=2)
    ax_b.set_xticks(list(xs), names)
    ax_b.set_ylim(0, 110)
    ax_b.set_ylabel("%")
    ax_b.set_title("this run: before and after the Cooper steps")
    ax_b.legend(loc="upper left", frameon=False)
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

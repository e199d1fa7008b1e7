"""Evaluate a reward model against gold correctness labels, side by side with the rule verifier.

Input rows: VerifyBench (question, answer, completion, gold_correct[, answer_type]) or ours (question,
reference, completion, label), as .jsonl/.json/.parquet (loaded by rm.data.load_rm_rows). The RM's
probabilities, the rule verifier's hard 0/1 decisions (strict and lenient) and raw Math-Verify as TRL's
``accuracy_reward`` applies it (LaTeX answers only, no anchor-free extraction) are scored with the same
binary_metrics; per-answer-type accuracy is added when rows have answer_type, with the RM's errors listed by
type (a few examples each). With --plot, a reliability diagram of the RM (and its ECE) is drawn.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cooper_rl.io import atomic_write_json, file_sha256, write_jsonl
from cooper_rl.rm.data import load_rm_rows


@dataclass
class EvalRMConfig:
    """Options of ``cooper eval-rm``."""

    rm: str = field(
        default="verifyrm",
        metadata={
            "help": "The RM: verifyrm (the shipped one), a trained RM dir (cooper_rm.json), or a backbone for an "
            "untrained baseline."
        },
    )
    data: str = field(
        default="data/verifybench.jsonl",
        metadata={"help": "Labelled .jsonl/.json/.parquet (VerifyBench or question/reference/completion/label)."},
    )
    output: str = field(
        default="results/eval_rm.json", metadata={"help": "Where the JSON report goes ('' to print only)."}
    )
    batch_size: int = field(default=64, metadata={"help": "Sequences per RM scoring forward pass."})
    limit: int | None = field(default=None, metadata={"help": "First N rows only."})
    threshold: float = field(
        default=0.5, metadata={"help": "RM probability at or above which a completion counts as correct."}
    )
    device: str = field(default="auto", metadata={"help": "auto (cuda if visible, else cpu), cpu, cuda, cuda:N."})
    plot: str | None = field(
        default=None, metadata={"help": "Where to save the RM's reliability diagram (.png), if anywhere."}
    )
    examples_per_type: int = field(
        default=3, metadata={"help": "RM errors kept per answer type in the report (to read what it gets wrong)."}
    )
    scores: str | None = field(
        default=None,
        metadata={
            "help": "Where to write every row's scores (.jsonl, .jsonl.gz compressed), if anywhere: its row number "
            "in --data, answer_type, label, the RM's probability and each rule's 0/1, so that a later audit of the "
            "labels can rescore a subset without the RM's weights (the report records --data's sha256)."
        },
    )


def math_verify_scores(completions: list[str], references: list[str]) -> list[float]:
    """1.0/0.0 per completion from TRL's accuracy_reward (raw Math-Verify; an unparseable gold counts 0.0)."""
    from trl.rewards import accuracy_reward

    out = accuracy_reward([[{"role": "assistant", "content": c}] for c in completions], list(references))
    return [float(x or 0.0) for x in out]


def reliability(labels: list[int], probs: list[float], n_bins: int = 10) -> list[dict]:
    """Per equal-width probability bin: n, mean predicted probability, observed positive rate."""
    bins: dict[int, list[tuple[int, float]]] = {}
    for y, p in zip(labels, probs):
        bins.setdefault(min(int(p * n_bins), n_bins - 1), []).append((int(y), float(p)))
    return [
        {
            "bin": [b / n_bins, (b + 1) / n_bins],
            "n": len(v),
            "mean_prob": sum(p for _, p in v) / len(v),
            "positive_rate": sum(y for y, _ in v) / len(v),
        }
        for b, v in sorted(bins.items())
    ]


def plot_reliability(bins: list[dict], ece: float, path: str, title: str) -> None:
    """Save a reliability diagram (observed positive rate vs mean predicted probability per bin)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], "--", color="grey", lw=1, label="perfect calibration")
    ax.plot([b["mean_prob"] for b in bins], [b["positive_rate"] for b in bins], "o-", label=f"RM (ECE {ece:.3f})")
    for b in bins:
        ax.annotate(
            str(b["n"]), (b["mean_prob"], b["positive_rate"]), fontsize=7, xytext=(3, -9), textcoords="offset points"
        )
    ax.set(xlabel="mean RM probability (bin)", ylabel="fraction correct", xlim=(0, 1), ylim=(0, 1), title=title)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _auroc(labels: list[int], probs: list[float]) -> float | None:
    """Area under the ROC curve via the Mann-Whitney rank statistic (tied scores get their mean rank)."""
    n_pos = sum(labels)
    n_neg = len(labels) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    order = sorted(range(len(probs)), key=lambda i: probs[i])
    ranks = [0.0] * len(probs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and probs[order[j + 1]] == probs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1  # mean of 1-based ranks i+1 .. j+1
        i = j + 1
    rank_sum = sum(r for r, y in zip(ranks, labels) if y)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def _ece(labels: list[int], probs: list[float], n_bins: int = 10) -> float:
    """Expected calibration error of P(correct): sum over equal-width bins of (bin share) * |mean label - mean prob|."""
    bins: dict[int, list[tuple[int, float]]] = {}
    for y, p in zip(labels, probs):
        bins.setdefault(min(int(p * n_bins), n_bins - 1), []).append((y, p))
    return sum(
        len(b) / len(labels) * abs(sum(y for y, _ in b) / len(b) - sum(p for _, p in b) / len(b)) for b in bins.values()
    )


def binary_metrics(labels, probs, threshold: float = 0.5) -> dict:
    """Accuracy, precision/recall/F1 of the "correct" class, AUROC, ECE (10 bins), n and positive rate.

    labels are 0/1 (or bools), probs are P(correct) in [0, 1]; prob >= threshold predicts correct.
    Precision/recall/F1 are 0.0 when undefined; AUROC is None when only one class is present.
    """
    labels, probs = [int(bool(y)) for y in labels], [float(p) for p in probs]
    if len(labels) != len(probs):
        raise ValueError(f"{len(labels)} labels but {len(probs)} probabilities")
    if not labels:
        raise ValueError("binary_metrics needs at least one row")
    preds = [int(p >= threshold) for p in probs]
    tp = sum(1 for y, p in zip(labels, preds) if y and p)
    fp = sum(1 for y, p in zip(labels, preds) if not y and p)
    fn = sum(1 for y, p in zip(labels, preds) if y and not p)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return {
        "n": len(labels),
        "positive_rate": sum(labels) / len(labels),
        "predicted_positive_rate": sum(preds) / len(preds),
        "accuracy": sum(1 for y, p in zip(labels, preds) if y == p) / len(labels),
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "auroc": _auroc(labels, probs),
        "ece": _ece(labels, probs),
    }


def labelled_scores(rm, rows: list[dict], batch_size: int = 64) -> list[float]:
    """A VerifyRM's score of each labelled row (question, reference, completion), in the rows' order."""
    texts = ([row[k] for row in rows] for k in ("question", "reference", "completion"))
    return [float(p) for p in rm.score(*texts, batch_size=batch_size)]


def labelled_metrics(rm, rows: list[dict], batch_size: int = 64) -> dict:
    """binary_metrics of a VerifyRM's scores on labelled rows (question, reference, completion, label)."""
    return binary_metrics([row["label"] for row in rows], labelled_scores(rm, rows, batch_size))


def format_table(report: dict) -> str:
    """Plain-text table of the judges' metrics (rows) and per-answer-type accuracy."""
    cols = ["accuracy", "precision", "recall", "f1", "auroc", "ece"]
    fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
    lines = [f"{'judge':<14}" + "".join(f"{c:>10}" for c in cols)]
    for name, m in report["judges"].items():
        lines.append(f"{name:<14}" + "".join(f"{fmt(m[c]):>10}" for c in cols))
    if report.get("per_answer_type"):
        judges = list(report["judges"])
        lines += ["", f"{'answer_type':<20}{'n':>6}" + "".join(f"{j:>14}" for j in judges)]
        for t, m in report["per_answer_type"].items():
            lines.append(f"{t:<20}{m['n']:>6}" + "".join(f"{fmt(m[j]):>14}" for j in judges))
    return "\n".join(lines)


def run_eval_rm(cfg: EvalRMConfig) -> dict:
    """``cooper eval-rm``: score rows with the RM and the rule verifier, write JSON, print a table."""
    from cooper_rl.cooper.reward_model import VerifyRM
    from cooper_rl.cooper.rm_inputs import TEMPLATE_VERSION
    from cooper_rl.verify import verify_batch

    rows = load_rm_rows(cfg.data, cfg.limit)
    qs, refs, comps = [r["question"] for r in rows], [r["reference"] for r in rows], [r["completion"] for r in rows]
    labels = [r["label"] for r in rows]

    rm = VerifyRM.from_pretrained(cfg.rm, device=cfg.device)
    t0 = time.time()
    probs = rm.score(qs, refs, comps, batch_size=cfg.batch_size)
    score_s = time.time() - t0
    judged = {
        "rm": probs,
        "rule_strict": [float(v) for v in verify_batch(comps, refs, mode="strict")],
        "rule_lenient": [float(v) for v in verify_batch(comps, refs, mode="lenient")],
        "math_verify": math_verify_scores(comps, refs),
    }
    thresholds = {"rm": cfg.threshold, "rule_strict": 0.5, "rule_lenient": 0.5, "math_verify": 0.5}
    report = {
        "data": cfg.data,
        "data_sha256": file_sha256(cfg.data),  # which version of the file (a suite may be rebuilt under its name)
        "rm": cfg.rm,
        "rm_trained": bool(rm.meta),
        "template_version": TEMPLATE_VERSION,
        "max_length": rm.max_length,
        "n": len(rows),
        "score_seconds": score_s,
        "judges": {name: binary_metrics(labels, p, thresholds[name]) for name, p in judged.items()},
        "per_answer_type": {},
        "reliability": reliability(labels, probs),
        "errors_by_type": {},
        "config": asdict(cfg),
    }
    types = sorted({r["answer_type"] for r in rows if "answer_type" in r})
    for t in types:
        idx = [i for i, r in enumerate(rows) if r.get("answer_type") == t]
        entry = {"n": len(idx)}
        for name, p in judged.items():
            entry[name] = sum(int(p[i] >= thresholds[name]) == labels[i] for i in idx) / len(idx)
        report["per_answer_type"][t] = entry
    for i, r in enumerate(rows):
        if int(probs[i] >= cfg.threshold) != labels[i]:
            kept = report["errors_by_type"].setdefault(r.get("answer_type", "all"), {"n": 0, "examples": []})
            kept["n"] += 1
            if len(kept["examples"]) < cfg.examples_per_type:
                kept["examples"].append({**{k: r[k] for k in ("reference", "completion", "label")}, "rm": probs[i]})
    if cfg.scores:
        per_row = [
            {"row": i, "answer_type": r.get("answer_type"), "label": labels[i], **{k: p[i] for k, p in judged.items()}}
            for i, r in enumerate(rows)
        ]
        write_jsonl(cfg.scores, per_row)
    if cfg.plot:
        plot_reliability(report["reliability"], report["judges"]["rm"]["ece"], cfg.plot, Path(cfg.data).name)

    if cfg.output:
        out = Path(cfg.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(out, report)
    print(format_table(report))
    if cfg.output:
        print(f"wrote {cfg.output}")
    return report

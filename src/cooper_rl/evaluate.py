"""Evaluation: avg@k and pass@k accuracy of a policy on math word problems (paper protocol).

For every problem, k completions are sampled (default k=8, T=0.7, top-p 0.95), the final answer of
each is extracted and checked against the reference by the rule verifier. avg@k is the mean
correctness over all samples (per problem, then averaged over problems); pass@k is the fraction of
problems with at least one correct sample. Both are reported in the strict mode (answer in
``\\boxed{}``/``####``/"The answer is", the mode rewards use) and in the lenient mode (last number).

Samples are appended to ``samples.jsonl`` as each batch finishes, and a rerun with the same output
directory resumes where the last one stopped.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from cooper_rl import data, verify
from cooper_rl.generation import PROMPT_TEMPLATE, build_prompt, sample_completions
from cooper_rl.io import append_jsonl, atomic_write_json, read_jsonl, write_jsonl


@dataclass
class EvalConfig:
    """Options of ``cooper eval``."""

    model: str = field(
        default="smollm2-135m-instruct", metadata={"help": "Policy to evaluate: registry name, local path or hub id."}
    )
    datasets: list[str] = field(
        default_factory=lambda: ["builtin:test:50"],
        metadata={"help": "Sources: builtin[:split[:n[:levels]]], a .jsonl/.json/.parquet file, or hf:NAME[:CONFIG]."},
    )
    limit: int | None = field(default=None, metadata={"help": "First N problems of each dataset."})
    question_field: str | None = field(default=None, metadata={"help": "Question column (auto-detected if unset)."})
    answer_field: str | None = field(
        default=None, metadata={"help": "Reference answer column (auto-detected if unset)."}
    )
    k: int = field(default=8, metadata={"help": "Samples per problem for avg@k and pass@k (paper: 8)."})
    temperature: float = field(default=0.7, metadata={"help": "Sampling temperature (paper: 0.7; 0 = greedy)."})
    top_p: float = field(default=0.95, metadata={"help": "Nucleus sampling threshold (paper: 0.95)."})
    max_new_tokens: int = field(default=512, metadata={"help": "Longest completion, in new tokens."})
    batch_size: int = field(default=64, metadata={"help": "Sequences per generate() call (problems x k)."})
    prompt_template: str = field(default=PROMPT_TEMPLATE, metadata={"help": "Format string with {question}."})
    system_prompt: str | None = field(default=None, metadata={"help": "Optional system message before the question."})
    use_chat_template: bool = field(
        default=True, metadata={"help": "Apply the tokenizer's chat template if it has one."}
    )
    timeout: float = field(
        default=verify.DEFAULT_TIMEOUT,
        metadata={"help": "Rule-verifier limit per symbolic check (s); a check past it counts as wrong."},
    )
    output_dir: str = field(
        default="results/eval", metadata={"help": "Where summary.json and samples.jsonl go (a rerun here resumes)."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of sampling and of the built-in problem generator."})
    data_seed: int | None = field(
        default=None,
        metadata={
            "help": "Seed of the built-in problem generator only (default: seed): fix it to compare policies "
            "sampled with other seeds on the same problems."
        },
    )
    dtype: str = field(
        default="auto",
        metadata={"help": "Model dtype: auto (bf16 on a bf16 GPU, else fp32), float32, bfloat16, float16."},
    )
    device: str = field(default="auto", metadata={"help": "auto (cuda if visible, else cpu), cpu, cuda, cuda:N."})
    resume: bool = field(default=True, metadata={"help": "Reuse finished samples in output_dir/samples.jsonl."})


def _read_done(path: Path, k: int) -> dict[tuple[str, str], list[dict]]:
    """Finished samples from an earlier run, grouped by (dataset, id); problems with < k samples are dropped."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in read_jsonl(path, missing_ok=True):  # a line cut by a kill is skipped: its problem is redone
        groups[(row["dataset"], row["id"])].append(row)
    return {key: rows for key, rows in groups.items() if len(rows) >= k}


def summarize(rows: list[dict], k: int) -> dict:
    """avg@k / pass@k (strict and lenient), answer rate and mean length from per-sample rows."""
    by_problem: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_problem[r["id"]].append(r)
    n = len(by_problem)
    if n == 0:
        return {"n_problems": 0}

    def mean(xs):
        return sum(xs) / len(xs)

    out = {"n_problems": n, "k": k, "n_samples": len(rows)}
    for mode in ("strict", "lenient"):
        key = "correct" if mode == "strict" else "correct_lenient"
        out[f"avg@k_{mode}"] = mean([mean([s[key] for s in g]) for g in by_problem.values()])
        out[f"pass@k_{mode}"] = mean([float(any(s[key] for s in g)) for g in by_problem.values()])
    out["answered_rate"] = mean([r["extracted"] is not None for r in rows])
    out["mean_new_tokens"] = mean([r["n_tokens"] for r in rows])
    return out


def evaluate(cfg: EvalConfig, model=None, tokenizer=None) -> dict:
    """Run the evaluation described by ``cfg``; write summary.json and samples.jsonl; return the summary."""
    import torch

    from cooper_rl.models import load_causal_lm

    out_dir = Path(cfg.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    samples_path = out_dir / "samples.jsonl"
    # Samples are reused only if they were generated the same way (same model and sampling settings).
    gen_keys = (
        "model",
        "k",
        "temperature",
        "top_p",
        "max_new_tokens",
        "prompt_template",
        "system_prompt",
        "use_chat_template",
        "seed",
        "data_seed",
    )
    gen_cfg = {key: getattr(cfg, key) for key in gen_keys}
    cfg_path = out_dir / "generation_config.json"
    if cfg.resume and cfg_path.is_file() and json.loads(cfg_path.read_text()) != gen_cfg:
        raise ValueError(
            f"{out_dir} holds samples generated with other settings ({cfg_path}); "
            "use another output_dir or --resume false"
        )
    atomic_write_json(cfg_path, gen_cfg)
    done = _read_done(samples_path, cfg.k) if cfg.resume else {}
    # start clean, or keep only complete groups, so partial ones from a kill are redone exactly once
    write_jsonl(samples_path, [r for rows in done.values() for r in rows[: cfg.k]])

    datasets = {}
    load_stats = {}
    for src in cfg.datasets:
        res = data.load_problems(
            src,
            question_field=cfg.question_field,
            answer_field=cfg.answer_field,
            limit=cfg.limit,
            seed=cfg.seed if cfg.data_seed is None else cfg.data_seed,
        )
        datasets[src] = res.problems
        load_stats[src] = {"n_read": res.n_read, "n_skipped": res.n_skipped}
    todo = [(src, p) for src, ps in datasets.items() for p in ps if (src, p.id) not in done]

    t0 = time.time()
    if todo:
        if model is None:
            model, tokenizer = load_causal_lm(cfg.model, dtype=cfg.dtype, device=cfg.device)
        torch.manual_seed(cfg.seed)
        prompts = [
            build_prompt(tokenizer, p.question, cfg.prompt_template, cfg.system_prompt, cfg.use_chat_template)
            for _, p in todo
        ]
        # Sort by prompt length so each batch pads little; results are keyed by problem, not order.
        order = sorted(range(len(todo)), key=lambda i: len(prompts[i]))
        per_batch = max(1, cfg.batch_size // cfg.k)
        bar = tqdm(total=len(todo) * cfg.k, desc="eval samples", unit="sample")
        for start in range(0, len(order), per_batch):
            idx = order[start : start + per_batch]
            outs = sample_completions(
                model,
                tokenizer,
                [prompts[i] for i in idx],
                cfg.k,
                temperature=cfg.temperature,
                top_p=cfg.top_p,
                max_new_tokens=cfg.max_new_tokens,
            )
            comps = [c for o in outs for c, _ in o]
            refs = [todo[i][1].answer for i in idx for _ in range(cfg.k)]
            strict = verify.verify_batch_answers(comps, refs, mode="strict", timeout=cfg.timeout)
            lenient = verify.verify_batch_answers(comps, refs, mode="lenient", timeout=cfg.timeout)
            rows, j = [], 0
            for i, o in zip(idx, outs):
                src, p = todo[i]
                for s, (text, n_tok) in enumerate(o):
                    rows.append(
                        {
                            "dataset": src,
                            "id": p.id,
                            "sample": s,
                            "question": p.question,
                            "reference": p.answer,
                            "completion": text,
                            "n_tokens": n_tok,
                            "extracted": strict[j][0],
                            "correct": bool(strict[j][1]),
                            "extracted_lenient": lenient[j][0],
                            "correct_lenient": bool(lenient[j][1]),
                        }
                    )
                    j += 1
            append_jsonl(samples_path, rows)  # flushed per batch: a kill loses at most this batch
            bar.update(len(comps))
        bar.close()

    rows = list(_read_done(samples_path, cfg.k).values())
    by_ds: dict[str, list[dict]] = defaultdict(list)
    for group in rows:
        for r in group[: cfg.k]:
            by_ds[r["dataset"]].append(r)
    per_dataset = {src: {**summarize(by_ds[src], cfg.k), **load_stats[src]} for src in cfg.datasets}
    overall = summarize([r for src in cfg.datasets for r in by_ds[src]], cfg.k)
    summary = {
        "model": cfg.model,
        "config": asdict(cfg),
        "per_dataset": per_dataset,
        "overall": overall,
        "generation_seconds": round(time.time() - t0, 1),
        "resumed_problems": len(done),
    }
    atomic_write_json(out_dir / "summary.json", summary)
    return summary


def format_table(summary: dict) -> str:
    """A plain-text table of per-dataset and overall accuracy."""
    cols = [
        "n_problems",
        "avg@k_strict",
        "pass@k_strict",
        "avg@k_lenient",
        "pass@k_lenient",
        "answered_rate",
        "mean_new_tokens",
    ]
    head = ["dataset", "n", "avg@k", "pass@k", "avg@k (lenient)", "pass@k (lenient)", "answered", "tokens"]
    items = list(summary["per_dataset"].items()) + [("overall", summary["overall"])]
    rows = [
        [name, m.get("n_problems", 0)] + [_pct(m.get(c)) for c in cols[1:-1]] + [f"{m.get(cols[-1], 0):.0f}"]
        for name, m in items
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths))  # noqa: E731
    k = summary["overall"].get("k", "")
    return f"{summary['model']}  (k={k})\n" + "\n".join(
        [line(head), line(["-" * w for w in widths])] + [line(r) for r in rows]
    )


def _pct(x) -> str:
    return "" if x is None else f"{100 * x:.1f}%"


def run_eval(cfg: EvalConfig) -> dict:
    """``cooper eval``: avg@k / pass@k of a model; prints the table, writes JSON + jsonl."""
    summary = evaluate(cfg)
    print(format_table(summary))
    print(f"wrote {Path(cfg.output_dir) / 'summary.json'} and samples.jsonl")
    return summary

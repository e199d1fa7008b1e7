"""``cooper collect``: sample completions of math problems from several models, for reward-model data.

For every (problem, source model) pair, N completions are sampled and written as jsonl rows::

    {"question", "reference", "completion", "source", "problem_id", "sample"}

Sources are model specs (see ``cooper_rl.llm``): ``hf:NAME_OR_PATH`` (local HF model) or
``openai:MODEL@http://HOST:PORT/v1`` (OpenAI-compatible endpoint). Rows are appended and flushed after
every batch, so a crash loses at most the batch in flight. A rerun with the same output resumes: a
truncated last line is dropped (the file is rewritten atomically), groups that already have N samples
are skipped and partial groups are completed up to N. Failed requests write nothing and are retried by
the next run.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from cooper_rl import data
from cooper_rl.generation import PROMPT_TEMPLATE, chat_messages
from cooper_rl.io import append_jsonl, drop_cut_tail, iter_jsonl
from cooper_rl.llm import LocalChat, make_chat


@dataclass
class CollectConfig:
    """Options of ``cooper collect``."""

    problems: list[str] = field(
        default_factory=lambda: ["builtin:train:200"],
        metadata={"help": "Sources: builtin[:split[:n[:levels]]], a .jsonl/.json/.parquet file, or hf:NAME[:CONFIG]."},
    )
    question_field: str | None = field(default=None, metadata={"help": "Question column (auto-detected if unset)."})
    answer_field: str | None = field(
        default=None, metadata={"help": "Reference answer column (auto-detected if unset)."}
    )
    limit: int | None = field(default=None, metadata={"help": "First N problems of each problem source."})
    samples_per_problem: int = field(default=4, metadata={"help": "Completions per (problem, source model)."})
    sources: list[str] = field(
        default_factory=lambda: ["hf:smollm2-135m-instruct"],
        metadata={"help": "Model specs: hf:NAME_OR_PATH (local HF model) or openai:MODEL@http://HOST:PORT/v1."},
    )
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature (diverse completions)."})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling threshold."})
    max_new_tokens: int = field(default=512, metadata={"help": "Longest completion, in tokens."})
    batch_size: int = field(
        default=32,
        metadata={
            "help": "Completions per batch: one generate() call for local models; written and flushed after each batch."
        },
    )
    concurrency: int = field(default=16, metadata={"help": "Requests in flight at once per endpoint."})
    timeout: float = field(default=120.0, metadata={"help": "Per-request timeout for endpoints (s)."})
    max_retries: int = field(default=3, metadata={"help": "Retries of a failed request (timeouts, 429, 5xx)."})
    api_key_env: str = field(
        default="OPENAI_API_KEY",
        metadata={"help": "Environment variable holding the endpoint API key ('EMPTY' if unset)."},
    )
    prompt_template: str = field(
        default=PROMPT_TEMPLATE, metadata={"help": "User message; format string with {question}."}
    )
    system_prompt: str | None = field(default=None, metadata={"help": "Optional system message."})
    output: str = field(
        default="data/collected.jsonl", metadata={"help": "jsonl to append rows to (resumed if present)."}
    )
    seed: int = field(default=0, metadata={"help": "Seed for local sampling and the builtin problem generator."})
    dtype: str = field(
        default="auto",
        metadata={"help": "dtype of hf: sources: auto (bf16 on a bf16 GPU, else fp32), float32, bfloat16, float16."},
    )
    device: str = field(
        default="auto", metadata={"help": "Device of hf: sources: auto (cuda if visible, else cpu), cpu, cuda, cuda:N."}
    )


def read_existing(path: Path) -> tuple[dict[tuple[str, str], set[int]], bool]:
    """Sample indices already in ``path`` per (problem_id, source), and whether a truncated last line was dropped.

    A last line without newline or with invalid JSON (a kill mid-write) is removed from the file (atomically);
    every complete line is kept byte for byte. Invalid JSON or a non-collect row elsewhere raises DataError.
    """
    done: dict[tuple[str, str], set[int]] = defaultdict(set)
    truncated = drop_cut_tail(path)
    if not path.is_file():
        return done, truncated
    for i, row in iter_jsonl(path):
        try:
            done[(row["problem_id"], row["source"])].add(int(row["sample"]))
        except (KeyError, TypeError, ValueError) as e:
            raise data.DataError(
                f"{path}: row {i}: not a collect row ({type(e).__name__}: {e}); "
                "fix or remove the line, or use another output"
            ) from e
    return done, truncated


def load_all_problems(cfg: CollectConfig) -> tuple[list[tuple[str, data.Problem]], int]:
    """[(problem_id, Problem)] over all problem sources, and how many duplicates were dropped.

    The id is the problem's own id; a repeated id with the same question is a duplicate (dropped), with
    another question it is qualified as ``SOURCE/ID`` so that groups never mix different problems.
    """
    seen: dict[str, str] = {}
    out, n_dup = [], 0
    for src in cfg.problems:
        res = data.load_problems(
            src, question_field=cfg.question_field, answer_field=cfg.answer_field, limit=cfg.limit, seed=cfg.seed
        )
        for p in res.problems:
            pid = p.id
            if pid in seen and seen[pid] != p.question:
                pid = f"{p.source}/{p.id}"
            if pid in seen:
                n_dup += 1
                continue
            seen[pid] = p.question
            out.append((pid, p))
    return out, n_dup


def run_collect(cfg: CollectConfig, chats: dict | None = None) -> dict:
    """``cooper collect``: sample N completions per (problem, source), append them to ``cfg.output``; return counts.

    ``chats`` optionally maps a source spec to an already built chat backend (e.g. a loaded LocalChat).
    """
    if cfg.samples_per_problem < 1:
        raise ValueError("samples_per_problem must be >= 1")
    if not cfg.sources:
        raise ValueError("no sources given (model specs like hf:smollm2-135m-instruct or openai:MODEL@URL)")
    # build every backend first, so a bad spec fails before any work (local models load on first use)
    chats = {
        spec: (chats or {}).get(spec)
        or make_chat(
            spec,
            concurrency=cfg.concurrency,
            timeout=cfg.timeout,
            max_retries=cfg.max_retries,
            api_key_env=cfg.api_key_env,
            batch_size=cfg.batch_size,
            dtype=cfg.dtype,
            device=cfg.device,
        )
        for spec in dict.fromkeys(cfg.sources)
    }  # a spec listed twice runs once
    out_path = Path(cfg.output)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    done, truncated = read_existing(out_path)
    if truncated:
        print(f"[collect] dropped a truncated last line of {out_path}; its sample is redone", flush=True)
    problems, n_dup = load_all_problems(cfg)
    n = cfg.samples_per_problem
    report = {
        "output": str(out_path),
        "n_problems": len(problems),
        "duplicate_problems": n_dup,
        "samples_per_problem": n,
        "written": 0,
        "skipped": 0,
        "failed_requests": 0,
        "dropped_truncated_line": truncated,
        "per_source": {},
    }
    t0 = time.time()
    for spec in chats:
        # work: (problem_id, problem, sample indices still missing), grouped by how many are missing
        todo: dict[int, list] = defaultdict(list)
        skipped = 0
        for pid, p in problems:
            have = done.get((pid, spec), set())
            missing = [s for s in range(n) if s not in have][: max(0, n - len(have))]
            skipped += n - len(missing)
            if missing:
                todo[len(missing)].append((pid, p, missing))
        stats = Counter(written=0, skipped=skipped, failed_requests=0)
        if todo:
            chat = chats[spec]
            if isinstance(chat, LocalChat):
                import torch

                torch.manual_seed(cfg.seed)
            total = sum(k * len(items) for k, items in todo.items())
            bar = tqdm(total=total, desc=f"collect {spec}", unit="sample")
            for k, items in sorted(todo.items(), reverse=True):
                per_batch = max(1, cfg.batch_size // k)
                if not isinstance(chat, LocalChat):  # keep every endpoint slot busy
                    per_batch = max(per_batch, cfg.concurrency)
                for start in range(0, len(items), per_batch):
                    batch = items[start : start + per_batch]
                    messages = [chat_messages(p.question, cfg.prompt_template, cfg.system_prompt) for _, p, _ in batch]
                    outs = chat.chat_many(
                        messages, temperature=cfg.temperature, top_p=cfg.top_p, max_tokens=cfg.max_new_tokens, n=k
                    )
                    rows = []
                    for (pid, p, missing), texts in zip(batch, outs):
                        if texts is None:
                            stats["failed_requests"] += 1
                            continue
                        rows += [
                            {
                                "question": p.question,
                                "reference": p.answer,
                                "completion": text,
                                "source": spec,
                                "problem_id": pid,
                                "sample": s,
                            }
                            for s, text in zip(missing, texts)
                        ]
                    append_jsonl(out_path, rows)  # flushed per batch: a kill loses at most the batch in flight
                    stats["written"] += len(rows)
                    bar.update(k * len(batch))
            bar.close()
        report["per_source"][spec] = {**stats, "failure_reasons": dict(chats[spec].failures)}
        for key in ("written", "skipped", "failed_requests"):
            report[key] += stats[key]
    report["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(report))
    if report["failed_requests"]:
        print(f"[collect] {report['failed_requests']} requests failed; rerun the same command to retry them")
    return report

"""``cooper label``: hybrid labelling of collected completions (rule verifier + LLM judge), as in Cooper.

Each row (question, reference, completion) gets
- a rule label: ``verify_batch`` (Math-Verify based) of the completion against the reference;
- a judge label: an LLM asked "Is the final answer of the completion equivalent to the reference
  answer? Answer yes or no.", the verdict parsed from the first yes/no word of its reply.

Policies: ``agree`` (the paper's: keep rows where rule and judge agree, label = the agreed value),
``rule`` (label = rule; the judge, if given, is only recorded) and ``judge`` (label = judge). Rows whose
judge request failed or gave no verdict are skipped and counted under policies that need the judge,
never guessed. Without a judge the policy falls back to ``rule``.

Outputs (all written atomically): labelled rows, the rows where rule and judge disagree (to inspect),
and a stats JSON.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from cooper_rl import verify
from cooper_rl.data import DataError, extract_reference
from cooper_rl.io import atomic_write_json, iter_jsonl, write_jsonl
from cooper_rl.llm import TIMEOUT, make_chat

POLICIES = ("agree", "rule", "judge")
JUDGE_PROMPT = """You are checking a student's solution to a math problem against the reference answer.

Question:
{question}

Reference answer:
{reference}

Student's completion:
{completion}

Is the final answer of the completion equivalent to the reference answer? Answer yes or no."""

_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_VERDICT_RE = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


@dataclass
class LabelConfig:
    """Options of ``cooper label``."""

    input: str = field(
        default="data/collected.jsonl",
        metadata={
            "help": "jsonl of (question, reference or reference_answer, completion[, source]) rows, e.g. from cooper collect."
        },
    )
    judge: str | None = field(
        default=None,
        metadata={
            "help": "Judge model spec: openai:MODEL@http://HOST:PORT/v1 or hf:NAME_OR_PATH. Unset: rule labels only."
        },
    )
    policy: str = field(
        default="agree",
        metadata={"help": "agree: keep rows where rule and judge agree (paper); rule: rule label; judge: judge label."},
    )
    verify_mode: str = field(
        default="strict",
        metadata={
            "help": "Rule verifier mode: strict (\\boxed{}, ####, 'the answer is') or lenient (also the last number)."
        },
    )
    verify_timeout: float = field(
        default=verify.DEFAULT_TIMEOUT, metadata={"help": "Rule verifier limit per check (s)."}
    )
    output: str = field(default="data/labelled.jsonl", metadata={"help": "Labelled rows (jsonl)."})
    disagreements: str | None = field(
        default=None,
        metadata={"help": "Rows where rule and judge disagree (default: OUTPUT stem + .disagreements.jsonl)."},
    )
    stats: str | None = field(default=None, metadata={"help": "Stats JSON (default: OUTPUT stem + .stats.json)."})
    judge_max_tokens: int = field(default=64, metadata={"help": "Longest judge reply, in tokens."})
    judge_max_chars: int = field(
        default=8000,
        metadata={"help": "Completions longer than this are cut to their last N characters in the judge prompt."},
    )
    batch_size: int = field(default=256, metadata={"help": "Rows sent to the judge per round (progress granularity)."})
    local_batch_size: int = field(
        default=16, metadata={"help": "Sequences per generate() call of a local (hf:) judge."}
    )
    concurrency: int = field(default=16, metadata={"help": "Requests in flight at once to an openai: judge."})
    timeout: float = field(default=60.0, metadata={"help": "Per-request judge timeout (s)."})
    max_retries: int = field(default=3, metadata={"help": "Retries of a failed judge request (timeouts, 429, 5xx)."})
    api_key_env: str = field(
        default="OPENAI_API_KEY",
        metadata={"help": "Environment variable holding the judge API key ('EMPTY' if unset)."},
    )
    dtype: str = field(
        default="auto",
        metadata={"help": "dtype of an hf: judge: auto (bf16 on a bf16 GPU, else fp32), float32, bfloat16, float16."},
    )
    device: str = field(
        default="auto",
        metadata={"help": "Device of an hf: judge: auto (cuda if visible, else cpu), cpu, cuda, cuda:N."},
    )


def parse_verdict(text: str | None) -> bool | None:
    """True/False from the first standalone 'yes'/'no' of a judge reply ("**No**", "The answer is yes."); None if absent.

    Reasoning in ``<think>...</think>`` (or everything before a lone ``</think>``) is ignored.
    """
    if not isinstance(text, str):
        return None
    text = _THINK_RE.sub(" ", text)
    if "</think>" in text.lower():
        text = text[text.lower().rindex("</think>") + len("</think>") :]
    m = _VERDICT_RE.search(text)
    return None if m is None else m.group(1).lower() == "yes"


def judge_messages(question: str, reference: str, completion: str, max_chars: int = 8000) -> list[dict]:
    """The reference-based yes/no judge prompt as chat messages (long completions keep their end)."""
    if len(completion) > max_chars:
        completion = "..." + completion[-max_chars:]
    return [
        {"role": "user", "content": JUDGE_PROMPT.format(question=question, reference=reference, completion=completion)}
    ]


def read_rows(path: str | os.PathLike) -> list[dict]:
    """Rows of a jsonl file with question, reference (or reference_answer) and completion; DataError otherwise."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"input file not found: {path}")
    rows = []
    for i, row in iter_jsonl(path):
        if not isinstance(row, dict):
            raise DataError(f"{path}: row {i}: expected a JSON object, got {type(row).__name__}")
        ref_field = "reference" if "reference" in row else "reference_answer"
        for name in ("question", ref_field, "completion"):
            if name not in row:
                raise DataError(f"{path}: row {i}: missing field '{name}' (columns: {sorted(row)})")
        for name in ("question", "completion"):
            if not isinstance(row[name], str):
                raise DataError(f"{path}: row {i}: field '{name}' must be a string, got {type(row[name]).__name__}")
        ref = extract_reference(row[ref_field])
        if ref is None:
            raise DataError(f"{path}: row {i}: field '{ref_field}' has no usable reference answer ({row[ref_field]!r})")
        rows.append(
            {
                "question": row["question"],
                "reference": ref,
                "completion": row["completion"],
                "source": row.get("source", "unknown"),
                "problem_id": row.get("problem_id"),
                "sample": row.get("sample"),
            }
        )
    return rows


def judge_rows(
    chat, rows: list[dict], cfg: LabelConfig
) -> tuple[list[bool | None], list[str | None], list[str | None]]:
    """(verdicts, raw replies, failure reasons) of the judge for each row; reasons are timeout/error/unparseable."""
    verdicts: list[bool | None] = []
    replies: list[str | None] = []
    reasons: list[str | None] = []
    bar = tqdm(total=len(rows), desc="judge", unit="row")
    for start in range(0, len(rows), cfg.batch_size):
        batch = rows[start : start + cfg.batch_size]
        msgs = [judge_messages(r["question"], r["reference"], r["completion"], cfg.judge_max_chars) for r in batch]
        outs, errs = chat.chat_many_detailed(msgs, temperature=0.0, top_p=1.0, max_tokens=cfg.judge_max_tokens, n=1)
        for out, err in zip(outs, errs):
            reply = out[0] if out else None
            verdict = parse_verdict(reply)
            replies.append(reply)
            verdicts.append(verdict)
            if out is None:
                reasons.append("timeout" if err == TIMEOUT else "error")
            else:
                reasons.append("unparseable" if verdict is None else None)
        bar.update(len(batch))
    bar.close()
    return verdicts, replies, reasons


def _sibling(output: Path, suffix: str) -> Path:
    """output 'dir/x.jsonl' -> 'dir/x' + suffix."""
    return output.with_name(output.stem + suffix)


def run_label(cfg: LabelConfig, chat=None) -> dict:
    """``cooper label``: rule + judge labels for every row, kept per ``cfg.policy``; writes rows, disagreements, stats.

    ``chat`` optionally is an already built judge backend for ``cfg.judge`` (e.g. a loaded LocalChat).
    """
    if cfg.policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {cfg.policy!r}")
    policy = cfg.policy
    if not cfg.judge and policy != "rule":
        print(f"[label] no judge given: falling back to rule labels (policy '{policy}' -> 'rule')", flush=True)
        policy = "rule"
    out_path = Path(cfg.output)
    dis_path = Path(cfg.disagreements) if cfg.disagreements else _sibling(out_path, ".disagreements.jsonl")
    stats_path = Path(cfg.stats) if cfg.stats else _sibling(out_path, ".stats.json")
    t0 = time.time()
    rows = read_rows(cfg.input)

    rule = verify.verify_batch(
        [r["completion"] for r in rows],
        [r["reference"] for r in rows],
        mode=cfg.verify_mode,
        timeout=cfg.verify_timeout,
    )
    if cfg.judge:
        chat = chat or make_chat(
            cfg.judge,
            concurrency=cfg.concurrency,
            timeout=cfg.timeout,
            max_retries=cfg.max_retries,
            api_key_env=cfg.api_key_env,
            batch_size=cfg.local_batch_size,
            dtype=cfg.dtype,
            device=cfg.device,
        )
        verdicts, replies, reasons = judge_rows(chat, rows, cfg)
    else:
        verdicts, replies, reasons = [None] * len(rows), [None] * len(rows), [None] * len(rows)

    kept, disagreements = [], []
    failures: Counter = Counter(r for r in reasons if r)
    per_source: dict[str, Counter] = defaultdict(Counter)
    n_both = n_agree = 0
    for r, rl, jl, reply, reason in zip(rows, rule, verdicts, replies, reasons):
        src = per_source[r["source"]]
        src["n_in"] += 1
        rl = int(rl)
        jl = None if jl is None else int(jl)
        out = {
            "question": r["question"],
            "reference": r["reference"],
            "completion": r["completion"],
            "label": None,
            "rule_label": rl,
            "judge_label": jl,
            "source": r["source"],
        }
        for key in ("problem_id", "sample"):
            if r[key] is not None:
                out[key] = r[key]
        if jl is not None:
            n_both += 1
            n_agree += rl == jl
            src["judged"] += 1
            src["agree"] += rl == jl
            if rl != jl:
                disagreements.append(
                    {**out, "judge_reply": reply, "extracted": verify.extract_answer(r["completion"], cfg.verify_mode)}
                )
        src["judge_failures"] += reason is not None
        if policy == "rule":
            out["label"] = rl
        elif jl is None:
            continue  # the judge is needed but gave no verdict: skip, never guess
        elif policy == "judge":
            out["label"] = jl
        elif rl == jl:
            out["label"] = rl
        else:
            continue
        kept.append(out)
        src["n_out"] += 1
        src["positive"] += out["label"]

    write_jsonl(out_path, kept)
    write_jsonl(dis_path, disagreements)
    n_pos = sum(r["label"] for r in kept)
    stats = {
        "input": cfg.input,
        "output": str(out_path),
        "disagreements_file": str(dis_path),
        "judge": cfg.judge,
        "policy": policy,
        "requested_policy": cfg.policy,
        "n_in": len(rows),
        "n_out": len(kept),
        "n_skipped": len(rows) - len(kept),
        "n_judged": n_both,
        "n_disagree": len(disagreements),
        "agreement_rate": n_agree / n_both if n_both else None,
        "label_balance": {
            "positive": n_pos,
            "negative": len(kept) - n_pos,
            "positive_rate": n_pos / len(kept) if kept else None,
        },
        "rule_positive_rate": sum(rule) / len(rows) if rows else None,
        "judge_failures": {k: failures.get(k, 0) for k in ("timeout", "error", "unparseable")},
        "per_source": {
            s: {
                "n_in": c["n_in"],
                "n_out": c["n_out"],
                "positive": c["positive"],
                "agreement_rate": c["agree"] / c["judged"] if c["judged"] else None,
                "judge_failures": c["judge_failures"],
            }
            for s, c in sorted(per_source.items())
        },
        "seconds": round(time.time() - t0, 1),
        "config": asdict(cfg),
    }
    atomic_write_json(stats_path, stats)
    print(
        json.dumps(
            {k: stats[k] for k in ("policy", "n_in", "n_out", "agreement_rate", "label_balance", "judge_failures")}
        )
    )
    n_failed = sum(failures.values())
    if n_failed:
        what = "skipped" if policy != "rule" else "kept with the rule label"
        print(f"[label] {n_failed} rows got no judge verdict ({dict(failures)}); {what}")
    if rows and not kept:
        print("[label] warning: no rows were kept; check the judge replies in the disagreements/stats files")
    print(f"[label] wrote {out_path}, {dis_path} and {stats_path}")
    return stats

"""``cooper filter``: keep the training prompts that the starting policy solves sometimes, not never or always.

GRPO learns only from groups whose rewards differ: a prompt the policy always fails (or always solves) gives G
rollouts with one reward and zero advantage. This offline pre-pass samples k completions per candidate prompt with
the starting policy at the rollout settings of ``cooper rl`` (temperature 1, top-p 1, 128 new tokens), checks each
with the rule verifier against the reference, and keeps the prompts whose pass rate c/k lies in [min_pass_rate,
max_pass_rate]. It reads only references, which every reward condition has, so rule, static-RM and Cooper runs can
all train on the one filtered file.

Outputs (OUTPUT = --output):
    OUTPUT                   the kept problems as a normal dataset file (question, answer, solution, id, ...) with
                             pass_rate and n_correct per row: ``cooper rl --datasets OUTPUT``
    OUTPUT.passrates.jsonl   every candidate with its pass rate (the distribution the band was cut from)
    OUTPUT.stats.json        settings, counts per pass rate, kept / dropped, seconds
Resumable: candidates are sampled in fixed chunks, each seeded by (seed, chunk), and every finished chunk is
appended to OUTPUT.partial.jsonl; a rerun with the same settings continues after the last finished chunk and gives
the same result as an uninterrupted run. Only a finished pass writes OUTPUT; the partial file is removed then.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from cooper_rl import verify
from cooper_rl.generation import PROMPT_TEMPLATE, build_prompt, sample_completions
from cooper_rl.io import (
    DataError,
    TrainingInterrupted,
    append_jsonl,
    atomic_write_json,
    read_jsonl,
    weights_sha256,
    write_jsonl,
)


@dataclass
class FilterConfig:
    """Options of ``cooper filter``."""

    datasets: list[str] = field(
        default_factory=lambda: ["builtin:train:1000:1,2"],
        metadata={"help": "Candidate training prompts, as cooper rl --datasets takes them (builtin:..., files, hf:)."},
    )
    output: str = field(default="data/filtered.jsonl", metadata={"help": "Where the kept problems go (jsonl)."})
    policy: str = field(
        default="smollm2-135m-instruct",
        metadata={"help": "The starting policy of the RL runs (registry name, local path or hub id)."},
    )
    k: int = field(default=8, metadata={"help": "Samples per candidate prompt (pass rate = correct / k)."})
    min_pass_rate: float = field(default=0.125, metadata={"help": "Keep prompts with pass rate >= this (1/8)."})
    max_pass_rate: float = field(default=0.875, metadata={"help": "... and <= this (7/8)."})
    min_prompts: int = field(
        default=1, metadata={"help": "Fail with a clear message when fewer prompts than this fall in the band."}
    )
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature (cooper rl's rollouts: 1.0)."})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling threshold (cooper rl's rollouts: 1.0)."})
    max_new_tokens: int = field(
        default=128, metadata={"help": "Longest completion, in tokens (cooper rl's max_completion_length)."}
    )
    prompt_template: str = field(default=PROMPT_TEMPLATE, metadata={"help": "User message; format with {question}."})
    question_field: str | None = field(default=None, metadata={"help": "Question column of file sources."})
    answer_field: str | None = field(default=None, metadata={"help": "Reference answer column of file sources."})
    data_seed: int = field(
        default=0, metadata={"help": "Seed of the built-in problem generator (cooper rl's --data_seed)."}
    )
    seed: int = field(default=0, metadata={"help": "Sampling seed (each chunk is seeded by seed and its index)."})
    batch_size: int = field(
        default=64, metadata={"help": "Sequences per generate() call: batch_size // k prompts per chunk."}
    )
    timeout: float = field(
        default=verify.DEFAULT_TIMEOUT, metadata={"help": "Rule-verifier limit per symbolic check (s)."}
    )


def settings(cfg: FilterConfig) -> dict:
    """What the pass rates depend on: a resume with other settings would mix two pre-passes."""
    keep = ("datasets", "policy", "k", "temperature", "top_p", "max_new_tokens", "prompt_template")
    keep += ("question_field", "answer_field", "data_seed", "seed", "batch_size")
    return {k: getattr(cfg, k) for k in keep} | {"policy_sha256": weights_sha256(cfg.policy)}


def in_band(pass_rate: float, cfg: FilterConfig) -> bool:
    """Whether a pass rate lies in [min_pass_rate, max_pass_rate] (with float slack for c/k)."""
    return cfg.min_pass_rate - 1e-9 <= pass_rate <= cfg.max_pass_rate + 1e-9


def load_candidates(cfg: FilterConfig) -> list:
    """The candidate problems of every source, in order (DataError naming file and row for bad rows)."""
    from cooper_rl.data import load_problems

    out = []
    for src in cfg.datasets:
        for p in load_problems(
            src, question_field=cfg.question_field, answer_field=cfg.answer_field, seed=cfg.data_seed
        ).problems:
            out.append(p)  # a row without a parseable reference already failed, naming file, row and field
    if not out:
        raise DataError(f"no candidate prompts in {cfg.datasets}")
    return out


def _done_chunks(partial: Path, chunks: list[list[int]]) -> dict[int, list[dict]]:
    """Finished chunks of an earlier, stopped pass (a chunk cut by a kill is not finished: it is redone)."""
    rows: dict[int, list[dict]] = {}
    for r in read_jsonl(partial, missing_ok=True):
        rows.setdefault(r["chunk"], []).append(r)
    return {c: rs for c, rs in rows.items() if c < len(chunks) and len(rs) == len(chunks[c])}


def run_filter(cfg: FilterConfig) -> dict:
    """``cooper filter``: sample, verify, keep the prompts in the band; write OUTPUT, its pass rates and stats."""
    if cfg.k < 1 or not 0 <= cfg.min_pass_rate <= cfg.max_pass_rate <= 1:
        raise DataError(f"need k >= 1 and 0 <= min_pass_rate <= max_pass_rate <= 1 (got {cfg})")
    out = Path(cfg.output)
    partial, rates_path, stats_path = (Path(f"{out}.{s}") for s in ("partial.jsonl", "passrates.jsonl", "stats.json"))
    want = settings(cfg)
    out.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(stats_path.read_text()) if stats_path.is_file() else {}
    if previous.get("settings") == want and rates_path.is_file():  # sampled before: only the band may be new
        return keep_band(cfg, read_jsonl(rates_path), previous["seconds_sampling"], want)
    head = Path(f"{out}.partial.settings.json")
    if partial.is_file() and (not head.is_file() or json.loads(head.read_text()) != want):
        raise DataError(
            f"{partial} holds a stopped pre-pass with other settings ({head}): rerun with those, or delete both files"
        )
    atomic_write_json(head, want)
    problems = load_candidates(cfg)
    per_chunk = max(1, cfg.batch_size // cfg.k)
    chunks = [list(range(i, min(i + per_chunk, len(problems)))) for i in range(0, len(problems), per_chunk)]
    done = _done_chunks(partial, chunks)
    write_jsonl(partial, [r for c in sorted(done) for r in done[c]])  # drop a chunk cut by a kill
    todo = [c for c in range(len(chunks)) if c not in done]
    t0 = time.time()
    if todo:
        import torch

        from cooper_rl.models import load_causal_lm

        model, tokenizer = load_causal_lm(cfg.policy, dtype="float32", device="auto")

        def stop(signum, frame):  # SIGTERM like Ctrl-C: finished chunks are kept, the one in flight is redone
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGTERM, stop)
        bar = tqdm(total=len(problems), initial=len(problems) - sum(len(chunks[c]) for c in todo), unit="prompt")
        bar.set_description("filter prompts")
        try:
            for c in todo:
                ps = [problems[i] for i in chunks[c]]
                torch.manual_seed(cfg.seed * 1_000_003 + c)  # a chunk's samples do not depend on what ran before
                outs = sample_completions(
                    model,
                    tokenizer,
                    [build_prompt(tokenizer, p.question, cfg.prompt_template) for p in ps],
                    cfg.k,
                    temperature=cfg.temperature,
                    top_p=cfg.top_p,
                    max_new_tokens=cfg.max_new_tokens,
                )
                texts = [t for o in outs for t, _ in o]
                verdicts = verify.verify_batch(
                    texts, [p.answer for p in ps for _ in range(cfg.k)], "strict", cfg.timeout
                )
                rows = [
                    {"chunk": c, "index": i, "id": p.id, "n_correct": int(sum(verdicts[j * cfg.k : (j + 1) * cfg.k]))}
                    for j, (i, p) in enumerate(zip(chunks[c], ps))
                ]
                append_jsonl(partial, rows)
                bar.update(len(ps))
        except KeyboardInterrupt:
            n = sum(len(rs) for rs in _done_chunks(partial, chunks).values())
            raise TrainingInterrupted(
                f"stopped after {n} of {len(problems)} candidate prompts; finished ones are in {partial} "
                f"(no {out} was written): rerun the same command to continue"
            ) from None
        finally:
            bar.close()
            signal.signal(signal.SIGTERM, previous)
    correct = {r["index"]: r["n_correct"] for r in read_jsonl(partial)}
    rates = [
        dataclasses.asdict(p) | {"n_correct": correct[i], "pass_rate": correct[i] / cfg.k}
        for i, p in enumerate(problems)
    ]
    write_jsonl(rates_path, rates)
    # every pass rate is in rates_path now (a rerun with another band reads it): the partial files go before the band
    # is applied, so a failed band does not leave a "stopped pre-pass" behind
    atomic_write_json(stats_path, {"settings": want, "seconds_sampling": round(time.time() - t0, 1)})
    partial.unlink()
    head.unlink()
    return keep_band(cfg, rates, round(time.time() - t0, 1), want)


def keep_band(cfg: FilterConfig, rates: list[dict], seconds: float, want: dict) -> dict:
    """Write OUTPUT (the rows of `rates` in the band) and its stats; DataError if fewer than min_prompts."""
    out = Path(cfg.output)
    kept = [r for r in rates if in_band(r["pass_rate"], cfg)]
    hist = Counter(r["n_correct"] for r in rates)
    stats = {
        "settings": want,
        "band": [cfg.min_pass_rate, cfg.max_pass_rate],
        "n_candidates": len(rates),
        "n_kept": len(kept),
        "n_never_solved": hist.get(0, 0),
        "n_always_solved": hist.get(cfg.k, 0),
        "n_by_correct": {str(c): hist.get(c, 0) for c in range(cfg.k + 1)},
        "mean_pass_rate_candidates": sum(r["pass_rate"] for r in rates) / len(rates),
        "mean_pass_rate_kept": sum(r["pass_rate"] for r in kept) / len(kept) if kept else None,
        "seconds_sampling": seconds,
    }
    if len(kept) < cfg.min_prompts:
        out.unlink(missing_ok=True)  # an earlier band's file must not pass for this one
        atomic_write_json(Path(f"{out}.stats.json"), stats | {"failed": "too few prompts in the band"})
        raise DataError(
            f"{out}: only {len(kept)} of {len(rates)} candidate prompts have a pass rate in "
            f"[{cfg.min_pass_rate}, {cfg.max_pass_rate}] (never solved {stats['n_never_solved']}, always solved "
            f"{stats['n_always_solved']}; --min_prompts {cfg.min_prompts}): add candidates, widen the band or lower "
            f"--min_prompts; every pass rate is in {out}.passrates.jsonl"
        )
    write_jsonl(out, kept)
    atomic_write_json(Path(f"{out}.stats.json"), stats)
    print(
        f"[filter] kept {len(kept)} of {len(rates)} prompts with pass rate in [{cfg.min_pass_rate}, "
        f"{cfg.max_pass_rate}] (never solved {stats['n_never_solved']}, always {stats['n_always_solved']}): {out}"
    )
    return stats

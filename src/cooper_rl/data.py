"""Problem loaders: built-in generator, local .jsonl/.json/.parquet files, and Hugging Face datasets.

Every loader returns a LoadResult. Bad rows raise DataError naming the file, the row and the field, or are
skipped and counted with skip_invalid=True (never dropped silently).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from cooper_rl.io import DataError, iter_jsonl, write_jsonl
from cooper_rl.tasks import Problem, generate_problems
from cooper_rl.verify import extract_answer, is_parseable

QUESTION_FIELDS = ("question", "problem", "prompt", "query", "input")
# reference_answer first: the authors' VerifyRM data has question/reference_answer (its "label" is a RM label, not an answer)
ANSWER_FIELDS = ("reference_answer", "answer", "final_answer", "solution", "target")
DEFAULT_BUILTIN_N = 200


@dataclass
class LoadResult:
    """Loaded problems plus how many rows were read and which were skipped (with reasons)."""

    problems: list[Problem]
    n_read: int
    n_skipped: int = 0
    skipped: list[str] = field(default_factory=list)


def extract_reference(value) -> str | None:
    """Reference answer from an answer-field value: '... #### N' -> 'N', '\\boxed{x}' -> 'x', else the plain value.

    Numbers are stringified (18 -> '18', 18.0 -> '18', 0.5 -> '0.5'); thousands separators are dropped (1,234 -> 1234).
    Returns None if nothing usable is left.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return None
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    if not isinstance(value, str):
        return None
    ref = extract_answer(value)
    ref = (ref if ref is not None else value).strip()
    if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d+)?", ref):
        ref = ref.replace(",", "")
    return ref or None


def _pick(columns, explicit: str | None, candidates: tuple[str, ...], what: str, where: str) -> str:
    """Column to use: the explicit one, else the first candidate present (error listing the columns if none)."""
    if explicit is not None:
        return explicit
    for c in candidates:
        if c in columns:
            return c
    raise DataError(
        f"{where}: no {what} field found (tried {list(candidates)}; columns: {sorted(columns)}); pass {what}_field=..."
    )


def _to_problem(row, rownum: int, name: str, source: str, stem: str, qf: str, af: str) -> Problem:
    """Validate one row and turn it into a Problem (DataError naming file, row and field otherwise)."""
    where = f"{name}: row {rownum}"
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    for f in (qf, af):
        if f not in row:
            raise DataError(f"{where}: missing field '{f}' (columns: {sorted(row)})")
    q = row[qf]
    if not isinstance(q, str):
        raise DataError(f"{where}: field '{qf}' must be a string, got {type(q).__name__}")
    if not q.strip():
        raise DataError(f"{where}: field '{qf}' is empty")
    raw = row[af]
    ref = extract_reference(raw)
    if ref is None or not is_parseable(ref):
        raise DataError(f"{where}: field '{af}' has no parseable reference answer ({str(raw)[-80:]!r})")
    # a worked solution (GSM8K-style answer, or a separate 'solution' column) is kept as a positive example
    sol = row.get("solution") if af != "solution" and isinstance(row.get("solution"), str) else None
    if sol is None and isinstance(raw, str) and raw.strip() != ref:
        sol = raw
    pid = row["id"] if isinstance(row.get("id"), str) and row["id"].strip() else f"{stem}-{rownum}"
    level = row.get("level") if isinstance(row.get("level"), int) else None
    size = row.get("size") if isinstance(row.get("size"), str) else None
    return Problem(q.strip(), ref, pid, source, sol, level, size)


def read_records(path: Path):
    """Yield (row number, row or DataError) for a .jsonl (1-based line numbers; .jsonl.gz too), .json or .parquet
    file."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl" or path.name.lower().endswith(".jsonl.gz"):
        yield from iter_jsonl(path, errors="yield")
    elif suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise DataError(f"{path.name}: invalid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from e
        if isinstance(data, dict) and isinstance(data.get("data"), list):
            data = data["data"]
        if not isinstance(data, list):
            raise DataError(f'{path.name}: expected a list of objects or {{"data": [...]}}, got {type(data).__name__}')
        yield from enumerate(data, 1)
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        yield from enumerate(pq.read_table(path).to_pylist(), 1)
    else:
        raise DataError(f"{path}: unsupported file type '{suffix}' (use .jsonl, .jsonl.gz, .json or .parquet)")


def _collect(rows, name: str, source: str, stem: str, qf, af, limit, skip_invalid: bool) -> LoadResult:
    """Turn (row number, row) pairs into a LoadResult, detecting columns on the first object row."""
    res = LoadResult([], 0)
    for rownum, row in rows:
        if limit is not None and len(res.problems) >= limit:
            break
        res.n_read += 1
        if isinstance(row, dict) and (qf is None or af is None):  # auto-detect once, on the first object row; fatal
            qf = _pick(row, qf, QUESTION_FIELDS, "question", f"{name}: row {rownum}")
            af = _pick(row, af, ANSWER_FIELDS, "answer", f"{name}: row {rownum}")
        try:
            if isinstance(row, Exception):
                raise row
            res.problems.append(_to_problem(row, rownum, name, source, stem, qf, af))
        except DataError as e:
            if not skip_invalid:
                raise
            res.n_skipped += 1
            res.skipped.append(str(e))
    return res


def _load_hf(spec: str, split: str | None, qf, af, limit, skip_invalid) -> LoadResult:
    """Load 'NAME' or 'NAME:CONFIG' from the Hugging Face hub via datasets.load_dataset (default split 'test')."""
    name, _, config = spec.partition(":")
    split = split or "test"
    try:
        import datasets

        ds = datasets.load_dataset(name, config or None, split=split)
    except Exception as e:
        offline = any(
            os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
        )
        raise DataError(
            f"hf:{spec} (split '{split}'): could not load from the Hugging Face hub "
            f"({'offline mode is set' if offline else 'hub unreachable/offline or dataset unavailable'}: "
            f"{type(e).__name__}: {str(e)[:300]}). Use a local .jsonl/.json/.parquet file or 'builtin' instead."
        ) from e
    stem = f"{name.split('/')[-1]}-{split}"
    return _collect(enumerate(ds, 1), f"hf:{spec}[{split}]", f"hf:{name}", stem, qf, af, limit, skip_invalid)


def load_problems(
    source: str,
    *,
    split: str | None = None,
    question_field: str | None = None,
    answer_field: str | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
    seed: int = 0,
) -> LoadResult:
    """Load problems from `source`: 'builtin[:train|test[:N[:LEVELS]]]' (LEVELS e.g. '1' or '1,2'), a .jsonl/.json/.parquet path, or 'hf:NAME[:CONFIG]'.

    `split` picks the builtin split (default train; overridden by the source string) or the HF split (default test);
    it is ignored for files. Columns are auto-detected unless question_field/answer_field are given. `limit` keeps the
    first N valid problems; `seed` seeds the builtin generator.
    """
    if source == "builtin" or source.startswith("builtin:"):
        parts = source.split(":")
        bsplit = parts[1] if len(parts) > 1 and parts[1] else (split or "train")
        n = int(parts[2]) if len(parts) > 2 and parts[2] else (limit or DEFAULT_BUILTIN_N)
        try:
            levels = tuple(int(x) for x in parts[3].split(",")) if len(parts) > 3 else (1, 2, 3)
            probs = generate_problems(n, bsplit, seed, levels=levels)[:limit]
        except ValueError as e:
            raise DataError(f"bad builtin source {source!r} (builtin[:train|test[:N[:LEVELS like 1,2]]]): {e}") from e
        return LoadResult(probs, len(probs))
    if source.startswith("hf:"):
        return _load_hf(source[3:], split, question_field, answer_field, limit, skip_invalid)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    name = str(path)
    src = f"{path.parent.name}/{path.stem}" if path.parent.name else path.stem
    return _collect(read_records(path), name, src, path.stem, question_field, answer_field, limit, skip_invalid)


def save_problems(problems: list[Problem], path: str | os.PathLike) -> None:
    """Write problems as jsonl (one Problem per line), atomically."""
    write_jsonl(path, (dataclasses.asdict(p) for p in problems))


@dataclass
class DataConfig:
    """Options of ``cooper data``: load/generate problems, validate, write normalized jsonl."""

    source: str = field(
        default="builtin:train:1000",
        metadata={"help": "builtin[:split[:n[:levels]]], a .jsonl/.json/.parquet file, or hf:NAME[:CONFIG]."},
    )
    output: str = field(
        default="data/problems.jsonl", metadata={"help": "Where to write (question, answer, id, source) jsonl."}
    )
    split: str | None = field(
        default=None,
        metadata={"help": "Split of hf: sources (default test) or of builtin ones (default train); files ignore it."},
    )
    question_field: str | None = field(default=None, metadata={"help": "Question column (auto-detected if unset)."})
    answer_field: str | None = field(
        default=None, metadata={"help": "Reference answer column (auto-detected if unset)."}
    )
    limit: int | None = field(default=None, metadata={"help": "Keep the first N valid problems."})
    skip_invalid: bool = field(
        default=False, metadata={"help": "Skip and count bad rows instead of stopping at the first."}
    )
    seed: int = field(default=0, metadata={"help": "Seed of the built-in problem generator."})


def run_data(cfg: DataConfig) -> dict:
    """``cooper data``: write the problems of a source as normalized jsonl and report counts."""
    res = load_problems(
        cfg.source,
        split=cfg.split,
        question_field=cfg.question_field,
        answer_field=cfg.answer_field,
        limit=cfg.limit,
        skip_invalid=cfg.skip_invalid,
        seed=cfg.seed,
    )
    save_problems(res.problems, cfg.output)
    report = {
        "source": cfg.source,
        "output": cfg.output,
        "n_read": res.n_read,
        "n_written": len(res.problems),
        "n_skipped": res.n_skipped,
    }
    print(json.dumps(report))
    for reason in res.skipped[:20]:
        print(f"  skipped: {reason}")
    if len(res.skipped) > 20:
        print(f"  ... and {len(res.skipped) - 20} more skipped rows")
    return report

"""Reward-model data: labelled rows from files, and hard-negative rows made from worked solutions.

``load_rm_rows`` reads .jsonl/.json/.parquet rows with fields question; reference | reference_answer |
answer; completion; label | gold_correct (bool, 0/1, or "true"/"false"): our format, the authors' published
VerifyRM parquet and VerifyBench alike. Bad rows raise DataError naming the file, the row and the field.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from cooper_rl.cooper.negatives import corrupt_solution, wrong_values
from cooper_rl.data import read_records
from cooper_rl.formats import ANSWER_STYLES, restyle
from cooper_rl.io import DataError

REFERENCE_FIELDS = ("reference", "reference_answer", "answer")
LABEL_FIELDS = ("label", "gold_correct")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def _label(value, where: str, name: str) -> int:
    """0/1 from a bool, 0/1 number or 'true'/'false' string (DataError otherwise)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return int(value.strip().lower() in _TRUE)
    raise DataError(f"{where}: field '{name}' must be a bool or 0/1, got {value!r}")


def _text(row: dict, names: tuple[str, ...], where: str, allow_empty: bool = False, numeric: bool = False) -> str:
    """The first present field of `names` as a string (numbers stringified if `numeric`); DataError if missing/bad."""
    name = next((n for n in names if n in row and row[n] is not None), None)
    if name is None:
        tried = f" (also tried {', '.join(names[1:])})" if len(names) > 1 else ""
        raise DataError(f"{where}: missing field '{names[0]}'{tried}; columns: {sorted(row)}")
    value = row[name]
    if numeric and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        value = str(int(value)) if float(value).is_integer() else repr(float(value))
    if not isinstance(value, str):
        raise DataError(f"{where}: field '{name}' must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise DataError(f"{where}: field '{name}' is empty")
    return value


def load_rm_rows(path: str, limit: int | None = None) -> list[dict]:
    """Labelled rows {question, reference, completion, label (0/1)[, answer_type]} from a local file.

    Bad rows raise DataError naming the file, the row and the field.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"data file not found: {p}")
    rows = []
    for rownum, row in read_records(p):
        if limit is not None and len(rows) >= limit:
            break
        if isinstance(row, Exception):
            raise row
        where = f"{p}: row {rownum}"
        if not isinstance(row, dict):
            raise DataError(f"{where}: expected an object, got {type(row).__name__}")
        out = {
            "question": _text(row, ("question",), where),
            "reference": _text(row, REFERENCE_FIELDS, where, numeric=True),
            "completion": _text(row, ("completion",), where, allow_empty=True),
        }
        name = next((n for n in LABEL_FIELDS if n in row and row[n] is not None), None)
        if name is None:
            raise DataError(f"{where}: missing field 'label' (also tried gold_correct); columns: {sorted(row)}")
        out["label"] = _label(row[name], where, name)
        if isinstance(row.get("answer_type"), str):
            out["answer_type"] = row["answer_type"]
        rows.append(out)
    if not rows:
        raise DataError(f"{p}: no rows")
    return rows


def verification_rows(
    question: str,
    reference: str,
    solution: str,
    rng: random.Random,
    wrong_reference_rate: float = 0.5,
    source: str = "solution",
) -> list[dict]:
    """Hard-negative RM training rows (collect format, unlabelled) from one correct '#### N' solution:
    the solution in a random answer style (correct), its corruption in the SAME style (wrong answer), and
    with probability wrong_reference_rate the correct text paired with a wrong reference. Style alone can
    never separate the classes: only comparing the final answer with the reference does."""
    style, drop = rng.choice(ANSWER_STYLES), rng.random() < 0.5
    pos = restyle(solution, style, drop)
    if pos is None:
        return []
    rows = [{"question": question, "reference": reference, "completion": pos, "source": f"{source}:{style}"}]
    corrupted = corrupt_solution(solution, reference, rng)
    neg = restyle(corrupted, style, drop) if corrupted is not None else None
    if neg is not None:
        rows.append(
            {"question": question, "reference": reference, "completion": neg, "source": f"{source}-corrupted:{style}"}
        )
    wrong = wrong_values(reference, rng, n=1)
    if wrong and rng.random() < wrong_reference_rate:
        rows.append(
            {"question": question, "reference": wrong[0], "completion": pos, "source": f"{source}-wrongref:{style}"}
        )
    return rows

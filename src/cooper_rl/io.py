"""Files that survive a kill: atomic writes (temp file or directory + rename) and jsonl reading/appending.

Every file the package writes goes through here. A writer never leaves a half-written file under the
final name: it writes a temp file in the same directory and renames it into place (``os.replace`` is
atomic on one file system). Appended jsonl logs can still be cut by a kill in their last line;
``iter_jsonl(..., allow_cut_tail=True)`` skips such a line, and ``drop_cut_tail`` removes it from the file.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path


class TrainingInterrupted(RuntimeError):
    """A training run stopped before its end (SIGTERM/SIGUSR1): its checkpoint is saved, nothing final is written;
    rerun with resume to continue."""


class DataError(ValueError):
    """Bad input data; the message names the file, the row and the field."""


def _umask() -> int:
    """The process's umask (on Linux read without changing it, so no race with other threads)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, payload: bytes) -> Path:
    """Write ``payload`` to ``path`` through a temp file in the same directory and a rename; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~_umask())  # mkstemp makes it private (0600); this is an ordinary file
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """``atomic_write_bytes`` of UTF-8 text."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj, indent: int | None = 2) -> Path:
    """``obj`` as JSON (values JSON cannot hold are written as str), atomically."""
    return atomic_write_text(path, json.dumps(obj, indent=indent, default=str) + "\n")


def jsonl_text(rows: Iterable) -> str:
    """One JSON document per line (UTF-8 kept as is)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_jsonl(path: str | os.PathLike, rows: Iterable) -> Path:
    """Replace ``path`` with ``rows`` as jsonl, atomically; gzip-compressed (reproducibly: no timestamp) if its name
    ends in .gz, as iter_jsonl reads it."""
    payload = jsonl_text(rows).encode("utf-8")
    return atomic_write_bytes(path, gzip.compress(payload, mtime=0) if str(path).endswith(".gz") else payload)


def append_jsonl(path: str | os.PathLike, rows: Iterable) -> None:
    """Append ``rows`` to a jsonl log (created with its directory if missing) and flush them."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(jsonl_text(rows))
        f.flush()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, keep_existing: bool = False) -> Iterator[Path]:
    """Build a directory under a temp name and rename it to ``path`` when the block ends without error.

    An existing ``path`` is replaced only at that moment (moved aside, then deleted), or, with
    ``keep_existing``, kept and the new one discarded (another process finished the same work first). If the
    block raises, the temp directory is removed and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        yield tmp
        if keep_existing and path.exists():
            return
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
            os.rename(path, old / path.name)
        try:
            os.rename(tmp, path)
        except BaseException:
            if old is not None:  # put the previous version back
                os.rename(old / path.name, path)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def iter_jsonl(
    path: str | os.PathLike, *, allow_cut_tail: bool = False, errors: str = "raise"
) -> Iterator[tuple[int, object]]:
    """(line number, parsed JSON) for every non-blank line of a jsonl file (gzip-compressed if its name ends in .gz).

    Invalid JSON raises DataError naming the file and row (``errors='yield'``: the DataError is yielded in
    place of the row). With ``allow_cut_tail`` an invalid LAST line is skipped: a log line cut by a kill."""
    path = Path(path)
    data = path.read_bytes()
    lines = (gzip.decompress(data) if path.suffix == ".gz" else data).splitlines(keepends=True)
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            yield i, json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            if allow_cut_tail and i == len(lines):
                return
            detail = f"{e.msg} at column {e.colno}" if isinstance(e, json.JSONDecodeError) else str(e)
            err = DataError(f"{path}: row {i}: invalid JSON ({detail})")
            if errors != "yield":
                raise err from None
            yield i, err


def read_jsonl(path: str | os.PathLike, *, missing_ok: bool = False, allow_cut_tail: bool = True) -> list:
    """All rows of a jsonl file written by this package (a last line cut by a kill is skipped; a missing file
    is [] with ``missing_ok``)."""
    if missing_ok and not Path(path).is_file():
        return []
    return [row for _, row in iter_jsonl(path, allow_cut_tail=allow_cut_tail)]


def drop_cut_tail(path: str | os.PathLike) -> bool:
    """Remove a last line cut by a kill (no newline, or not valid JSON) from a jsonl file, atomically.

    Returns whether one was removed; earlier lines are left for the caller's reader (iter_jsonl names bad rows)."""
    path = Path(path)
    if not path.is_file():
        return False
    raw = path.read_bytes()
    lines = raw.splitlines(keepends=True)
    if not lines:
        return False
    last = lines[-1]
    cut = not last.endswith(b"\n")
    if not cut and last.strip():
        try:
            json.loads(last)
        except (json.JSONDecodeError, UnicodeDecodeError):
            cut = True
    if cut:
        atomic_write_bytes(path, b"".join(lines[:-1]))
    return cut


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file's bytes (a data file's or a model's identity)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def weights_sha256(model_dir: str | os.PathLike | None) -> str | None:
    """sha256 of a model directory's model.safetensors, or of adapter_model.safetensors for a LoRA adapter (a
    model's identity); None for a registry name, a hub id or a directory without either file."""
    if not model_dir:
        return None
    for name in ("model.safetensors", "adapter_model.safetensors"):
        f = Path(model_dir) / name
        if f.is_file():
            return file_sha256(f)
    return None

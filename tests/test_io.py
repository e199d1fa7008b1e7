"""Atomic writes leave either the old or the new content, never a half; jsonl logs survive a cut last line."""

import json
import os

import pytest

from cooper_rl.io import (
    DataError,
    append_jsonl,
    atomic_dir,
    atomic_write_json,
    drop_cut_tail,
    iter_jsonl,
    read_jsonl,
    write_jsonl,
)


def test_atomic_write_replaces_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "sub" / "x.json"
    atomic_write_json(path, {"a": 1})
    atomic_write_json(path, {"a": 2, "p": tmp_path})  # non-JSON values are written as str
    assert json.loads(path.read_text()) == {"a": 2, "p": str(tmp_path)}
    assert os.listdir(path.parent) == ["x.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, [{"a": 1}])

    def rows():
        yield {"a": 2}
        raise RuntimeError("killed mid-way")

    with pytest.raises(RuntimeError):
        write_jsonl(path, rows())
    assert read_jsonl(path) == [{"a": 1}] and os.listdir(tmp_path) == ["rows.jsonl"]


def test_atomic_dir_replaces_only_on_success(tmp_path):
    target = tmp_path / "model"
    with atomic_dir(target) as d:
        (d / "w.bin").write_text("v1")
    with pytest.raises(RuntimeError), atomic_dir(target) as d:
        (d / "w.bin").write_text("half")
        raise RuntimeError("killed")
    assert (target / "w.bin").read_text() == "v1"
    with atomic_dir(target) as d:
        (d / "w.bin").write_text("v2")
    with atomic_dir(target, keep_existing=True) as d:  # another process finished first: theirs stays
        (d / "w.bin").write_text("v3")
    assert (target / "w.bin").read_text() == "v2" and os.listdir(tmp_path) == ["model"]


def test_jsonl_cut_tail_is_tolerated_where_asked_and_named_elsewhere(tmp_path):
    path = tmp_path / "log.jsonl"
    append_jsonl(path, [{"step": 1}, {"step": 2}])
    with open(path, "a") as f:
        f.write('{"step": 3, "rew')  # a kill mid-line
    assert read_jsonl(path) == [{"step": 1}, {"step": 2}]
    with pytest.raises(DataError, match=r"log.jsonl: row 3: invalid JSON"):
        list(iter_jsonl(path))  # user input: the bad row is named, not skipped
    assert [type(r).__name__ for _, r in iter_jsonl(path, errors="yield")] == ["dict", "dict", "DataError"]
    assert drop_cut_tail(path) and not drop_cut_tail(path)
    assert path.read_text() == '{"step": 1}\n{"step": 2}\n'
    path.write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(DataError, match="row 2"):
        read_jsonl(path)  # only a LAST line can be a cut one
    assert read_jsonl(tmp_path / "missing.jsonl", missing_ok=True) == []


def test_atomic_write_makes_an_ordinary_file_not_a_private_one(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write_json(tmp_path / "a.json", {})
        os.umask(0o027)
        atomic_write_json(tmp_path / "b.json", {})
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644  # mkstemp alone gives 0600
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o640  # the umask is read, not assumed


def test_write_jsonl_compresses_a_gz_name_reproducibly(tmp_path):
    import gzip

    from cooper_rl.io import iter_jsonl, write_jsonl

    rows = [{"row": 0, "rm": 0.25}, {"row": 1, "rm": 0.75}]
    a, b = write_jsonl(tmp_path / "a.jsonl.gz", rows), write_jsonl(tmp_path / "b.jsonl.gz", rows)
    assert gzip.decompress(a.read_bytes()).decode().count("\n") == 2  # compressed, one line per row
    assert a.read_bytes() == b.read_bytes()  # no timestamp in the header
    assert [r for _, r in iter_jsonl(a)] == rows

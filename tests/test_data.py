import json
from pathlib import Path

import pytest

from cooper_rl.data import DataError, extract_reference, load_problems, save_problems
from cooper_rl.tasks import generate_problems

SHARED = Path(__file__).parents[1].parent / "shared" / "data"


def shared(rel):
    path = SHARED / rel
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_gsm8k_test():
    res = load_problems(str(shared("gsm8k/test.jsonl")))
    assert len(res.problems) == res.n_read == 1319 and res.n_skipped == 0
    p = res.problems[0]
    assert p.answer == "18" and p.id == "test-1" and p.source == "gsm8k/test"
    assert p.question.startswith("Janet") and p.solution.endswith("#### 18")
    assert all("," not in q.answer for q in res.problems)  # "#### 1,234" -> "1234"


def test_svamp_train_and_limit():
    path = str(shared("svamp/train.jsonl"))
    res = load_problems(path)
    assert len(res.problems) == 432 and res.problems[0].answer == "109" and res.problems[0].source == "svamp/train"
    first = load_problems(path, limit=5)
    assert first.problems == res.problems[:5] and first.n_read == 5


def test_extract_reference():
    assert extract_reference("blah\n#### 1,234") == "1234"
    assert extract_reference("so \\boxed{42}.") == "42"
    assert extract_reference(18) == "18" and extract_reference(18.0) == "18" and extract_reference(0.5) == "0.5"
    assert extract_reference(" 7 ") == "7" and extract_reference("") is None and extract_reference(None) is None


def test_json_parquet_and_mapping(tmp_path):
    rows = [{"problem": "What is 2+3?", "final_answer": 5}, {"problem": "Half of 1?", "final_answer": 0.5}]
    (tmp_path / "a.json").write_text(json.dumps(rows))
    (tmp_path / "b.json").write_text(json.dumps({"data": rows}))
    for name in ("a.json", "b.json"):
        res = load_problems(str(tmp_path / name))
        assert [p.answer for p in res.problems] == ["5", "0.5"] and res.problems[1].id == f"{name[0]}-2"
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"q": ["What is 6*7?", "What is 10-1?"], "ref": ["42", "\\boxed{9}"], "answer": ["x", "y"]})
    pq.write_table(table, tmp_path / "c.parquet")
    res = load_problems(str(tmp_path / "c.parquet"), question_field="q", answer_field="ref")
    assert [(p.question, p.answer, p.id) for p in res.problems] == [
        ("What is 6*7?", "42", "c-1"),
        ("What is 10-1?", "9", "c-2"),
    ]
    # VerifyRM-style columns: reference_answer wins over other answer-like columns, 'label' is never used
    write_jsonl(tmp_path / "v.jsonl", [{"question": "Q?", "reference_answer": "3", "completion": "...", "label": 1}])
    assert load_problems(str(tmp_path / "v.jsonl")).problems[0].answer == "3"


def test_builtin_levels_in_source():
    assert {p.level for p in load_problems("builtin:train:9:1").problems} == {1}
    assert {p.level for p in load_problems("builtin:test:12:2,3").problems} == {2, 3}
    with pytest.raises(DataError, match="builtin:train:5:9"):
        load_problems("builtin:train:5:9")


def test_builtin_and_roundtrip(tmp_path):
    res = load_problems("builtin:test:12")
    assert len(res.problems) == 12 and res.problems == generate_problems(12, "test")
    assert len(load_problems("builtin", limit=7).problems) == 7
    assert load_problems("builtin", split="test", limit=3).problems[0].id.startswith("builtin-test-")
    out = tmp_path / "sub" / "saved.jsonl"
    save_problems(res.problems, out)
    back = load_problems(str(out)).problems
    assert [(p.question, p.answer, p.id, p.solution, p.level, p.size) for p in back] == [
        (p.question, p.answer, p.id, p.solution, p.level, p.size) for p in res.problems
    ]
    assert [f.name for f in out.parent.iterdir()] == ["saved.jsonl"]  # no temp files left


@pytest.mark.parametrize(
    "row, field",
    [
        ('{"question": "Q?", "answer": ', "invalid JSON"),
        ({"question": "Q?"}, "answer"),
        ({"question": "  ", "answer": "1"}, "question"),
        ({"question": 5, "answer": "1"}, "question"),
        ({"question": "Q?", "answer": "   "}, "answer"),
        ({"question": "Q?", "answer": None}, "answer"),
    ],
)
def test_bad_rows(tmp_path, row, field):
    good = {"question": "What is 1+1?", "answer": "#### 2"}
    path = write_jsonl(tmp_path / "broken.jsonl", [good, good, row, good])
    with pytest.raises(DataError) as e:
        load_problems(str(path))
    assert "broken.jsonl" in str(e.value) and "row 3" in str(e.value) and field in str(e.value)
    res = load_problems(str(path), skip_invalid=True)
    assert len(res.problems) == 3 and res.n_read == 4 and res.n_skipped == 1 and "row 3" in res.skipped[0]
    assert [p.id for p in res.problems] == ["broken-1", "broken-2", "broken-4"]


def test_missing_file_and_columns(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        load_problems(str(tmp_path / "nope.jsonl"))
    path = write_jsonl(tmp_path / "cols.jsonl", [{"text": "Q?", "answer": "1"}])
    with pytest.raises(DataError, match=r"cols.jsonl: row 1: no question field.*columns: \['answer', 'text'\]"):
        load_problems(str(path))
    with pytest.raises(DataError, match=r"cols.jsonl: row 1: missing field 'body'"):
        load_problems(str(path), question_field="body")
    assert load_problems(str(path), question_field="text").problems[0].answer == "1"


def test_hf_offline(monkeypatch):
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # in case already imported
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    with pytest.raises(DataError, match=r"(?s)hf:cooper-test/not-cached-xyz:main.*offline.*builtin"):
        load_problems("hf:cooper-test/not-cached-xyz:main")

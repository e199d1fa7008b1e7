import json

from tests.experiments import EXPERIMENTS, load_script

pp = load_script("prefix_probe", EXPERIMENTS / "verifyrm")


def test_every_probe_answer_is_wrong_and_the_prefixes_are_prefixes():
    for ref in ["10", "20", "24", "99", "828", "4000", "18000"]:
        v = pp.variants(ref)
        assert ref not in v.values()
        assert ref.startswith(v["probe:prefix"]) and len(v["probe:prefix"]) == len(ref) - 1
        assert ("probe:first_digit" in v) == (len(ref) >= 3)
        assert len(v["probe:last_digit"]) == len(v["probe:first_digit_changed"]) == len(ref)
        assert v["probe:last_digit"][:-1] == ref[:-1] and v["probe:first_digit_changed"][1:] == ref[1:]


def test_only_the_final_answer_changes():
    text = "1000 x 4 = 4000 pineapples, not 40000 or 4000.5.\n#### 4000"
    assert pp.with_final_answer(text, "4000", "400") == "1000 x 4 = 4000 pineapples, not 40000 or 4000.5.\n#### 400"
    assert pp.with_final_answer("The answer is $\\boxed{18,000}$.", "18000", "1800") is None


def test_the_probe_set_labels_only_the_untouched_rows_correct(tmp_path, monkeypatch):
    src, dst = tmp_path / "suite.jsonl", tmp_path / "probe.jsonl"
    base = {"question": "q", "problem_id": "p", "label": 1}
    rows = [
        base | {"reference": "828", "completion": "8 + 820 = 828\n#### 828", "answer_type": "fmt:hash"},
        base | {"reference": "7", "completion": "#### 7", "answer_type": "fmt:hash"},  # one digit: no prefix
        base | {"reference": "20", "completion": "#### 20", "answer_type": "fmt:plain"},  # not a probed style
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr("sys.argv", ["prefix_probe.py", str(src), str(dst)])
    pp.main()
    out = [json.loads(line) for line in dst.open()]
    assert [(r["answer_type"], r["label"], r["completion"].splitlines()[-1]) for r in out] == [
        ("probe:correct", 1, "#### 828"),
        ("probe:prefix", 0, "#### 82"),
        ("probe:last_digit", 0, "#### 829"),
        ("probe:first_digit_changed", 0, "#### 928"),
        ("probe:first_digit", 0, "#### 8"),
    ]
    assert all(r["completion"].startswith("8 + 820 = 828") for r in out)

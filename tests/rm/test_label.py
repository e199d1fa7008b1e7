"""Tests of ``cooper label``: verdict parsing, policies, disagreements, judge failures, no-judge fallback."""

import json

import pytest

from cooper_rl.data import DataError
from cooper_rl.llm import LocalChat
from cooper_rl.rm.label import LabelConfig, judge_messages, parse_verdict, run_label
from fake_openai import FakeOpenAI, Reply, last_user


@pytest.mark.parametrize(
    "text, verdict",
    [
        ("Yes.", True),
        ("**No**", False),
        ("The answer is yes", True),
        ("no", False),
        ("YES, they match.", True),
        ("Answer: No.", False),
        ("No, the completion says 8 but the reference is 7. Yes would be wrong.", False),
        ("<think>is it yes? no wait</think>\nYes", True),
        ("...so they differ.</think> **no**", False),
        ("Nope", None),
        ("yesterday I noticed", None),
        ("I cannot tell", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_verdict(text, verdict):
    assert parse_verdict(text) is verdict


def test_judge_prompt_is_reference_based():
    msgs = judge_messages("Q?", "7", "x" * 50 + " \\boxed{7}", max_chars=20)
    text = msgs[-1]["content"]
    assert "Q?" in text and "Reference answer:\n7" in text and text.count("x") < 20 and "\\boxed{7}" in text
    assert text.endswith("Is the final answer of the completion equivalent to the reference answer? Answer yes or no.")


# (completion, reference, source, judge behaviour marker); rule labels: 1 0 1 0 | 1 0 1 1
ROWS = [
    ("so \\boxed{7}", "7", "a", "J-YES"),  # rule 1, judge 1: agree
    ("so \\boxed{8}", "7", "a", "J-NO"),  # rule 0, judge 0: agree
    ("so \\boxed{12}", "12", "a", "J-NO"),  # rule 1, judge 0: disagree
    ("I think it is 7", "7", "a", "J-YES"),  # rule 0 (no final answer in strict mode), judge 1: disagree
    ("so \\boxed{3}", "3", "b", "J-SLOW"),  # judge timeout
    ("so \\boxed{4}", "5", "b", "J-GARBAGE"),  # judge reply has no yes/no
    ("so \\boxed{5}", "5", "b", "J-HTML"),  # judge reply is not JSON: error
    ("The answer is 9.", "9", "b", "J-ANSWERIS"),  # rule 1, judge 1 ("The answer is yes"); uses reference_answer
]
RULE = [1, 0, 1, 0, 1, 0, 1, 1]


def judge(body, i):
    """Fake judge: the verdict is chosen by the marker hidden in the completion."""
    q = last_user(body)
    if "J-SLOW" in q:
        return Reply(delay=20)
    if "J-HTML" in q:
        return Reply(raw=b"<html>502 proxy error</html>")
    for marker, reply in (
        ("J-YES", "Yes."),
        ("J-NO", "**No**"),
        ("J-GARBAGE", "Hard to say; maybe."),
        ("J-ANSWERIS", "The answer is yes"),
    ):
        if marker in q:
            return reply
    raise AssertionError(q)


@pytest.fixture
def rows_file(tmp_path):
    path = tmp_path / "collected.jsonl"
    with open(path, "w") as f:
        for i, (comp, ref, src, marker) in enumerate(ROWS):
            row = {
                "question": f"Question {i}?",
                "completion": f"{comp} [{marker}]",
                "source": src,
                "problem_id": f"p{i}",
                "sample": 0,
            }
            row["reference_answer" if i == 7 else "reference"] = ref
            f.write(json.dumps(row) + "\n")
    return path


def label(tmp_path, rows_file, policy, judge_spec):
    cfg = LabelConfig(
        input=str(rows_file),
        judge=judge_spec,
        policy=policy,
        output=str(tmp_path / policy / "out.jsonl"),
        timeout=1.0,
        max_retries=0,
        concurrency=8,
    )
    stats = run_label(cfg)
    out = [json.loads(x) for x in open(cfg.output)]
    dis = [json.loads(x) for x in open(tmp_path / policy / "out.disagreements.jsonl")]
    assert json.loads((tmp_path / policy / "out.stats.json").read_text()) == stats
    return stats, out, dis


def test_policies_with_fake_judge(tmp_path, rows_file):
    with FakeOpenAI(judge) as srv:
        spec = f"openai:judge@{srv.url}"
        results = {p: label(tmp_path, rows_file, p, spec) for p in ("agree", "rule", "judge")}
        assert all(b["temperature"] == 0.0 for b in srv.requests)

    stats, out, dis = results["agree"]
    assert [r["problem_id"] for r in out] == ["p0", "p1", "p7"] and [r["label"] for r in out] == [1, 0, 1]
    assert all(r["label"] == r["rule_label"] == r["judge_label"] for r in out)
    assert set(out[0]) >= {"question", "reference", "completion", "label", "rule_label", "judge_label", "source"}
    assert out[2]["reference"] == "9"  # read from reference_answer
    assert [(r["problem_id"], r["rule_label"], r["judge_label"]) for r in dis] == [("p2", 1, 0), ("p3", 0, 1)]
    assert dis[0]["judge_reply"] == "**No**" and dis[0]["extracted"] == "12"
    assert stats["n_in"] == 8 and stats["n_out"] == 3 and stats["n_judged"] == 5 and stats["n_disagree"] == 2
    assert stats["agreement_rate"] == pytest.approx(3 / 5)
    assert stats["judge_failures"] == {"timeout": 1, "error": 1, "unparseable": 1}
    assert stats["label_balance"] == {"positive": 2, "negative": 1, "positive_rate": pytest.approx(2 / 3)}
    assert stats["per_source"]["a"] == {
        "n_in": 4,
        "n_out": 2,
        "positive": 1,
        "agreement_rate": 0.5,
        "judge_failures": 0,
    }
    assert stats["per_source"]["b"] == {
        "n_in": 4,
        "n_out": 1,
        "positive": 1,
        "agreement_rate": 1.0,
        "judge_failures": 3,
    }

    stats, out, dis = results["rule"]  # every row kept with the rule label; judge failures do not skip
    assert [r["label"] for r in out] == RULE and stats["n_out"] == 8 and len(dis) == 2
    assert [r["judge_label"] for r in out] == [1, 0, 0, 1, None, None, None, 1]

    stats, out, dis = results["judge"]  # judge label; rows without a verdict skipped, never guessed
    assert [(r["problem_id"], r["label"]) for r in out] == [("p0", 1), ("p1", 0), ("p2", 0), ("p3", 1), ("p7", 1)]
    assert stats["judge_failures"] == {"timeout": 1, "error": 1, "unparseable": 1} and stats["n_out"] == 5


def test_no_judge_falls_back_to_rule(tmp_path, rows_file, capsys):
    stats, out, dis = label(tmp_path, rows_file, "agree", None)
    assert "falling back to rule labels" in capsys.readouterr().out
    assert stats["policy"] == "rule" and stats["requested_policy"] == "agree" and stats["agreement_rate"] is None
    assert [r["label"] for r in out] == RULE and all(r["judge_label"] is None for r in out) and dis == []
    assert stats["judge_failures"] == {"timeout": 0, "error": 0, "unparseable": 0}


def test_bad_input_names_file_row_field(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps({"question": "q", "reference": "1", "completion": "c"})
        + "\n"
        + json.dumps({"question": "q", "completion": "c"})
        + "\n"
    )
    with pytest.raises(DataError, match=r"bad.jsonl: row 2: missing field 'reference_answer'"):
        run_label(LabelConfig(input=str(path), output=str(tmp_path / "o.jsonl")))
    with pytest.raises(ValueError, match="policy"):
        run_label(LabelConfig(input=str(path), policy="vote"))


def test_local_judge_pipeline(tmp_path, rows_file, policy, one_thread):
    """A local HF judge runs end to end; whatever it says, every row is judged, failed or unparseable."""
    model, tok = policy
    lines = open(rows_file).readlines()[:2]
    small = tmp_path / "small.jsonl"
    small.write_text("".join(lines))
    cfg = LabelConfig(
        input=str(small), judge="hf:smollm2-135m-instruct", output=str(tmp_path / "o.jsonl"), judge_max_tokens=3
    )
    stats = run_label(cfg, chat=LocalChat("smollm2-135m-instruct", model=model, tokenizer=tok))
    assert stats["n_judged"] + stats["judge_failures"]["unparseable"] == 2
    assert stats["judge_failures"]["timeout"] == stats["judge_failures"]["error"] == 0

import hashlib
import json

import pytest

from cooper_rl.io import iter_jsonl
from cooper_rl.rm.evaluate import EvalRMConfig, binary_metrics, run_eval_rm


def test_binary_metrics_hand_computed():
    labels = [1, 0, 1, 1, 0, 0]
    probs = [0.95, 0.91, 0.6, 0.3, 0.1, 0.6]
    m = binary_metrics(labels, probs)
    # predictions at 0.5: 1 1 1 0 0 1 -> tp=2 (rows 0, 2), fp=2 (rows 1, 5), fn=1 (row 3), tn=1 (row 4)
    assert m["n"] == 6 and m["positive_rate"] == 0.5
    assert m["accuracy"] == pytest.approx(3 / 6)
    assert m["precision"] == pytest.approx(2 / 4)
    assert m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 * (1 / 2) * (2 / 3) / (1 / 2 + 2 / 3))
    # AUROC over 3x3 (pos, neg) pairs; a tie counts 1/2:
    # 0.95 beats 0.91, 0.1, 0.6 -> 3; 0.6 beats 0.1, ties 0.6 -> 1.5; 0.3 beats 0.1 -> 1; total 5.5 / 9
    assert m["auroc"] == pytest.approx(5.5 / 9)
    # ECE, 10 bins: bin 9 {0.95:1, 0.91:0} -> 2/6*|0.5-0.93|; bin 6 {0.6:1, 0.6:0} -> 2/6*|0.5-0.6|;
    # bin 3 {0.3:1} -> 1/6*0.7; bin 1 {0.1:0} -> 1/6*0.1
    assert m["ece"] == pytest.approx(2 / 6 * 0.43 + 2 / 6 * 0.1 + 1 / 6 * 0.7 + 1 / 6 * 0.1)


def test_binary_metrics_edge_cases():
    m = binary_metrics([True, True], [0.2, 0.9])
    assert m["auroc"] is None  # one class only
    assert m["precision"] == 1.0 and m["recall"] == 0.5
    m = binary_metrics([0, 1], [0.4, 0.4])
    assert m["auroc"] == 0.5 and m["precision"] == 0.0 and m["f1"] == 0.0
    with pytest.raises(ValueError):
        binary_metrics([1, 0], [0.5])


VERIFYBENCH_ROWS = [
    # (answer, completion, gold_correct, answer_type); strict verifier -> T F T F F, lenient -> T F T T F
    ("12", "We add: 5+7=12. \\boxed{12}", True, "integer"),
    ("7", "So \\boxed{8}.", False, "integer"),
    ("1/2", "Half of it, so the answer is \\boxed{0.5}", True, "fraction"),
    ("5", "The result is 5", True, "integer"),
    ("3", "Maybe 3, but \\boxed{4}", False, "integer"),
]


def test_run_eval_rm_on_verifybench_format(tmp_path):
    data = tmp_path / "vb.jsonl"
    data.write_text(
        "".join(
            json.dumps({"question": f"Problem {i}?", "answer": a, "completion": c, "gold_correct": g, "answer_type": t})
            + "\n"
            for i, (a, c, g, t) in enumerate(VERIFYBENCH_ROWS)
        )
    )
    out = tmp_path / "res" / "eval_rm.json"
    plot = tmp_path / "res" / "reliability.png"
    scores = tmp_path / "res" / "scores.jsonl.gz"
    cfg = EvalRMConfig(
        rm="minilm-l6", data=str(data), output=str(out), batch_size=2, device="cpu", plot=str(plot), scores=str(scores)
    )
    report = run_eval_rm(cfg)
    per_row = [r for _, r in iter_jsonl(scores)]  # every row's scores: the report's metrics follow from them
    assert [r["row"] for r in per_row] == list(range(5)) and [r["label"] for r in per_row] == [1, 0, 1, 1, 0]
    for judge, m in report["judges"].items():  # (every threshold here is 0.5)
        assert sum(int(r[judge] >= 0.5) == r["label"] for r in per_row) / 5 == pytest.approx(m["accuracy"]), judge
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert report["n"] == 5 and report["rm_trained"] is False
    assert report["data_sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()  # which version of the file
    assert set(report["judges"]) == {"rm", "rule_strict", "rule_lenient", "math_verify"}
    # TRL's accuracy_reward reads LaTeX only: "The result is 5" gets 0; \boxed{0.5} equals 1/2
    assert report["judges"]["math_verify"]["accuracy"] == pytest.approx(4 / 5)
    assert report["per_answer_type"]["integer"]["math_verify"] == pytest.approx(3 / 4)
    assert plot.stat().st_size > 1000 and sum(b["n"] for b in report["reliability"]) == 5
    rm_acc = report["judges"]["rm"]["accuracy"]
    assert sum(e["n"] for e in report["errors_by_type"].values()) == round((1 - rm_acc) * 5)
    for m in report["judges"].values():
        assert set(m) >= {"accuracy", "precision", "recall", "f1", "auroc", "ece", "n", "positive_rate"}
    strict = report["judges"]["rule_strict"]
    assert strict["accuracy"] == pytest.approx(4 / 5) and strict["precision"] == 1.0
    assert strict["recall"] == pytest.approx(2 / 3) and strict["f1"] == pytest.approx(0.8)
    assert strict["auroc"] == pytest.approx(5 / 6)  # positives 1,1,0 vs negatives 0,0: (2*2 + 1*1) / 6
    assert report["judges"]["rule_lenient"]["accuracy"] == 1.0
    assert report["per_answer_type"]["integer"]["n"] == 4
    assert report["per_answer_type"]["integer"]["rule_strict"] == pytest.approx(3 / 4)
    assert report["per_answer_type"]["fraction"] == {
        "n": 1,
        "rm": report["per_answer_type"]["fraction"]["rm"],
        "rule_strict": 1.0,
        "rule_lenient": 1.0,
        "math_verify": 1.0,
    }
    assert 0.0 <= report["judges"]["rm"]["accuracy"] <= 1.0

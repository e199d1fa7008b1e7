import json

import pytest

from cooper_rl import verify
from cooper_rl.cli import main
from cooper_rl.evaluate import EvalConfig, evaluate, format_table, summarize


def _row(pid, correct, lenient=None, extracted="1"):
    return {
        "id": pid,
        "correct": correct,
        "correct_lenient": correct if lenient is None else lenient,
        "extracted": extracted,
        "n_tokens": 10,
    }


def test_summarize_known_values():
    rows = [_row("a", True), _row("a", False), _row("b", False, lenient=True, extracted=None), _row("b", False)]
    s = summarize(rows, k=2)
    assert s["n_problems"] == 2
    assert s["avg@k_strict"] == pytest.approx(0.25)  # a: 1/2, b: 0/2
    assert s["pass@k_strict"] == pytest.approx(0.5)
    assert s["avg@k_lenient"] == pytest.approx(0.5)  # a: 1/2, b: 1/2
    assert s["pass@k_lenient"] == pytest.approx(1.0)
    assert s["answered_rate"] == pytest.approx(0.75)


def test_eval_cli_on_embedded_model_small_k_and_resume(tmp_path, policy, capsys, monkeypatch):
    gsm = tmp_path / "mini_gsm8k.jsonl"
    gsm.write_text(
        json.dumps(
            {
                "question": "Tom has 3 apples and buys 4 more. How many apples does he have?",
                "answer": "3 + 4 = 7\n#### 7",
            }
        )
        + "\n"
    )
    cfg_file = tmp_path / "eval.yaml"
    cfg_file.write_text(f"datasets: ['builtin:test:3', '{gsm}']\nmax_new_tokens: 24\noutput_dir: {tmp_path / 'out'}\n")
    assert main(["eval", "--config", str(cfg_file), "--k", "2"]) == 0
    printed = capsys.readouterr().out
    assert "avg@k" in printed and "overall" in printed

    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["overall"]["n_problems"] == 4 and summary["overall"]["k"] == 2
    assert set(summary["per_dataset"]) == {"builtin:test:3", str(gsm)}
    rows = [json.loads(line) for line in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 8
    for r in rows:  # stored verdicts are the verifier's verdicts on the stored text
        assert r["correct"] == verify.verify(r["completion"], r["reference"], "strict")
        assert r["extracted"] == verify.extract_answer(r["completion"], "strict")
        assert 0 < r["n_tokens"] <= 24
    assert 0.0 <= summary["overall"]["avg@k_strict"] <= summary["overall"]["pass@k_strict"] <= 1.0

    # a second run in the same directory reuses every finished sample: no model is loaded at all
    def no_load(*a, **kw):
        raise AssertionError("model loaded although every sample was already done")

    monkeypatch.setattr("cooper_rl.models.load_causal_lm", no_load)
    cfg = EvalConfig(datasets=["builtin:test:3", str(gsm)], k=2, max_new_tokens=24, output_dir=str(tmp_path / "out"))
    again = evaluate(cfg)
    assert again["resumed_problems"] == 4
    assert again["overall"] == summary["overall"]
    assert "overall" in format_table(again)
    with pytest.raises(ValueError, match="other settings"):  # never mix samples of different settings
        evaluate(EvalConfig(datasets=["builtin:test:3"], k=2, max_new_tokens=99, output_dir=str(tmp_path / "out")))


def test_resume_redoes_partial_problems(tmp_path, policy):
    model, tok = policy
    out = tmp_path / "out"
    cfg = EvalConfig(datasets=["builtin:test:2"], k=2, max_new_tokens=8, output_dir=str(out))
    evaluate(cfg, model=model, tokenizer=tok)
    lines = (out / "samples.jsonl").read_text().splitlines()
    (out / "samples.jsonl").write_text("\n".join(lines[:3]) + '\n{"trunc')  # kill mid-write: 1 problem partial
    s = evaluate(cfg, model=model, tokenizer=tok)
    assert s["resumed_problems"] == 1
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and sorted((r["id"], r["sample"]) for r in rows) == sorted(
        {(r["id"], r["sample"]) for r in rows}
    )

"""cooper filter: pass rates of the starting policy, the band, resume after a kill, clear errors."""

import json

import pytest

from cooper_rl.data import load_problems
from cooper_rl.difficulty import FilterConfig, run_filter
from cooper_rl.io import DataError, TrainingInterrupted, read_jsonl


def config(assets, out, **kw):
    # 4 questions (all answer 7) in 2 chunks of 2 prompts x k=4; the tiny policy answers right ~40 % of the time
    base = dict(datasets=[str(assets / "data.jsonl")], policy=str(assets / "policy"), output=str(out), k=4)
    return FilterConfig(**(base | dict(batch_size=8, max_new_tokens=12, min_pass_rate=0.25, max_pass_rate=0.75) | kw))


def test_pass_rates_band_and_output_file(assets, tmp_path, one_thread):
    out = tmp_path / "f.jsonl"
    stats = run_filter(config(assets, out, min_pass_rate=0.0, max_pass_rate=1.0))
    rates = read_jsonl(f"{out}.passrates.jsonl")
    assert len(rates) == stats["n_candidates"] == 4 and stats["n_kept"] == 4  # the whole band
    assert sum(stats["n_by_correct"].values()) == 4
    assert all(r["pass_rate"] == r["n_correct"] / 4 for r in rates)
    assert 0 < sum(r["n_correct"] for r in rates) < 16, "the tiny policy should be right sometimes"
    assert not (tmp_path / "f.jsonl.partial.jsonl").exists()
    # a normal dataset file: cooper rl --datasets reads it; the pass rate stays in each row
    assert [p.question for p in load_problems(str(out)).problems] == [r["question"] for r in rates]
    # another band reuses the samples: no model is loaded
    narrow = run_filter(config(assets, out, min_pass_rate=0.5, max_pass_rate=0.75))
    assert narrow["n_kept"] == sum(0.5 <= r["pass_rate"] <= 0.75 for r in rates)
    assert all(0.5 <= r["pass_rate"] <= 0.75 for r in read_jsonl(out))


def test_a_killed_pass_resumes_to_the_same_result(assets, tmp_path, one_thread, monkeypatch):
    import cooper_rl.difficulty as difficulty

    full = tmp_path / "full.jsonl"
    run_filter(config(assets, full, min_pass_rate=0.0))
    calls, real = [], difficulty.sample_completions

    def killed_on_second_chunk(*a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(difficulty, "sample_completions", killed_on_second_chunk)
    out = tmp_path / "f.jsonl"
    with pytest.raises(TrainingInterrupted, match=r"after 2 of 4 candidate prompts.*rerun"):
        run_filter(config(assets, out, min_pass_rate=0.0))
    assert not out.exists(), "a stopped pre-pass must not leave a file that looks complete"
    assert len(read_jsonl(f"{out}.partial.jsonl")) == 2
    calls.clear()
    monkeypatch.setattr(difficulty, "sample_completions", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    run_filter(config(assets, out, min_pass_rate=0.0))
    assert len(calls) == 1  # only the unfinished chunk was sampled again
    strip = lambda rows: [(r["id"], r["n_correct"]) for r in rows]
    assert strip(read_jsonl(f"{out}.passrates.jsonl")) == strip(read_jsonl(f"{full}.passrates.jsonl"))
    # a stopped pass with other settings is never continued
    (tmp_path / "g.jsonl.partial.jsonl").write_text("")
    (tmp_path / "g.jsonl.partial.settings.json").write_text(json.dumps({"k": 99}))
    with pytest.raises(DataError, match="other settings"):
        run_filter(config(assets, tmp_path / "g.jsonl"))


def test_too_few_prompts_in_the_band_names_the_file_and_counts(assets, tmp_path, one_thread):
    out = tmp_path / "f.jsonl"
    with pytest.raises(DataError, match=r"f\.jsonl: only \d+ of 4 candidate prompts .*--min_prompts 5"):
        run_filter(config(assets, out, min_prompts=5))
    assert not out.exists()
    assert json.loads((tmp_path / "f.jsonl.stats.json").read_text())["failed"]


def test_a_row_without_a_reference_is_named(assets, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "What is 1 + 1?", "answer": "2"}) + "\n" + json.dumps({"question": "Hm?"}))
    with pytest.raises(DataError, match=r"bad\.jsonl: row 2: missing field 'answer'"):
        run_filter(config(assets, tmp_path / "f.jsonl", datasets=[str(bad)]))

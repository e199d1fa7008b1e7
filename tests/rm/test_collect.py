"""Tests of ``cooper collect``: rows, failures, and resuming after a crash (fake endpoint on 127.0.0.1)."""

import json
from collections import Counter

from cooper_rl.llm import LocalChat
from cooper_rl.rm.collect import CollectConfig, read_existing, run_collect
from fake_openai import FakeOpenAI, Reply, last_user

PROBLEMS = [
    ("Tom has 3 apples and buys 4 more. How many apples?", 7),
    ("A box holds 6 pens. How many pens in 2 boxes?", 12),
    ("Mia had 10 coins and lost 3. How many are left?", 7),
]


def write_problems(tmp_path):
    path = tmp_path / "probs.jsonl"
    path.write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in PROBLEMS))
    return str(path)


def numbered(body, i):
    """Each request answers with its request number, so every completion is distinct."""
    return [f"reply {i}.{j} \\boxed{{{i}}}" for j in range(body.get("n") or 1)]


def cfg_for(tmp_path, sources, **kw):
    kw = {"samples_per_problem": 3, "timeout": 2.0, "max_retries": 0, "concurrency": 4, "batch_size": 4, **kw}
    return CollectConfig(problems=[write_problems(tmp_path)], sources=sources, output=str(tmp_path / "out.jsonl"), **kw)


def read(path):
    return [json.loads(line) for line in open(path)]


def groups(rows):
    return Counter((r["problem_id"], r["source"]) for r in rows)


def test_collect_rows_two_sources(tmp_path, policy, one_thread):
    model, tok = policy
    local = LocalChat("smollm2-135m-instruct", model=model, tokenizer=tok)
    with FakeOpenAI(numbered) as srv:
        endpoint = f"openai:fake@{srv.url}"
        cfg = cfg_for(tmp_path, [endpoint, "hf:smollm2-135m-instruct"], max_new_tokens=8, limit=2, batch_size=6)
        cfg.problems = cfg.problems * 2  # the same file twice: duplicates are dropped
        report = run_collect(cfg, chats={"hf:smollm2-135m-instruct": local})
    rows = read(cfg.output)
    assert report["n_problems"] == 2 and report["duplicate_problems"] == 2
    assert report["written"] == len(rows) == 2 * 2 * 3 and report["failed_requests"] == 0 and report["skipped"] == 0
    assert set(rows[0]) == {"question", "reference", "completion", "source", "problem_id", "sample"}
    assert set(groups(rows).values()) == {3} and {r["source"] for r in rows} == {endpoint, "hf:smollm2-135m-instruct"}
    assert {(r["problem_id"], r["reference"]) for r in rows} == {("probs-1", "7"), ("probs-2", "12")}
    for r in rows:
        assert r["question"] == PROBLEMS[int(r["problem_id"][-1]) - 1][0] and isinstance(r["completion"], str)
    assert sorted(r["sample"] for r in rows if r["source"] == endpoint and r["problem_id"] == "probs-1") == [0, 1, 2]
    # the endpoint got the question in a chat prompt asking for a boxed answer, 3 samples per request
    assert all(b["n"] == 3 and "\\boxed{}" in last_user(b) and b["max_tokens"] == 8 for b in srv.requests)
    # a second run has nothing to do
    again = run_collect(cfg, chats={"hf:smollm2-135m-instruct": local})
    assert again["written"] == 0 and again["skipped"] == 12 and read(cfg.output) == rows


def test_resume_after_crash_mid_file(tmp_path):
    with FakeOpenAI(numbered) as srv:
        sources = [f"openai:model-a@{srv.url}", f"openai:model-b@{srv.url}"]
        cfg = cfg_for(tmp_path, sources)
        run_collect(cfg)
        full = open(cfg.output, "rb").read()
        lines = full.splitlines(keepends=True)
        assert len(lines) == 3 * 2 * 3
        # crash: 7 finished rows (2 full groups + 1 sample of a third) and half of the 8th row
        kept = b"".join(lines[:7])
        (tmp_path / "out.jsonl").write_bytes(kept + lines[7][: len(lines[7]) // 2])
        done, truncated = read_existing(tmp_path / "out.jsonl")
        assert truncated and sum(len(s) for s in done.values()) == 7
        assert open(cfg.output, "rb").read() == kept  # the cut line was dropped, the rest kept
        (tmp_path / "out.jsonl").write_bytes(kept + lines[7][:10])
        n_before = len(srv.requests)
        report = run_collect(cfg)
    after = open(cfg.output, "rb").read()
    assert after.startswith(kept)  # finished rows byte-identical
    rows = read(cfg.output)
    assert report["dropped_truncated_line"] and report["written"] == 18 - 7 and report["skipped"] == 7
    assert len(rows) == 18 and set(groups(rows).values()) == {3}
    assert len({(r["problem_id"], r["source"], r["sample"]) for r in rows}) == 18  # no duplicates
    assert {r["sample"] for r in rows} == {0, 1, 2}
    new = srv.requests[n_before:]
    assert sorted(b["n"] for b in new) == [2, 3, 3, 3]  # the partial group asks only for its 2 missing samples


def test_failed_requests_counted_and_retried_on_rerun(tmp_path):
    broken = {"on": True}

    def respond(body, i):
        if broken["on"] and "buys 4 more" in last_user(body):
            return Reply(status=500)
        return numbered(body, i)

    with FakeOpenAI(respond) as srv:
        cfg = cfg_for(tmp_path, [f"openai:m@{srv.url}"])
        report = run_collect(cfg)
        assert report["failed_requests"] == 1 and report["written"] == 6
        broken["on"] = False
        report = run_collect(cfg)
    assert report["failed_requests"] == 0 and report["written"] == 3 and report["skipped"] == 6
    assert set(groups(read(cfg.output)).values()) == {3}

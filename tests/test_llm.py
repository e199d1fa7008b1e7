"""Tests of cooper_rl.llm against a real OpenAI-compatible server on 127.0.0.1 (tests/fake_openai.py)."""

import asyncio
import logging
import time

import pytest

from cooper_rl.llm import LocalChat, OpenAIChat, make_chat
from fake_openai import FakeOpenAI, Reply, last_user


def user(text):
    return [{"role": "user", "content": text}]


def fast_chat(url, **kw):
    """A client with short timeouts and tiny backoff, for tests."""
    chat = make_chat(f"openai:fake-model@{url}", **{"timeout": 2.0, "max_retries": 2, **kw})
    chat.backoff = 0.01
    return chat


def test_make_chat_specs():
    c = make_chat("openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1")
    assert (
        isinstance(c, OpenAIChat) and c.model == "Qwen/Qwen2.5-7B-Instruct" and c.base_url == "http://127.0.0.1:8000/v1"
    )
    c = make_chat("openai:llama3:8b")
    assert c.model == "llama3:8b" and c.base_url is None
    c = make_chat("hf:smollm2-135m-instruct")
    assert isinstance(c, LocalChat) and c.name == "smollm2-135m-instruct"
    for bad in ("smollm2", "hf:", "openai:", "vllm:x@http://h"):
        with pytest.raises(ValueError, match="model spec"):
            make_chat(bad)


def test_results_in_order_with_n_and_sampling_params():
    with FakeOpenAI(delay=0.0) as srv:
        chat = fast_chat(srv.url)
        out = chat.chat_many([user(f"q{i}") for i in range(12)], temperature=0.3, top_p=0.9, max_tokens=7, n=3)
    assert out == [[f"echo: q{i}"] * 3 for i in range(12)]
    assert len(srv.requests) == 12 and chat.n_failed == 0 and chat.n_requests == 12
    body = srv.requests[0]
    assert body["model"] == "fake-model" and body["n"] == 3 and body["temperature"] == 0.3
    assert body["top_p"] == 0.9 and body["max_tokens"] == 7
    assert chat.chat_many([]) == []


def test_server_ignoring_n_is_topped_up():
    """llama.cpp-style servers return one choice whatever n is: more requests fill the rest."""
    with FakeOpenAI(lambda body, i: [f"c{i}"]) as srv:
        out = fast_chat(srv.url).chat_many([user("q")], n=3)
    assert out == [["c0", "c1", "c2"]] and [r["n"] for r in srv.requests] == [3, 2, 1]


def test_concurrency_limit_respected():
    with FakeOpenAI(delay=0.15) as srv:
        chat = fast_chat(srv.url, concurrency=3)
        out = chat.chat_many([user(str(i)) for i in range(12)])
    assert all(o is not None for o in out)
    assert srv.max_in_flight == 3  # never more than the limit, and the limit is used


def test_timeout_gives_none_within_bounded_time():
    def respond(body, i):
        return Reply(delay=30) if last_user(body) == "slow" else "ok"

    with FakeOpenAI(respond) as srv:
        chat = fast_chat(srv.url, timeout=1.0, max_retries=1)
        t0 = time.time()
        out, reasons = chat.chat_many_detailed([user("fast"), user("slow"), user("fast")])
        elapsed = time.time() - t0
    assert out == [["ok"], None, ["ok"]] and reasons == [None, "timeout", None]
    assert elapsed < 8  # 2 attempts x 1 s (+ start-up), nowhere near the server's 30 s
    assert chat.failures == {"timeout": 1} and chat.n_failed == 1 and chat.n_retries == 1
    assert sum(last_user(b) == "slow" for b in srv.requests) == 2


def test_retry_then_success_on_500_and_429():
    fails = {"a": 2, "b": 1}  # failures before success, per prompt

    def respond(body, i):
        q = last_user(body)
        if fails.get(q, 0) > 0:
            fails[q] -= 1
            return Reply(status=500 if q == "a" else 429)
        return "fine " + q

    with FakeOpenAI(respond) as srv:
        chat = fast_chat(srv.url, max_retries=2)
        out = chat.chat_many([user("a"), user("b"), user("c")])
    assert out == [["fine a"], ["fine b"], ["fine c"]]
    assert len(srv.requests) == 6 and chat.n_retries == 3 and chat.n_failed == 0


def test_failures_counted_never_raised():
    def respond(body, i):
        q = last_user(body)
        return {"500": Reply(status=500), "400": Reply(status=400), "html": Reply(raw=b"<html>oops</html>")}.get(
            q, "ok"
        )

    with FakeOpenAI(respond) as srv:
        chat = fast_chat(srv.url, max_retries=2)
        out, reasons = chat.chat_many_detailed([user(q) for q in ("500", "ok", "400", "html", "ok")])
    assert out == [None, ["ok"], None, None, ["ok"]]
    assert reasons == ["server_error", None, "http_error", "bad_response", None]
    assert chat.failures == {"server_error": 1, "http_error": 1, "bad_response": 1} and chat.n_failed == 3
    assert len(srv.requests) == 3 + 1 + 1 + 1 + 1  # only the 5xx is retried (twice)


def test_connection_refused_is_a_failure():
    with FakeOpenAI() as srv:
        url = srv.url
    chat = fast_chat(url, max_retries=1)  # server is gone: connection refused on 127.0.0.1
    assert chat.chat_many([user("x")]) == [None] and chat.failures == {"connection": 1}


def test_sync_wrapper_inside_running_loop():
    with FakeOpenAI() as srv:
        chat = fast_chat(srv.url)

        async def main():
            return chat.chat_many([user("x")])

        assert asyncio.run(main()) == [["echo: x"]]


def test_api_key_sent_but_never_logged(monkeypatch, caplog):
    secret = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("COOPER_TEST_KEY", secret)
    with FakeOpenAI(lambda body, i: Reply(status=500) if i == 0 else "ok") as srv:
        chat = fast_chat(srv.url, api_key_env="COOPER_TEST_KEY", max_retries=0)
        with caplog.at_level(logging.DEBUG):
            out = chat.chat_many([user("x"), user("y")])
    assert sorted(map(str, out)) == ["None", "['ok']"]
    assert srv.auth_headers == [f"Bearer {secret}"] * 2
    assert "COOPER_TEST_KEY" in repr(chat)
    for text in (caplog.text, repr(chat), str(vars(chat))):
        assert secret not in text and "SECRET" not in text
    assert "failed" in caplog.text  # the failure itself is logged


def test_missing_key_env_uses_empty(monkeypatch):
    monkeypatch.delenv("COOPER_NO_SUCH_KEY", raising=False)
    with FakeOpenAI() as srv:
        fast_chat(srv.url, api_key_env="COOPER_NO_SUCH_KEY").chat_many([user("x")])
    assert srv.auth_headers == ["Bearer EMPTY"]


def test_local_chat_batched(policy, one_thread):
    model, tok = policy
    chat = LocalChat("smollm2-135m-instruct", model=model, tokenizer=tok, batch_size=4)
    out = chat.chat_many([user("What is 2+2?"), user("Say hi.")], temperature=0.7, max_tokens=3, n=2)
    assert len(out) == 2 and all(len(o) == 2 and all(isinstance(t, str) for t in o) for o in out)
    greedy = chat.chat_many([user("Say hi.")], temperature=0.0, max_tokens=3, n=2)
    assert len(greedy[0]) == 2 and greedy[0][0] == greedy[0][1]

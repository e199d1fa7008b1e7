"""The assistant (negatives) and judge (labels) paths against a real OpenAI-compatible server: llama.cpp's
(`llama-cpp-python[server]`) serving the embedded SmolLM2 GGUF on a free loopback port.

Optional: `pip install -e .[llamacpp]` compiles llama.cpp (minutes on 2 cores), so these tests are marked slow
and skipped where llama_cpp is not installed; run them with `make test-slow`. A 135M model writes weak negatives
and verdicts: the tests check the protocol, the accounting of invalid negatives / missing verdicts, and that
nothing crashes."""

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed (extra: llamacpp)")

from cooper_rl.cooper.negatives import make_negative_generator  # noqa: E402
from cooper_rl.cooper.step import cooper_step  # noqa: E402
from cooper_rl.io import write_jsonl  # noqa: E402
from cooper_rl.models import smollm2_gguf_path  # noqa: E402
from cooper_rl.rm.label import LabelConfig, run_label  # noqa: E402
from tiny import tiny_rm, weights  # noqa: E402

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """llama.cpp's OpenAI-compatible server on the embedded SmolLM2 GGUF; yields its base URL (…/v1)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf_path()), "--host", "127.0.0.1"]
        + ["--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--model_alias", "smollm2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with opener.open(f"{url}/models", timeout=2) as r:
                if json.loads(r.read())["data"]:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("llama.cpp server did not come up within 120 s")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


QUESTIONS = ["Tom has 3 apples and buys 4 more. How many apples does he have?", "What is 10 - 3?"]
POSITIVES = ["3 + 4 = 7. The answer is \\boxed{7}.", "10 - 3 = 7. The answer is \\boxed{7}."]


def test_assistant_negatives_through_llamacpp(server, tmp_path):
    negatives = make_negative_generator("api", f"openai:smollm2@{server}", timeout=120, max_tokens=128)
    negs, reasons = negatives(QUESTIONS, ["7", "7"], POSITIVES)
    assert len(negs) == len(reasons) == 2
    for n, r in zip(negs, reasons):
        assert (n is None) != (r is None)  # every negative is either accepted or has a reason
        assert r in (None, "empty", "no_answer", "still_correct", "length")  # content verdicts, no transport failure
    assert sum(negatives.chat.failures.values()) == 0  # the protocol worked: every request got a reply

    rm = tiny_rm(tmp_path / "rm")
    before = weights(rm)
    out = cooper_step(rm, negatives, QUESTIONS, ["7", "7"], POSITIVES, [True, True])
    assert out["n_pairs"] == 2 and out["n_valid"] + sum(v for k, v in out.items() if k.startswith("invalid/")) >= 2
    if out["n_valid"] == 0:  # masked pairs never move the RM
        assert all((before[k] == v).all() for k, v in weights(rm).items())


def test_judge_labels_through_llamacpp(server, tmp_path):
    rows = [
        {"question": QUESTIONS[0], "reference": "7", "completion": POSITIVES[0], "source": "t", "problem_id": "a"},
        {"question": QUESTIONS[0], "reference": "7", "completion": "The answer is \\boxed{9}.", "source": "t"},
        {"question": QUESTIONS[1], "reference": "7", "completion": POSITIVES[1], "source": "t", "problem_id": "c"},
    ]
    write_jsonl(tmp_path / "rows.jsonl", rows)
    cfg = LabelConfig(
        input=str(tmp_path / "rows.jsonl"),
        judge=f"openai:smollm2@{server}",
        policy="agree",
        output=str(tmp_path / "labelled.jsonl"),
        timeout=120,
    )
    stats = run_label(cfg)
    assert stats["n_in"] == 3 and stats["judge_failures"]["timeout"] == stats["judge_failures"]["error"] == 0
    judged_or_failed = stats["n_judged"] + stats["judge_failures"]["unparseable"]
    assert judged_or_failed == 3  # every row got a verdict or is counted as unparseable
    assert stats["n_out"] <= stats["n_judged"] and stats["n_out"] + stats["n_skipped"] == 3

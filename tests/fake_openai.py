"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests (POST /v1/chat/completions).

``respond(body, i)`` decides each reply: ``body`` is the request JSON, ``i`` the 0-based request number.
It returns a str (the text of every choice), a list of str (the choices), or a ``Reply`` for errors:
``Reply(status=500)``, ``Reply(raw=b"not json")``, ``Reply(delay=5)`` (sleep longer than the client timeout).
The server records every request, the Authorization headers it saw and the most requests in flight at once.
After ``max_requests`` requests it answers 503, so a runaway client cannot loop forever.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Server(ThreadingHTTPServer):
    """Threaded server with a long listen queue (the default 5 drops bursts of connects for ~1 s)."""

    request_queue_size = 128
    daemon_threads = True
    block_on_close = False


@dataclass
class Reply:
    """A non-standard reply: an HTTP status, a raw body, a delay before answering, or a text after a delay."""

    status: int = 200
    raw: bytes | None = None
    delay: float = 0.0
    text: str | None = None


def last_user(body: dict) -> str:
    """Content of the last user message of a chat request."""
    return [m["content"] for m in body["messages"] if m["role"] == "user"][-1]


class FakeOpenAI:
    """Context manager running the fake server in a thread; ``url`` is its base URL (ends in /v1)."""

    def __init__(self, respond=None, delay: float = 0.0, max_requests: int = 500):
        self.respond = respond or (lambda body, i: "echo: " + last_user(body))
        self.delay = delay  # added to every request (to measure concurrency)
        self.max_requests = max_requests
        self.requests: list[dict] = []
        self.auth_headers: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with fake._lock:
                    i = len(fake.requests)
                    fake.requests.append(body)
                    fake.auth_headers.append(self.headers.get("Authorization", ""))
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if self.path != "/v1/chat/completions":
                        return self._send(404, b'{"error": {"message": "not found"}}')
                    if i >= fake.max_requests:
                        return self._send(503, b'{"error": {"message": "request budget exhausted"}}')
                    out = fake.respond(body, i)
                    reply = out if isinstance(out, Reply) else Reply(text=out)
                    if fake._stop.wait(fake.delay + reply.delay):
                        return
                    if reply.raw is not None:
                        return self._send(reply.status, reply.raw, "text/html")
                    if reply.status != 200:
                        return self._send(
                            reply.status, json.dumps({"error": {"message": "boom", "type": "server_error"}}).encode()
                        )
                    texts = reply.text if isinstance(reply.text, list) else [reply.text] * int(body.get("n") or 1)
                    self._send(200, json.dumps(completion(body.get("model", "fake"), texts)).encode())
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _send(self, status: int, payload: bytes, ctype: str = "application/json"):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def completion(model: str, texts: list[str]) -> dict:
    """An OpenAI chat.completion response JSON with one choice per text."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop", "logprobs": None}
            for i, t in enumerate(texts)
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": len(texts), "total_tokens": 1 + len(texts)},
    }

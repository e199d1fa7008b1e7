"""Chat generation backends: OpenAI-compatible endpoints and local Hugging Face causal LMs.

Both backends share one interface::

    chat.chat_many(list_of_message_lists, temperature=0.7, top_p=1.0, max_tokens=512, n=1)
        -> list[list[str] | None]        # n texts per request, in input order; None = request failed

Model specs (``make_chat``):

- ``openai:MODEL@BASE_URL``, e.g. ``openai:Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1`` (vLLM,
  llama.cpp server, ollama, or any OpenAI-compatible server). ``openai:MODEL`` without ``@BASE_URL``
  uses the ``openai`` package default (``$OPENAI_BASE_URL`` or api.openai.com). The API key is read
  from the environment variable named by ``api_key_env`` (default ``OPENAI_API_KEY``; "EMPTY" if unset)
  and is never stored on the object, printed or logged.
- ``hf:NAME_OR_PATH``, e.g. ``hf:smollm2-135m-instruct``: a local causal LM loaded with
  ``cooper_rl.models.load_causal_lm`` (registry name, local directory or hub id).

``OpenAIChat`` never raises for one bad request: each request gets a per-request timeout and is
retried with exponential backoff plus jitter on timeouts, connection errors, HTTP 429 and 5xx; a
request that still fails gives None, and the failure is counted by reason in ``chat.failures``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import threading
from collections import Counter

log = logging.getLogger(__name__)

# Failure reasons counted in OpenAIChat.failures
TIMEOUT, CONNECTION, RATE_LIMIT, SERVER_ERROR, HTTP_ERROR, BAD_RESPONSE = (
    "timeout",
    "connection",
    "rate_limit",
    "server_error",
    "http_error",
    "bad_response",
)
RETRYABLE = {TIMEOUT, CONNECTION, RATE_LIMIT, SERVER_ERROR}


def _run_sync(coro):
    """Run a coroutine to completion from sync code, also when the caller already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop in this thread: the common case
        return asyncio.run(coro)
    box = {}  # a loop is running (e.g. Jupyter): run ours in a helper thread

    def target():
        try:
            box["out"] = asyncio.run(coro)
        except BaseException as e:  # re-raised in the caller's thread
            box["err"] = e

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "err" in box:
        raise box["err"]
    return box["out"]


def classify_error(exc: BaseException) -> str:
    """Failure reason for an exception raised by a chat request (see the module constants)."""
    import openai

    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, openai.APITimeoutError)):
        return TIMEOUT
    if isinstance(exc, openai.APIConnectionError):
        return CONNECTION
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429:
            return RATE_LIMIT
        return SERVER_ERROR if exc.status_code >= 500 else HTTP_ERROR
    return BAD_RESPONSE  # non-JSON body, missing fields, validation errors, ...


class OpenAIChat:
    """Chat completions from an OpenAI-compatible endpoint, many requests at once (asyncio)."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 16,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
    ):
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env  # the variable's name only; the key is read when a client is made
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.failures: Counter = Counter()  # reason -> requests that finally failed
        self.n_requests = 0  # requests asked for (one per message list)
        self.n_retries = 0  # extra attempts made after retryable errors

    def __repr__(self) -> str:
        return f"OpenAIChat(model={self.model!r}, base_url={self.base_url!r}, api_key_env={self.api_key_env!r})"

    @property
    def n_failed(self) -> int:
        """Requests that returned None so far."""
        return sum(self.failures.values())

    def _client(self):
        """A fresh AsyncOpenAI client (bound to the running event loop; closed by the caller)."""
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            base_url=self.base_url,
            api_key=os.environ.get(self.api_key_env) or "EMPTY",
            timeout=self.timeout,
            max_retries=0,
        )

    async def _once(self, client, messages, n: int, **sampling) -> list[str]:
        """One chat request with a hard deadline; tops up when a server returns fewer than n choices."""
        texts: list[str] = []
        while len(texts) < n:  # llama.cpp / ollama ignore n and return one choice
            resp = await asyncio.wait_for(
                client.chat.completions.create(model=self.model, messages=messages, n=n - len(texts), **sampling),
                timeout=self.timeout + 1.0,
            )
            choices = getattr(resp, "choices", None)
            if not choices:
                raise ValueError("response has no choices")
            texts += [c.message.content or "" for c in choices]
        return texts[:n]

    async def _request(self, client, sem, messages, n: int, **sampling) -> tuple[list[str] | None, str | None]:
        """(texts, None) or (None, reason) for one request, retrying retryable failures."""
        for attempt in range(self.max_retries + 1):
            async with sem:
                try:
                    return await self._once(client, messages, n, **sampling), None
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # one bad request must never break the batch
                    reason = classify_error(e)
                    detail = f"{type(e).__name__}: {str(e)[:200]}"
            if reason not in RETRYABLE or attempt == self.max_retries:
                log.warning("chat request failed (%s, %d attempts): %s", reason, attempt + 1, detail)
                return None, reason
            self.n_retries += 1
            delay = min(self.max_backoff, self.backoff * 2**attempt) * random.uniform(0.5, 1.5)
            log.info("chat request %s (%s); retry %d in %.2f s", reason, detail, attempt + 1, delay)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def achat_many_detailed(
        self, messages_list, temperature: float = 0.7, top_p: float = 1.0, max_tokens: int = 512, n: int = 1
    ):
        """Async version of ``chat_many_detailed``."""
        sem = asyncio.Semaphore(self.concurrency)
        sampling = dict(temperature=temperature, top_p=top_p, max_tokens=max_tokens)
        async with self._client() as client:
            out = await asyncio.gather(*[self._request(client, sem, m, n, **sampling) for m in messages_list])
        self.n_requests += len(out)
        self.failures.update(reason for _, reason in out if reason is not None)
        return [t for t, _ in out], [r for _, r in out]

    def chat_many_detailed(
        self, messages_list, temperature: float = 0.7, top_p: float = 1.0, max_tokens: int = 512, n: int = 1
    ) -> tuple[list[list[str] | None], list[str | None]]:
        """(results, reasons): results as ``chat_many``; reasons[i] is None or why request i failed."""
        if not messages_list:
            return [], []
        return _run_sync(self.achat_many_detailed(list(messages_list), temperature, top_p, max_tokens, n))

    def chat_many(
        self, messages_list, temperature: float = 0.7, top_p: float = 1.0, max_tokens: int = 512, n: int = 1
    ) -> list[list[str] | None]:
        """n completions for each message list (in input order); None where a request finally failed."""
        return self.chat_many_detailed(messages_list, temperature, top_p, max_tokens, n)[0]


class LocalChat:
    """The ``chat_many`` interface over a local HF causal LM: chat template + batched ``generate``."""

    def __init__(
        self, name: str, model=None, tokenizer=None, batch_size: int = 16, dtype: str = "auto", device: str = "auto"
    ):
        self.name = name
        self.batch_size = max(1, batch_size)  # sequences (requests x n) per generate() call
        self.dtype, self.device = dtype, device
        self._model, self._tokenizer = model, tokenizer
        self.failures: Counter = Counter()  # kept for interface parity: local generation raises instead
        self.n_requests = 0

    def __repr__(self) -> str:
        return f"LocalChat(name={self.name!r})"

    @property
    def n_failed(self) -> int:
        """Always 0: local generation errors (e.g. out of memory) are raised, not counted."""
        return 0

    def load(self):
        """(model, tokenizer), loaded on first use."""
        if self._model is None:
            from cooper_rl.models import load_causal_lm

            self._model, self._tokenizer = load_causal_lm(self.name, dtype=self.dtype, device=self.device)
        return self._model, self._tokenizer

    def render(self, messages: list[dict]) -> str:
        """The prompt text for a message list (generation.render_messages: chat template if the tokenizer has one)."""
        from cooper_rl.generation import render_messages

        return render_messages(self.load()[1], messages)

    def chat_many_detailed(
        self, messages_list, temperature: float = 0.7, top_p: float = 1.0, max_tokens: int = 512, n: int = 1
    ) -> tuple[list[list[str] | None], list[str | None]]:
        """(results, reasons) like ``OpenAIChat.chat_many_detailed``; reasons are always None."""
        from cooper_rl.generation import sample_completions

        if not messages_list:
            return [], []
        model, tok = self.load()
        prompts = [self.render(m) for m in messages_list]
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))  # similar lengths pad little
        k = n if temperature > 0 else 1  # greedy decoding gives n identical texts: generate one, repeat it
        per_batch = max(1, self.batch_size // k)
        out: list[list[str] | None] = [None] * len(prompts)
        for start in range(0, len(order), per_batch):
            idx = order[start : start + per_batch]
            for i, samples in zip(
                idx,
                sample_completions(
                    model,
                    tok,
                    [prompts[i] for i in idx],
                    k,
                    temperature=temperature,
                    top_p=top_p,
                    max_new_tokens=max_tokens,
                ),
            ):
                out[i] = [text for text, _ in samples] * (n // k)
        self.n_requests += len(prompts)
        return out, [None] * len(out)

    def chat_many(
        self, messages_list, temperature: float = 0.7, top_p: float = 1.0, max_tokens: int = 512, n: int = 1
    ) -> list[list[str] | None]:
        """n sampled completions for each message list, in input order (greedy when temperature == 0)."""
        return self.chat_many_detailed(messages_list, temperature, top_p, max_tokens, n)[0]


_OPENAI_SPEC = re.compile(r"openai:(?P<model>[^@]+?)(?:@(?P<url>https?://\S+))?")


def make_chat(
    spec: str,
    *,
    concurrency: int = 16,
    timeout: float = 120.0,
    max_retries: int = 3,
    api_key_env: str = "OPENAI_API_KEY",
    batch_size: int = 16,
    dtype: str = "auto",
    device: str = "auto",
) -> OpenAIChat | LocalChat:
    """A chat backend from a spec: ``openai:MODEL[@http://HOST:PORT/v1]`` or ``hf:NAME_OR_PATH``."""
    spec = spec.strip()
    if spec.startswith("hf:") and spec[3:]:
        return LocalChat(spec[3:], batch_size=batch_size, dtype=dtype, device=device)
    m = _OPENAI_SPEC.fullmatch(spec)
    if m:
        return OpenAIChat(
            m["model"],
            m["url"],
            api_key_env=api_key_env,
            concurrency=concurrency,
            timeout=timeout,
            max_retries=max_retries,
        )
    raise ValueError(
        f"bad model spec {spec!r}: use 'openai:MODEL@http://HOST:PORT/v1' (OpenAI-compatible "
        "endpoint), 'openai:MODEL' (default OpenAI base URL) or 'hf:NAME_OR_PATH' (local HF model)"
    )

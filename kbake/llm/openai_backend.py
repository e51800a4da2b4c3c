"""`openai`: any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp, TGI).

Bounded concurrency with a thread pool; retries with exponential backoff and jitter on
429, 5xx, time-outs and dropped connections, honouring Retry-After. A server that keeps
failing raises BackendUnavailable (the cache keeps what finished); an answer that keeps
coming back empty or malformed is dropped and counted, never a crash.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from kbake.llm.base import BackendUnavailable, ChatRequest, Completion, LLMError, OnResult

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class OpenAIBackend:
    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 concurrency: int = 8, max_retries: int = 6, timeout: float = 60.0,
                 backoff_base: float = 0.5, backoff_max: float = 30.0):
        import openai

        key = os.environ.get(api_key_env)
        if not key and base_url is None:
            raise LLMError(f"openai:{model} needs an API key in ${api_key_env} (or --base-url for a local server)")
        # Retries are ours (counted, with Retry-After), so the client's own are off.
        self.client = openai.OpenAI(base_url=base_url, api_key=key or "not-needed", max_retries=0, timeout=timeout)
        self.model = model
        self.model_id = f"openai:{model}"
        self.base_url = base_url or "https://api.openai.com/v1"
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retries = 0
        self._lock = threading.Lock()
        self._openai = openai

    def _wait(self, attempt: int, retry_after: float | None) -> None:
        with self._lock:
            self.retries += 1
        if retry_after is not None:
            delay = min(retry_after, self.backoff_max)
        else:
            delay = min(self.backoff_max, self.backoff_base * 2**attempt) * (0.5 + random.random() / 2)
        time.sleep(delay)

    def _one(self, req: ChatRequest) -> Completion | None:
        openai = self._openai
        s = req.sampling
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            try:
                r = self.client.chat.completions.create(
                    model=self.model, messages=req.as_openai(), max_tokens=s.max_tokens,
                    temperature=s.temperature, top_p=s.top_p, seed=s.seed, **_response_format(s),
                )
            except openai.APIStatusError as e:
                if e.status_code not in RETRYABLE_STATUS:
                    raise LLMError(f"{self.base_url}: HTTP {e.status_code}: {_short(e)}") from None
                last = f"HTTP {e.status_code}"
                if attempt < self.max_retries:
                    self._wait(attempt, _retry_after(e))
                continue
            except (openai.APITimeoutError, openai.APIConnectionError) as e:
                last = type(e).__name__
                if attempt < self.max_retries:
                    self._wait(attempt, None)
                continue
            choice = r.choices[0] if getattr(r, "choices", None) else None
            text = getattr(getattr(choice, "message", None), "content", None) if choice else None
            if not isinstance(text, str) or not text.strip():
                last = "malformed"
                if attempt < self.max_retries:
                    self._wait(attempt, 0.0)
                continue
            usage = getattr(r, "usage", None)
            return Completion(text=text, finish_reason=getattr(choice, "finish_reason", None) or "stop",
                              prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                              completion_tokens=getattr(usage, "completion_tokens", 0) or 0)
        if last == "malformed":
            return None
        raise BackendUnavailable(
            f"{self.base_url} did not answer after {self.max_retries + 1} attempts (last: {last}); "
            "finished answers are cached: re-run the same command to resume"
        )

    def complete(self, requests: Sequence[ChatRequest], on_result: OnResult) -> list[Completion | None]:
        results: list[Completion | None] = [None] * len(requests)
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:
            futures = {pool.submit(self._one, r): i for i, r in enumerate(requests)}
            for f in as_completed(futures):
                i = futures[f]
                c = f.result()  # BackendUnavailable / LLMError propagate: stop the run
                results[i] = c
                if c is not None:
                    on_result(i, c)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return results


def _retry_after(e) -> float | None:
    try:
        value = e.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError, TypeError):
        return None


def _short(e) -> str:
    msg = str(getattr(e, "message", "") or e)
    return msg.splitlines()[0][:200] if msg else type(e).__name__


def _response_format(s) -> dict:
    """A JSON-schema `response_format` (OpenAI, vLLM, Ollama and llama.cpp servers accept it)
    when the request carries a schema; nothing otherwise."""
    if not s.json_schema:
        return {}
    return {"response_format": {"type": "json_schema",
                                "json_schema": {"name": "kbake_item", "schema": json.loads(s.json_schema)}}}

"""LLM backends and the cache: the openai backend against a real HTTP server on 127.0.0.1,
the local backend on the tiny model."""

from __future__ import annotations

import time

import pytest
from openai_server import FakeOpenAI

from kbake.llm import BackendUnavailable, BudgetExhausted, CachedLLM, ChatRequest, ResponseCache, Sampling, make_llm
from kbake.llm.openai_backend import OpenAIBackend


def reqs(n: int, max_tokens: int = 32) -> list[ChatRequest]:
    return [ChatRequest.chat("sys", f"Q: <question> request number {i}", Sampling(max_tokens, 0.7, 0.95, 0)) for i in range(n)]


def cached_openai(server: FakeOpenAI, tmp_path, **kw) -> CachedLLM:
    backend = OpenAIBackend("test-model", base_url=server.base_url, concurrency=kw.pop("concurrency", 8),
                            max_retries=kw.pop("max_retries", 6), timeout=kw.pop("timeout", 10),
                            backoff_base=0.01, backoff_max=0.2)
    return CachedLLM(backend, ResponseCache(tmp_path / "cache.sqlite"), **kw)


def test_cache_key_covers_model_messages_and_sampling():
    a = ChatRequest.chat("s", "u", Sampling(10, 0.7, 0.9, 0))
    assert a.cache_key("m") == ChatRequest.chat("s", "u", Sampling(10, 0.7, 0.9, 0)).cache_key("m")
    assert a.cache_key("m") != a.cache_key("other-model")
    assert a.cache_key("m") != ChatRequest.chat("s", "u!", Sampling(10, 0.7, 0.9, 0)).cache_key("m")
    assert a.cache_key("m") != ChatRequest.chat("s", "u", Sampling(10, 0.7, 0.9, 1)).cache_key("m")


def test_concurrency_is_bounded_and_used(tmp_path):
    with FakeOpenAI(latency=0.1) as server:
        llm = cached_openai(server, tmp_path, concurrency=16)
        out = llm.complete(reqs(64))
    assert all(c is not None and c.text for c in out)
    assert server.max_in_flight == 16  # 16 at once, never more


def test_warm_cache_makes_zero_calls(tmp_path):
    with FakeOpenAI() as server:
        first = cached_openai(server, tmp_path).complete(reqs(20))
        n = server.requests
        llm = cached_openai(server, tmp_path)
        second = llm.complete(reqs(20))
        assert server.requests == n
    assert [c.text for c in first] == [c.text for c in second]
    assert llm.stats.calls == 0 and llm.stats.cache_hits == 20


def test_thirty_percent_errors_still_yield_every_item(tmp_path):
    with FakeOpenAI(error_rate=0.3, seed=3) as server:
        llm = cached_openai(server, tmp_path, max_retries=10)
        out = llm.complete(reqs(50))
        assert server.requests > 50  # errors really happened and were retried
    assert all(c is not None for c in out)
    assert llm.backend.retries == server.requests - 50


def test_429_retry_after_is_honoured(tmp_path):
    with FakeOpenAI(rate_limit_first=3, retry_after=0.2) as server:
        llm = cached_openai(server, tmp_path, concurrency=1)
        t = time.perf_counter()
        out = llm.complete(reqs(2))
        waited = time.perf_counter() - t
    assert all(c is not None for c in out)
    assert llm.backend.retries == 3
    assert waited >= 0.6  # three Retry-After waits of 0.2 s, not the 0.01 s backoff


def test_garbage_is_retried_then_dropped_and_counted(tmp_path):
    with FakeOpenAI(garbage_rate=1.0) as server:
        llm = cached_openai(server, tmp_path, max_retries=2)
        out = llm.complete(reqs(3))
    assert out == [None, None, None]
    assert llm.stats.dropped == 3 and server.requests == 9


def test_server_gone_stops_with_a_clear_message(tmp_path):
    with FakeOpenAI() as server:
        url = server.base_url
    backend = OpenAIBackend("m", base_url=url, max_retries=2, timeout=2, backoff_base=0.01)
    llm = CachedLLM(backend, ResponseCache(tmp_path / "c.sqlite"))
    with pytest.raises(BackendUnavailable, match=r"did not answer after 3 attempts.*re-run the same command to resume"):
        llm.complete(reqs(2))


def test_stalled_server_times_out(tmp_path):
    with FakeOpenAI(stall_after=0) as server:
        llm = cached_openai(server, tmp_path, max_retries=1, timeout=0.5)
        with pytest.raises(BackendUnavailable, match="APITimeoutError"):
            llm.complete(reqs(1))


def test_token_budget_stops_cleanly_and_resumes(tmp_path):
    with FakeOpenAI() as server:
        llm = cached_openai(server, tmp_path, token_budget=50, wave=4)
        with pytest.raises(BudgetExhausted, match="token budget of 50 spent"):
            llm.complete(reqs(40))
        done = server.requests
        assert 0 < done < 40
        rest = cached_openai(server, tmp_path).complete(reqs(40))
        assert all(c is not None for c in rest)
        assert server.requests == 40  # nothing answered before the stop was asked again


def test_api_key_is_sent_but_never_stored(tmp_path, monkeypatch):
    key = "sk-test-PLANTED-0123456789"
    monkeypatch.setenv("MY_KEY", key)
    with FakeOpenAI() as server:
        llm = make_llm("openai:test-model", cache_path=tmp_path / "c.sqlite", base_url=server.base_url,
                       api_key_env="MY_KEY")
        llm.complete(reqs(3))
        assert server.seen_auth[0] == f"Bearer {key}"
    for f in tmp_path.iterdir():
        assert key.encode() not in f.read_bytes()


def test_openai_without_key_or_url_is_a_clear_error(monkeypatch, tmp_path):
    from kbake.llm import LLMError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError, match=r"needs an API key in \$OPENAI_API_KEY"):
        make_llm("openai:gpt-4o-mini", cache_path=tmp_path / "c.sqlite")


def test_local_backend_batches_one_generate_call_per_batch(tiny_model, tmp_path):
    from kbake.llm.local import LocalBackend

    backend = LocalBackend(tiny_model, batch_size=4)
    calls = []
    real = backend.model.generate

    def counting(**kw):
        calls.append(kw["input_ids"].shape[0])
        assert backend.tok.padding_side == "left"
        return real(**kw)

    backend.model.generate = counting
    requests = [ChatRequest.chat(None, "word " * (i + 1), Sampling(8, 0.0, 1.0, 0)) for i in range(10)]
    out = backend.complete(requests, lambda i, c: None)
    assert calls == [4, 4, 2]
    assert all(c.completion_tokens >= 1 for c in out)
    # Left padding with the attention mask: a prompt's greedy answer does not depend on its batch.
    backend.batch_size = 1
    backend.model.generate = real
    single = backend.complete(requests[:4], lambda i, c: None)
    assert [c.text for c in single] == [c.text for c in out[:4]]


def test_local_constrained_decoding_makes_a_random_model_write_the_schema(tiny_model):
    """Structured output by construction: the tiny random model never writes JSON by itself,
    yet every answer under a schema that stopped before max_tokens parses and matches it."""
    import json

    from kbake.llm.local import LocalBackend
    from kbake.synth.parse import parse_qa
    from kbake.synth.qa import qa_schema

    backend = LocalBackend(tiny_model, batch_size=8)
    schema = json.dumps({"type": "object", "required": ["answer"],
                         "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": 12}}})
    reqs = [ChatRequest.chat(None, f"question {i}", Sampling(60, 1.0, 1.0, i, json_schema=schema)) for i in range(8)]
    free = backend.complete([ChatRequest.chat(None, r.messages[0][1], Sampling(40, 1.0, 1.0, 0)) for r in reqs],
                            lambda i, c: None)
    assert not any(c.text.startswith("{") for c in free)
    out = backend.complete(reqs, lambda i, c: None)
    closed = [c for c in out if c.text.rstrip().endswith("}")]  # the rest were cut at max_tokens
    assert len(closed) >= 6
    for c in closed:
        data = json.loads(c.text, strict=False)  # LMFE lets a raw newline into a string; kbake parses leniently
        assert set(data) == {"answer"} and 1 <= len(data["answer"]) <= 13  # lm-format-enforcer may let one over
    qa = backend.complete([ChatRequest.chat(None, "q", Sampling(200, 1.0, 1.0, s, json_schema=qa_schema(1)))
                           for s in range(4)], lambda i, c: None)
    assert all(len(parse_qa(c.text)) == 1 for c in qa if c.text.rstrip().endswith("]"))
    assert ChatRequest.chat(None, "q", Sampling(8)).cache_key("m") != \
        ChatRequest.chat(None, "q", Sampling(8, json_schema=schema)).cache_key("m")


def test_openai_backend_sends_the_schema_as_response_format(tmp_path):
    import json

    schema = json.dumps({"type": "object", "properties": {"answer": {"type": "string"}}})
    with FakeOpenAI() as srv:
        llm = cached_openai(srv, tmp_path)
        llm.complete([ChatRequest.chat(None, "a", Sampling(8, json_schema=schema)), ChatRequest.chat(None, "b", Sampling(8))])
    sent = sorted(srv.response_formats, key=lambda f: f is None)
    assert sent[0] == {"type": "json_schema", "json_schema": {"name": "kbake_item", "schema": json.loads(schema)}}
    assert sent[1] is None

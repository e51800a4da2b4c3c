"""LLM backends for synth and probes: one interface, `complete(requests) -> completions`.

- `openai`: any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp, TGI).
- `local`: a transformers causal LM in-process, batched generation (the embedded default).

Both sit behind one SQLite cache (`CachedLLM`), so a re-run makes no calls and a killed
run resumes where it stopped.
"""

from kbake.llm.base import (
    BackendUnavailable,
    BudgetExhausted,
    ChatRequest,
    Completion,
    LLMError,
    Sampling,
)
from kbake.llm.cache import CachedLLM, ResponseCache

__all__ = [
    "BackendUnavailable",
    "BudgetExhausted",
    "CachedLLM",
    "ChatRequest",
    "Completion",
    "LLMError",
    "ResponseCache",
    "Sampling",
    "make_llm",
]


def make_llm(spec: str, *, cache_path, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
             concurrency: int = 8, max_retries: int = 6, timeout: float = 60.0, token_budget: int | None = None,
             batch_size: int = 16, precision: str = "auto", share_prefix: int = 0) -> CachedLLM:
    """Build a cached LLM from a spec: 'local' (embedded SmolLM2), 'local:NAME' (a HF id or
    folder), or 'openai:MODEL' (an OpenAI-compatible endpoint at base_url). `precision` is the
    local model's number format (kbake.models.precision); `share_prefix` its minimum shared prompt
    prefix, in tokens, computed once per generate call (0: off)."""
    kind, _, name = spec.partition(":")
    if kind == "local":
        from kbake.llm.local import LocalBackend

        backend = LocalBackend(name or "default", batch_size=batch_size, precision=precision,
                               share_prefix=share_prefix)
        wave = max(batch_size * 4, 64)
    elif kind == "openai":
        if not name:
            raise LLMError("--llm openai:MODEL needs a model name, e.g. openai:gpt-4o-mini")
        from kbake.llm.openai_backend import OpenAIBackend

        backend = OpenAIBackend(name, base_url=base_url, api_key_env=api_key_env, concurrency=concurrency,
                                max_retries=max_retries, timeout=timeout)
        wave = max(concurrency * 8, 64)
    else:
        raise LLMError(f"--llm {spec!r}: expected 'local', 'local:NAME' or 'openai:MODEL'")
    return CachedLLM(backend, ResponseCache(cache_path), token_budget=token_budget, wave=wave)

"""The records every backend speaks: a chat request, its sampling, the completion."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Protocol


class LLMError(RuntimeError):
    """A backend failed in a way retrying will not fix."""


class BackendUnavailable(LLMError):
    """The endpoint stopped answering (gone, stalled, or rate-limited) after every retry.
    Everything finished so far is in the cache: re-run the same command to resume."""


class BudgetExhausted(LLMError):
    """The token budget is spent; finished work is cached and the run can resume with a larger budget."""


@dataclass(frozen=True)
class Sampling:
    max_tokens: int = 256
    temperature: float = 0.7
    top_p: float = 0.95
    seed: int = 0
    repetition_penalty: float = 1.0
    """>1 discourages repeating tokens (CTRL, Keskar et al. 2019); used by the local backend,
    which small models need to stop looping; OpenAI-compatible servers do not receive it."""
    json_schema: str | None = None
    """A JSON schema (as compact JSON text) the answer must match: the local backend constrains
    decoding to it (kbake/llm/constrained.py), OpenAI-compatible servers get `response_format`."""


@dataclass(frozen=True)
class ChatRequest:
    messages: tuple[tuple[str, str], ...]
    """(role, content) pairs; a tuple so the request is hashable and immutable."""
    sampling: Sampling = field(default_factory=Sampling)

    @classmethod
    def chat(cls, system: str | None, user: str, sampling: Sampling) -> ChatRequest:
        msgs = ((("system", system),) if system else ()) + (("user", user),)
        return cls(msgs, sampling)

    def as_openai(self) -> list[dict]:
        return [{"role": r, "content": c} for r, c in self.messages]

    def cache_key(self, model_id: str) -> str:
        """Hash of model + messages + sampling: the identity of a call."""
        sampling = asdict(self.sampling)
        for key, unset in (("repetition_penalty", 1.0), ("json_schema", None)):
            if sampling[key] == unset:
                del sampling[key]  # keys made before the field existed stay valid
        blob = json.dumps({"model": model_id, "messages": self.messages, "sampling": sampling},
                          sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class Completion:
    text: str
    finish_reason: str = "stop"
    """'stop' when the model ended its answer, 'length' when it hit max_tokens (truncated)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False


OnResult = Callable[[int, Completion], None]


class Backend(Protocol):
    model_id: str
    """Names the model in cache keys and in every item's provenance."""

    def complete(self, requests: Sequence[ChatRequest], on_result: OnResult) -> list[Completion | None]:
        """Answer every request; call on_result(index, completion) as each finishes.
        A request that keeps returning garbage comes back as None (dropped, counted)."""
        ...

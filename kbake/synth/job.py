"""A generation job: one LLM request plus what its items must record."""

from __future__ import annotations

from dataclasses import dataclass, field

from kbake.llm import ChatRequest


@dataclass
class Job:
    request: ChatRequest
    kind: str
    generator: str
    """e.g. 'qa/numeric', 'rephrase/child', 'entigraph/pair'."""
    prompt_version: str
    doc_id: str
    chunk_ids: list[str]
    context: str
    """The source text the answer must be grounded in."""
    extra: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.request.cache_key("")[:16]

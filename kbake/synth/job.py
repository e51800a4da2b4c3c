"""A generation job: one LLM request plus what its items must record."""

from __future__ import annotations

from dataclasses import dataclass, field

from kbake.llm import ChatRequest, Completion, Sampling
from kbake.run import SynthItem
from kbake.synth.parse import clean_passage


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


def candidate_samplings(args, max_tokens: int, seed: int, json_schema: str | None = None) -> list[Sampling]:
    """The sampling of each of a request's `args.candidates` answers: the recipe's temperature,
    top-p and repetition penalty under seeds seed, seed+1, …"""
    return [Sampling(max_tokens, args.temperature, args.top_p, seed + k, args.repetition_penalty, json_schema)
            for k in range(args.candidates)]


def passage(chunk: dict, args) -> str:
    """A chunk as a prompt shows it. With `synth.dated_prompts` and a dated document, a first
    line says whose document and as of when ("[Costco Wholesale Corporation, as of August 28,
    2022]"), so generated text says "in fiscal 2022" rather than a timeless claim, and the
    grounding filters accept the date."""
    if not (getattr(args, "dated_prompts", False) and chunk.get("as_of")):
        return chunk["text"]
    from datetime import date

    d = date.fromisoformat(chunk["as_of"])
    who = chunk.get("entity") or ""
    # A registrant's name reads well; a file-name slug ("corvane-k-fy") would only confuse.
    head = f"{who}, as of" if " " in who else "As of"
    return f"[{head} {d:%B} {d.day}, {d.year}]\n{chunk['text']}"


def passage_items(job: Job, completion: Completion, model: str) -> list[SynthItem] | str:
    """The one passage of a rephrase or relation answer (cut back to a full sentence when
    truncated), or 'too_short' when too little is left to teach anything."""
    text = clean_passage(completion.text, completion.finish_reason == "length")
    if text is None:
        return "too_short"
    return [SynthItem(id=f"{job.kind}-{job.key}", kind=job.kind, doc_id=job.doc_id, chunk_ids=job.chunk_ids,
                      generator=job.generator, prompt_version=job.prompt_version, model=model, text=text)]

"""`focal`: question-focused rewriting ("focal rewriting", Synthetic Mixed Training 2026): a
short passage written around one question the run's QA pairs ask, from the chunk the pair
came from, so the document's facts also appear as prose organised by what readers ask.
Kept only if it states the pair's answer and invents no number."""

from __future__ import annotations

from kbake.config import SynthArgs
from kbake.llm import Completion
from kbake.llm.base import ChatRequest
from kbake.run import SynthItem, read_items
from kbake.synth.filters import content_words, numbers
from kbake.synth.job import Job, candidate_samplings, passage, passage_items
from kbake.synth.kind import KindPlan, KindReport, SynthContext, SynthKind, collect, count_tokens
from kbake.synth.prompts import load_prompt


def jobs(chunks_by_doc: dict[str, list[dict]], qa_items: list[SynthItem], args: SynthArgs, seed: int) -> list[Job]:
    """One job per QA pair (its first chunk) and candidate."""
    prompt = load_prompt("focal")
    chunk_by_id = {c["chunk_id"]: c for cs in chunks_by_doc.values() for c in cs}
    out = []
    for it in qa_items:
        c = chunk_by_id.get(it.chunk_ids[0]) if it.chunk_ids else None
        if c is None:
            continue
        text = passage(c, args)
        system, user = prompt.render(chunk=text, question=it.question)
        for sampling in candidate_samplings(args, args.rephrase_max_tokens, seed):
            out.append(Job(ChatRequest.chat(system, user, sampling), "focal", "focal/qa", prompt.version,
                           it.doc_id, [c["chunk_id"]], text, {"answer": it.answer, "question": it.question}))
    return out


def states(text: str, answer: str) -> bool:
    """The passage states the answer: its numbers, or most of its content words."""
    if numbers(answer):
        return numbers(answer) <= numbers(text)
    words = content_words(answer)
    return not words or len(words & content_words(text)) / len(words) >= 0.5


def items(job: Job, completion: Completion, model: str) -> list[SynthItem] | str:
    """The passage, or why not: too short, or not stating the answer."""
    got = passage_items(job, completion, model)
    if isinstance(got, str):
        return got
    return got if states(got[0].text, job.extra["answer"]) else "misses_answer"


def generate(ctx: SynthContext, rep: KindReport):
    qa_items = ctx.done.get("qa")
    if qa_items is None:
        path = ctx.run.synth_dir / "qa.jsonl"
        qa_items = read_items(path) if path.exists() else []
    todo = jobs(ctx.by_doc, qa_items, ctx.args, ctx.seed)
    return collect(todo, ctx.complete(todo, "focal"), items, ctx.model, rep), todo, len(todo)


def plan(chunks_by_doc, args, seed: int, tokenizer) -> KindPlan:
    """One call per QA pair and candidate, known after qa: counted at their cap."""
    from kbake.synth import qa, rephrase

    n_qa = len(qa.jobs(chunks_by_doc, args, seed)) * args.qa_per_request * args.candidates
    per_call = count_tokens(rephrase.jobs({d: cs[:1] for d, cs in list(chunks_by_doc.items())[:1]},
                                          args.model_copy(update={"rephrase_styles": ["summary"], "candidates": 1}), seed),
                            tokenizer)
    return KindPlan(n_qa, n_qa * per_call, args.rephrase_max_tokens, [], n_qa, args.rephrase_max_tokens)


KIND = SynthKind("focal", generate, after=("qa",), plan=plan)
"""Writes around the QA pairs' questions, so it runs after qa whatever the order given."""

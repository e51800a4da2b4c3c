"""`extract`: extractive QA, the question-writing task cut down to what a small model can do.

The answer is not generated: spans are picked from the chunk by rule (figures with their
unit, dates, names and places; `answer_spans`), and the model is asked only for a question
whose answer is that span. A pair is kept only if it survives a round trip (after the
answer-span filtering of SQuAD-style question generation, e.g. Alberti et al. 2019,
"Synthetic QA corpora generation with roundtrip consistency"): the span is in the chunk,
the question does not contain it, and the same model, answering the question over the
chunk, says it again.
"""

from __future__ import annotations

import json
import re

from kbake.config import SynthArgs
from kbake.llm import Completion, Sampling
from kbake.llm.base import ChatRequest
from kbake.run import SynthItem
from kbake.synth.filters import content_words, numbers
from kbake.synth.job import Job, candidate_samplings, passage
from kbake.synth.kind import KindPlan, KindReport, SynthContext, SynthKind, collect, count_tokens
from kbake.synth.parse import parse_question
from kbake.synth.prompts import load_prompt

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
SPAN_PATTERNS = (
    # A figure with its unit: "$1,842.6 million", "12.5%", "1,200 employees".
    ("figure", re.compile(r"\$\s?\d[\d,]*(?:\.\d+)?(?:\s(?:million|billion|thousand))?|\d[\d,]*(?:\.\d+)?\s?%"
                          r"|\b\d[\d,]*(?:\.\d+)?\s(?:million|billion|thousand|employees|members|warehouses|"
                          r"locations|plants|customers|shares|square feet|days|years|months)\b")),
    ("date", re.compile(rf"\b(?:{_MONTHS})\s\d{{1,2}},\s\d{{4}}\b|\b(?:fiscal|fiscal year)\s(?:19|20)\d\d\b")),
    # Two to four capitalised words not opening a sentence: people, places, products, firms.
    ("name", re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z&'-]+(?:\s(?:of\s)?[A-Z][a-zA-Z&'-]+){1,3}\b")),
)
_SENT_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")  # not inside "$1,842.6"

QUESTION_SCHEMA = json.dumps({"type": "object", "required": ["question"],
                              "properties": {"question": {"type": "string", "minLength": 8, "maxLength": 160}}},
                             separators=(",", ":"))


def answer_spans(text: str, limit: int) -> list[tuple[str, str, str]]:
    """Up to `limit` (kind, span, sentence) triples from `text`, by rule and in a fixed order
    (figures, then dates, then names; first occurrence first), each span once."""
    sentences = [s.strip() for s in _SENT_BREAK.split(text) if len(s.split()) >= 5]
    out, seen = [], set()
    for kind, pat in SPAN_PATTERNS:
        for s in sentences:
            for m in pat.finditer(s):
                span = m.group(0).strip()
                if span.lower() not in seen and len(span) >= 3:
                    seen.add(span.lower())
                    out.append((kind, span, s))
    # Interleave the kinds so a short limit still gets a figure, a date and a name.
    by_kind = {k: [t for t in out if t[0] == k] for k, _ in SPAN_PATTERNS}
    mixed = [t for group in zip(*[by_kind[k] + [None] * len(out) for k, _ in SPAN_PATTERNS]) for t in group if t]
    return mixed[:limit]


def question_jobs(chunks_by_doc: dict[str, list[dict]], args: SynthArgs, seed: int) -> list[Job]:
    prompt = load_prompt("extract_question")
    out = []
    for doc_id, chunks in chunks_by_doc.items():
        for c in chunks:
            text = passage(c, args)
            for kind, span, sentence in answer_spans(c["text"], args.extract_per_chunk):
                system, user = prompt.render(chunk=text, span=span, sentence=sentence)
                schema = QUESTION_SCHEMA if args.structured_output else None
                for sampling in candidate_samplings(args, 64, seed, schema):
                    out.append(Job(ChatRequest.chat(system, user, sampling), "extract", f"extract/{kind}",
                                   prompt.version, doc_id, [c["chunk_id"]], text, {"span": span}))
    return out


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9.%$]+", " ", s.lower().replace(",", "")).strip()


def question_problem(question: str | None, span: str, context: str) -> str | None:
    """Why a question fails before the round trip (None when it passes)."""
    if question is None:
        return "format"
    if len(question) < 8 or not question.endswith("?"):
        return "not_a_question"  # a small model often restates the answer ("The answer is: 33.1%")
    if _norm(span) not in _norm(context):
        return "span_not_in_chunk"
    if _norm(span) in _norm(question) or (numbers(span) and numbers(span) <= numbers(question)):
        return "answer_in_question"
    return None


def usable_questions(jobs: list[Job], completions: list[Completion | None], removed) -> list[tuple[Job, str]]:
    """(job, question) for each answer that passes `question_problem`; the rest counted in `removed`."""
    out = []
    for job, comp in zip(jobs, completions):
        question = parse_question(comp.text) if comp is not None else None
        why = "dropped_by_backend" if comp is None else question_problem(question, job.extra["span"], job.context)
        if why:
            removed[why] += 1
        else:
            out.append((job, question))
    return out


def answer_jobs(pending: list[tuple[Job, str]], seed: int) -> list[Job]:
    """The round trip: the question asked over the chunk, greedy."""
    prompt = load_prompt("extract_answer")
    out = []
    for job, question in pending:
        system, user = prompt.render(chunk=job.context, question=question)
        out.append(Job(ChatRequest.chat(system, user, Sampling(32, 0.0, 1.0, seed)), "extract", job.generator,
                       job.prompt_version, job.doc_id, job.chunk_ids, job.context, {**job.extra, "question": question}))
    return out


def recovers(answer: str, span: str) -> bool:
    """The round trip's answer states the span: every number in it, or its content words."""
    if numbers(span):
        return numbers(span) <= numbers(answer)
    words = content_words(span) or {w.lower() for w in span.split()}
    return bool(words) and words <= content_words(answer) | {w.lower() for w in answer.split()}


def items(job: Job, completion: Completion, model: str) -> list[SynthItem] | str:
    """A kept pair from a round-trip answer, or why not."""
    if not recovers(completion.text, job.extra["span"]):
        return "round_trip"
    return [SynthItem(id=f"extract-{job.key}", kind="extract", doc_id=job.doc_id, chunk_ids=job.chunk_ids,
                      generator=job.generator, prompt_version=job.prompt_version, model=model,
                      question=job.extra["question"], answer=job.extra["span"])]


def generate(ctx: SynthContext, rep: KindReport):
    qjobs = question_jobs(ctx.by_doc, ctx.args, ctx.seed)
    qcomps = ctx.complete(qjobs, "extract: questions")
    todo = answer_jobs(usable_questions(qjobs, qcomps, rep.removed), ctx.seed)
    pairs = collect(todo, ctx.complete(todo, "extract: round trip"), items, ctx.model, rep)
    return pairs, todo, len(qjobs) + len(todo)


def plan(chunks_by_doc, args, seed: int, tokenizer) -> KindPlan:
    """Questions up front; the round trips (at most one per question) later."""
    todo = question_jobs(chunks_by_doc, args, seed)
    return KindPlan(2 * len(todo), 2 * count_tokens(todo, tokenizer), todo[0].request.sampling.max_tokens if todo else 64,
                    todo, len(todo), 32)


KIND = SynthKind("extract", generate, candidates_compete=False, plan=plan)

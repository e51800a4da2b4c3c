"""`entigraph`: EntiGraph synthetic continued pretraining (Yang et al. 2024).

Phase 1 extracts entities (and a summary) from the document; phase 2 asks the LLM to
analyse how sampled pairs and triples of those entities relate in the document. The
paper prompts with the whole document; kbake gives each analysis the chunks where its
entities occur, so a small model with a short context can do it too, and extracts
entities chunk by chunk, keeping those that really occur in the document text.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter

from kbake.config import SynthArgs
from kbake.llm import Completion, Sampling
from kbake.llm.base import ChatRequest
from kbake.run import SynthItem
from kbake.synth.job import Job, candidate_samplings, passage, passage_items
from kbake.synth.kind import KindPlan, KindReport, SynthContext, SynthKind, collect, count_tokens
from kbake.synth.parse import clean_passage, parse_entities
from kbake.synth.prompts import load_prompt

ENTITIES_SCHEMA = json.dumps({
    "type": "object", "required": ["summary", "entities"],
    "properties": {"summary": {"type": "string", "minLength": 10, "maxLength": 240},
                   "entities": {"type": "array", "minItems": 1, "maxItems": 12,
                                "items": {"type": "string", "minLength": 2, "maxLength": 60}}}}, separators=(",", ":"))
"""Phase 1's answer: a summary and at most 12 short entity names, so it always parses and fits."""


def entity_jobs(chunks_by_doc: dict[str, list[dict]], args: SynthArgs, seed: int) -> list[Job]:
    prompt = load_prompt("entities")
    out = []
    for doc_id, chunks in chunks_by_doc.items():
        for c in chunks:
            system, user = prompt.render(chunk=c["text"])
            # Extraction is greedy: the list should not depend on sampling luck.
            sampling = Sampling(args.entigraph_max_tokens, 0.0, 1.0, seed, args.repetition_penalty,
                                ENTITIES_SCHEMA if args.structured_output else None)
            out.append(Job(ChatRequest.chat(system, user, sampling), "entigraph", "entigraph/entities",
                           prompt.version, doc_id, [c["chunk_id"]], c["text"]))
    return out


def entities_by_doc(jobs: list[Job], completions: list[Completion | None], chunks_by_doc: dict[str, list[dict]],
                    max_entities: int) -> tuple[dict[str, list[str]], list[tuple[Job, str]]]:
    """Entities per document (those occurring in its text, most mentioned first) and the
    (job, summary) pairs of phase 1."""
    counts: dict[str, Counter] = {d: Counter() for d in chunks_by_doc}
    names: dict[str, dict[str, str]] = {d: {} for d in chunks_by_doc}
    summaries = []
    for job, comp in zip(jobs, completions):
        if comp is None:
            continue
        summary, ents = parse_entities(comp.text)
        if summary:
            summaries.append((job, summary))
        for e in ents:
            if e.lower() in job.context.lower():
                counts[job.doc_id][e.lower()] += 1
                names[job.doc_id].setdefault(e.lower(), e)
    out = {}
    for doc_id, chunks in chunks_by_doc.items():
        text = " ".join(c["text"] for c in chunks).lower()
        ranked = sorted(counts[doc_id], key=lambda e: (-counts[doc_id][e], -text.count(e), e))
        out[doc_id] = [names[doc_id][e] for e in ranked[:max_entities]]
    return out, summaries


def relation_jobs(entities: dict[str, list[str]], chunks_by_doc: dict[str, list[dict]], args: SynthArgs,
                  seed: int, title_of: dict[str, str]) -> list[Job]:
    prompt = load_prompt("relation")
    rng = random.Random(seed)
    out = []
    for doc_id, ents in entities.items():
        chunks = chunks_by_doc[doc_id]
        for size, cap in ((2, args.entigraph_pairs), (3, args.entigraph_triples)):
            combos = list(itertools.combinations(ents, size))
            rng.shuffle(combos)
            taken = 0
            for combo in combos:
                if taken >= cap:
                    break
                scored = sorted(((sum(e.lower() in c["text"].lower() for e in combo), n, c) for n, c in enumerate(chunks)),
                                key=lambda t: (-t[0], t[1]))
                if not scored or scored[0][0] < 2:
                    continue  # they never meet in one passage: nothing to ground an analysis in
                best = [c for hits, _, c in scored[:2] if hits > 0]
                context = "\n\n".join(passage(c, args) for c in best)
                system, user = prompt.render(title=title_of.get(doc_id, doc_id), context=context,
                                             entities=", ".join(combo))
                for sampling in candidate_samplings(args, args.entigraph_max_tokens, seed):
                    out.append(Job(ChatRequest.chat(system, user, sampling), "entigraph",
                                   "entigraph/pair" if size == 2 else "entigraph/triple", prompt.version, doc_id,
                                   [c["chunk_id"] for c in best], context, {"entities": list(combo)}))
                taken += 1
    return out


def summary_items(summaries: list[tuple[Job, str]], model: str) -> list[tuple[SynthItem, str]]:
    out = []
    for job, s in summaries:
        text = clean_passage(s, False, min_words=8)
        if text:
            out.append((SynthItem(id=f"entigraph-{job.key}-summary", kind="entigraph", doc_id=job.doc_id,
                                  chunk_ids=job.chunk_ids, generator="entigraph/summary",
                                  prompt_version=job.prompt_version, model=model, text=text), job.context))
    return out


items = passage_items


def generate(ctx: SynthContext, rep: KindReport):
    ejobs = entity_jobs(ctx.by_doc, ctx.args, ctx.seed)
    ecomps = ctx.complete(ejobs, "entigraph: entities")
    ents, summaries = entities_by_doc(ejobs, ecomps, ctx.by_doc, ctx.args.entigraph_max_entities)
    todo = relation_jobs(ents, ctx.by_doc, ctx.args, ctx.seed, ctx.titles)
    pairs = summary_items(summaries, ctx.model) + collect(todo, ctx.complete(todo, "entigraph: relations"), items,
                                                           ctx.model, rep)
    return pairs, todo, len(ejobs) + len(todo)


def plan(chunks_by_doc, args, seed: int, tokenizer) -> KindPlan:
    """Entity calls up front; relation calls (pairs and triples per document) later, at their cap."""
    import math

    todo = entity_jobs(chunks_by_doc, args, seed)
    n_ent = args.entigraph_max_entities
    per_doc = min(args.entigraph_pairs, math.comb(n_ent, 2)) + min(args.entigraph_triples, math.comb(n_ent, 3))
    rel_calls = per_doc * len(chunks_by_doc)
    mean_chunk = sum(c.get("n_tokens", 0) for cs in chunks_by_doc.values() for c in cs) / max(
        1, sum(len(cs) for cs in chunks_by_doc.values()))
    rel_prompt = count_tokens(relation_jobs(
        {d: ["A B", "C D"] for d in list(chunks_by_doc)[:1]},
        {d: [{"chunk_id": "x", "text": "A B C D"}] for d in list(chunks_by_doc)[:1]}, args, seed, {}), tokenizer)
    return KindPlan(len(todo) + rel_calls, count_tokens(todo, tokenizer) + round(rel_calls * (rel_prompt + 2 * mean_chunk)),
                    todo[0].request.sampling.max_tokens if todo else args.entigraph_max_tokens, todo,
                    rel_calls, args.entigraph_max_tokens)


KIND = SynthKind("entigraph", generate, plan=plan)

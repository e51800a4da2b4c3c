"""`qa`: diverse question-answer pairs per chunk, grounded in it.

One request per chunk and question type (factual, numeric, why/how, and comparison
across two chunks of the same document), so one chunk yields varied questions.
"""

from __future__ import annotations

import json
import random

from kbake.config import SynthArgs
from kbake.llm import Completion
from kbake.llm.base import ChatRequest
from kbake.run import SynthItem
from kbake.synth.job import Job, candidate_samplings, passage
from kbake.synth.kind import one_call_per_job
from kbake.synth.parse import parse_qa
from kbake.synth.prompts import load_prompt

INSTRUCTIONS = {
    "factual": "Ask about names, places, products and dates.",
    "numeric": "Ask about the figures: amounts, percentages, counts and dates. Answers are numbers with their units.",
    "why": "Ask why or how something happened or works, as the excerpt explains it.",
}


def qa_schema(n: int) -> str:
    """The JSON schema of a QA answer: 1 to n {question, answer} objects, lengths bounded so
    that n of them fit in `qa_max_tokens` more often than not."""
    pair = {"type": "object", "properties": {"question": {"type": "string", "minLength": 8, "maxLength": 160},
                                             "answer": {"type": "string", "minLength": 1, "maxLength": 80}},
            "required": ["question", "answer"]}
    return json.dumps({"type": "array", "minItems": 1, "maxItems": n, "items": pair}, separators=(",", ":"))


def jobs(chunks_by_doc: dict[str, list[dict]], args: SynthArgs, seed: int) -> list[Job]:
    rng = random.Random(seed)
    structured = args.structured_output
    schema = qa_schema(args.qa_per_request) if structured else None
    out: list[Job] = []
    for doc_id, chunks in chunks_by_doc.items():
        for c in chunks:
            for qtype in args.qa_types:
                other = None  # a compare question pairs the chunk with one other, the same for every candidate
                if qtype == "compare":
                    others = [o for o in chunks if o["chunk_id"] != c["chunk_id"]]
                    if not others:
                        continue
                    other = others[rng.randrange(len(others))]
                for sampling in candidate_samplings(args, args.qa_max_tokens, seed, schema):
                    if other is not None:
                        prompt = load_prompt("qa_compare_json" if structured else "qa_compare")
                        system, user = prompt.render(chunk=passage(c, args), other=passage(other, args),
                                                     n=str(args.qa_per_request))
                        ids, context = [c["chunk_id"], other["chunk_id"]], passage(c, args) + "\n\n" + passage(other, args)
                    else:
                        prompt = load_prompt("qa_json" if structured else "qa")
                        system, user = prompt.render(chunk=passage(c, args), n=str(args.qa_per_request), qtype=qtype,
                                                     instruction=INSTRUCTIONS[qtype])
                        ids, context = [c["chunk_id"]], passage(c, args)
                    out.append(Job(ChatRequest.chat(system, user, sampling), "qa", f"qa/{qtype}", prompt.version,
                                   doc_id, ids, context))
    return out


def items(job: Job, completion: Completion, model: str) -> list[SynthItem] | str:
    pairs = parse_qa(completion.text)
    if not pairs and completion.text.lstrip().startswith("[") and '"answer"' in completion.text \
            and completion.finish_reason != "length":
        return "no_usable_pair"  # well-formed pairs, each empty or repeating its question as its answer
    return [
        SynthItem(id=f"qa-{job.key}-{n}", kind="qa", doc_id=job.doc_id, chunk_ids=job.chunk_ids,
                  generator=job.generator, prompt_version=job.prompt_version, model=model,
                  question=q, answer=a)
        for n, (q, a) in enumerate(pairs)
    ]


KIND = one_call_per_job("qa", jobs, items, "qa_max_tokens")

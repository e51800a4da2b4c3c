"""`rephrase`: each chunk rewritten in several styles (WRAP, Maini et al. 2024; Rephrase
CPT), so the same facts appear in many surface forms."""

from __future__ import annotations

from kbake.config import SynthArgs
from kbake.llm.base import ChatRequest
from kbake.synth.job import Job, candidate_samplings, passage, passage_items
from kbake.synth.kind import one_call_per_job
from kbake.synth.prompts import load_prompt

STYLES = {
    "summary": "Summarise this text in plain language in one paragraph, keeping every figure.",
    "qa": "Rewrite this text as a short interview: questions a reader would ask and the text's answers.",
    "encyclopedia": "Rewrite this text as an encyclopedia entry in a neutral, factual tone.",
    "child": "Explain this text to a twelve-year-old, in simple words, keeping every name and number.",
    "bullets": "List every fact in this text as short bullet points, one fact per line.",
}


def jobs(chunks_by_doc: dict[str, list[dict]], args: SynthArgs, seed: int) -> list[Job]:
    prompt = load_prompt("rephrase")
    out = []
    for doc_id, chunks in chunks_by_doc.items():
        for c in chunks:
            for style in args.rephrase_styles:
                system, user = prompt.render(chunk=passage(c, args), instruction=STYLES[style])
                for sampling in candidate_samplings(args, args.rephrase_max_tokens, seed):
                    out.append(Job(ChatRequest.chat(system, user, sampling), "rephrase", f"rephrase/{style}",
                                   prompt.version, doc_id, [c["chunk_id"]], passage(c, args)))
    return out


items = passage_items


KIND = one_call_per_job("rephrase", jobs, items, "rephrase_max_tokens")

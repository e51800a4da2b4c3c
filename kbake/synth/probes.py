"""`kbake probes`: a held-out multiple-choice probe set generated from the chunks, for
users who bring their own documents (the shipped sample has hand-written probes)."""

from __future__ import annotations

from kbake.config import ProbesArgs
from kbake.llm import Completion, Sampling
from kbake.llm.base import ChatRequest
from kbake.run import Probe
from kbake.synth.filters import is_grounded
from kbake.synth.job import Job
from kbake.synth.parse import parse_probe
from kbake.synth.prompts import load_prompt


def jobs(chunks: list[dict], args: ProbesArgs, seed: int) -> list[Job]:
    prompt = load_prompt("probe")
    out = []
    for c in chunks:
        system, user = prompt.render(chunk=c["text"])
        for k in range(args.per_chunk):
            # A different seed per probe of a chunk, so they are different requests.
            sampling = Sampling(args.max_tokens, args.temperature, args.top_p, seed + k, args.repetition_penalty)
            out.append(Job(ChatRequest.chat(system, user, sampling), "probe", "probe/mc", prompt.version,
                           c["doc_id"], [c["chunk_id"]], c["text"]))
    return out


def probe(job: Job, completion: Completion, n: int, min_share: float) -> tuple[Probe | None, str]:
    """The probe of one answer, or None and the filter that rejected it."""
    parsed = parse_probe(completion.text)
    if parsed is None:
        return None, "format"
    if not is_grounded(parsed["answer"], job.context, min_share):
        return None, "grounding"
    return Probe(id=f"probe-{n:04d}", question=parsed["question"], answer=parsed["answer"],
                 distractors=parsed["distractors"], reference=parsed["answer"], kind="generated",
                 passage_id=job.chunk_ids[0], chunk_id=job.chunk_ids[0]), "ok"

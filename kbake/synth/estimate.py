"""`kbake synth --estimate`: the calls, tokens and time of a synth run, before it starts.

Calls and input tokens are counted from the very jobs the run would make; EntiGraph's
relation calls depend on the entities its first phase finds, so they are counted at their
cap per document (`entigraph_pairs + entigraph_triples`, each with two chunks of context).
Output tokens and time:
- local backend: a probe runs the first batch of real requests (`batch_size` of them) and
  is timed. Its answers go to the run's cache, so the real run reuses them. A batch decodes
  until its longest answer ends, so a kind's batches are scaled from the probe's by their
  `max_tokens`; output tokens by the probe's mean share of `max_tokens`.
- an endpoint: no probe (it would cost money): answers assumed to use half their
  `max_tokens`, each stream at `estimate_tokens_per_s`, `concurrency` streams at once;
  the price comes from `price_per_million_input` / `_output` when set.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from kbake.synth import entigraph, qa, rephrase
from kbake.synth.job import Job

ENDPOINT_OUTPUT_SHARE = 0.5


@dataclass
class KindPlan:
    calls: int
    input_tokens: int
    max_tokens: int
    """Longest answer of this kind's calls."""


@dataclass
class Estimate:
    kinds: dict[str, KindPlan]
    output_share: float
    """Expected answer length as a share of max_tokens."""
    seconds: float
    basis: str
    cost: float | None = None
    probe: dict = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(k.calls for k in self.kinds.values())

    @property
    def input_tokens(self) -> int:
        return sum(k.input_tokens for k in self.kinds.values())

    @property
    def output_tokens(self) -> int:
        return round(sum(k.calls * k.max_tokens for k in self.kinds.values()) * self.output_share)

    def line(self) -> str:
        cost = f", about ${self.cost:,.2f}" if self.cost is not None else ""
        out = "up to" if math.isnan(self.seconds) else "~"
        when = "" if math.isnan(self.seconds) else f", about {_duration(self.seconds)}"
        return (f"estimate: {self.calls:,} calls, {self.input_tokens:,} input + {out} {self.output_tokens:,} output tokens"
                f"{when}{cost} ({self.basis})")


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


def count_tokens(jobs: list[Job], tokenizer) -> int:
    texts = [" ".join(c for _, c in j.request.messages) for j in jobs]
    return sum(len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]) if texts else 0


def plan(chunks_by_doc: dict[str, list[dict]], args, seed: int, tokenizer) -> tuple[dict[str, KindPlan], list[Job]]:
    """Calls and input tokens per kind, and the jobs of the first kind (for the probe)."""
    out, first = {}, []
    for kind in args.kinds:
        if kind == "entigraph":
            jobs = entigraph.entity_jobs(chunks_by_doc, args, seed)
            n_ent = args.entigraph_max_entities
            per_doc = min(args.entigraph_pairs, math.comb(n_ent, 2)) + min(args.entigraph_triples, math.comb(n_ent, 3))
            rel_calls = per_doc * len(chunks_by_doc)
            mean_chunk = sum(c.get("n_tokens", 0) for cs in chunks_by_doc.values() for c in cs) / max(
                1, sum(len(cs) for cs in chunks_by_doc.values()))
            rel_prompt = count_tokens(entigraph.relation_jobs(
                {d: ["A B", "C D"] for d in list(chunks_by_doc)[:1]},
                {d: [{"chunk_id": "x", "text": "A B C D"}] for d in list(chunks_by_doc)[:1]}, args, seed, {}), tokenizer)
            plan_ = KindPlan(len(jobs) + rel_calls, count_tokens(jobs, tokenizer) + round(rel_calls * (rel_prompt + 2 * mean_chunk)),
                             args.entigraph_max_tokens)
        else:
            module = qa if kind == "qa" else rephrase
            jobs = module.jobs(chunks_by_doc, args, seed)
            plan_ = KindPlan(len(jobs), count_tokens(jobs, tokenizer), args.qa_max_tokens if kind == "qa" else args.rephrase_max_tokens)
        out[kind] = plan_
        first = first or jobs
    return out, first


def estimate(run, args, seed: int = 0, *, llm=None, probe: bool = True) -> Estimate:
    """The estimate for `kbake synth` with `args` on `run`'s chunks."""
    from kbake.models import load_tokenizer
    from kbake.run import read_chunks
    from kbake.synth import group_by_doc, llm_for

    by_doc = group_by_doc(read_chunks(run.chunks))
    kinds, first = plan(by_doc, args, seed, load_tokenizer("default"))
    local = args.llm == "local" or args.llm.startswith("local:")
    if not local:
        per_call = [(k.max_tokens * ENDPOINT_OUTPUT_SHARE) / args.estimate_tokens_per_s for k in kinds.values()
                    for _ in range(k.calls)]
        seconds = sum(per_call) / args.concurrency
        est = Estimate(kinds, ENDPOINT_OUTPUT_SHARE, seconds,
                       f"endpoint: {args.concurrency} streams at {args.estimate_tokens_per_s:g} tokens/s, answers half of max_tokens")
        if args.price_per_million_input is not None or args.price_per_million_output is not None:
            est.cost = (est.input_tokens * (args.price_per_million_input or 0)
                        + est.output_tokens * (args.price_per_million_output or 0)) / 1e6
        return est
    if not probe or not first:
        return Estimate(kinds, 1.0, float("nan"), "time: `kbake synth --estimate` measures it with a probe")
    llm = llm or llm_for(run, args)
    sample = first[: args.batch_size]
    t0 = time.perf_counter()
    comps = llm.complete([j.request for j in sample])
    secs = time.perf_counter() - t0
    done = [c for c in comps if c is not None]
    probe_max = sample[0].request.sampling.max_tokens
    share = sum(c.completion_tokens for c in done) / max(1, len(done) * probe_max)
    cached = sum(c.cached for c in done)
    seconds = sum(math.ceil(k.calls / args.batch_size) * secs * k.max_tokens / probe_max for k in kinds.values())
    basis = (f"local: a probe of {len(sample)} real requests took {secs:.1f} s"
             + (f", {cached} of them already cached: time underestimated" if cached else "")
             + f"; answers used {100 * share:.0f}% of max_tokens; batches of {args.batch_size}")
    return Estimate(kinds, share, seconds, basis, probe={"requests": len(sample), "seconds": secs, "cached": cached})

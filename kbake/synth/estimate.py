"""`kbake synth --estimate`: the calls, tokens and time of a synth run, before it starts.

Calls and input tokens are counted from the very jobs the run would make; EntiGraph's
relation calls depend on the entities its first phase finds, so they are counted at their
cap per document (`entigraph_pairs + entigraph_triples`, each with two chunks of context).
Output tokens and time:
- local backend: a probe runs the first batch (`batch_size` requests) of each kind whose
  jobs are known up front (QA, rephrasings, EntiGraph's entity lists) and times it. Its
  answers go to the run's cache, so the real run reuses them. Each of a kind's batches is
  taken to cost what its probe batch cost. EntiGraph's relation batches are priced from the
  probes' decode-step time (seconds per generated token of the longest answer in a batch)
  at their full `entigraph_max_tokens`, since their passages tend to run to the cap.
- an endpoint: no probe (it would cost money): answers assumed to use half their
  `max_tokens`, each stream at `estimate_tokens_per_s`, `concurrency` streams at once;
  the price comes from `price_per_million_input` / `_output` when set.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from kbake.synth.kind import KindPlan

ENDPOINT_OUTPUT_SHARE = 0.5


@dataclass
class Estimate:
    kinds: dict[str, KindPlan]
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
        return round(sum((k.calls - k.later_calls) * k.max_tokens * k.output_share
                         + k.later_calls * k.later_max_tokens for k in self.kinds.values()))  # later: at the cap

    @property
    def output_share(self) -> float:
        cap = sum((k.calls - k.later_calls) * k.max_tokens + k.later_calls * k.later_max_tokens for k in self.kinds.values())
        return self.output_tokens / cap if cap else 0.0

    def line(self) -> str:
        cost = f", about ${self.cost:,.2f}" if self.cost is not None else ""
        out = "up to" if math.isnan(self.seconds) else "~"
        when = "" if math.isnan(self.seconds) else f", about {_duration(self.seconds)}"
        return (f"estimate: {self.calls:,} calls, {self.input_tokens:,} input + {out} {self.output_tokens:,} output tokens"
                f"{when}{cost} ({self.basis})")


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


def plan(chunks_by_doc: dict[str, list[dict]], args, seed: int, tokenizer) -> dict[str, KindPlan]:
    """Calls and input tokens per kind (each kind's own `plan`), with the jobs known before the run starts."""
    from kbake.synth import KINDS

    return {kind: KINDS[kind].plan(chunks_by_doc, args, seed, tokenizer) for kind in args.kinds}


def estimate(run, args, seed: int = 0, *, llm=None, probe: bool = True) -> Estimate:
    """The estimate for `kbake synth` with `args` on `run`'s chunks."""
    from kbake.models import load_tokenizer
    from kbake.run import read_chunks
    from kbake.synth import group_by_doc, llm_for, select_chunks

    by_doc = group_by_doc(select_chunks(read_chunks(run.chunks), args.max_chunks))
    kinds = plan(by_doc, args, seed, load_tokenizer("default"))
    local = args.llm == "local" or args.llm.startswith("local:")
    if not local:
        for k in kinds.values():
            k.output_share = ENDPOINT_OUTPUT_SHARE
            k.seconds = (k.calls - k.later_calls) * k.max_tokens * k.output_share / args.estimate_tokens_per_s / args.concurrency
            k.seconds += k.later_calls * k.later_max_tokens * k.output_share / args.estimate_tokens_per_s / args.concurrency
        est = Estimate(kinds, sum(k.seconds for k in kinds.values()),
                       f"endpoint: {args.concurrency} streams at {args.estimate_tokens_per_s:g} tokens/s, answers half of max_tokens")
        if args.price_per_million_input is not None or args.price_per_million_output is not None:
            est.cost = (est.input_tokens * (args.price_per_million_input or 0)
                        + est.output_tokens * (args.price_per_million_output or 0)) / 1e6
        return est
    if not probe or not any(k.jobs for k in kinds.values()):
        return Estimate(kinds, float("nan"), "time: `kbake synth --estimate` measures it with a probe")
    llm = llm or llm_for(run, args)
    probed, probe_secs, cached, step_times = 0, 0.0, 0, []
    for k in kinds.values():
        if not k.jobs:
            continue
        # Calls already in the run's cache are free (an incremental re-bake repeats last
        # year's); the probe and the time count only the others.
        keys = [j.request.cache_key(llm.model_id) for j in k.jobs]
        hits = set(llm.cache.get_many(list(dict.fromkeys(keys)))) if hasattr(llm, "cache") else set()
        todo = [j for j, key in zip(k.jobs, keys) if key not in hits]
        k.cached_calls = len(k.jobs) - len(todo)
        sample = todo[: args.batch_size]
        if not sample:
            k.seconds = 0.0
            continue
        t0 = time.perf_counter()
        comps = llm.complete([j.request for j in sample])
        secs = time.perf_counter() - t0
        done = [c for c in comps if c is not None]
        k.output_share = sum(c.completion_tokens for c in done) / max(1, len(done) * k.max_tokens)
        k.seconds = math.ceil(len(todo) / args.batch_size) * secs
        steps = max((c.completion_tokens for c in done), default=0)
        if steps and not any(c.cached for c in done):
            step_times.append(secs / steps)
        probed, probe_secs, cached = probed + len(sample), probe_secs + secs, cached + sum(c.cached for c in done)
    step = max(step_times) if step_times else float("nan")
    for k in kinds.values():
        if k.later_calls:
            k.seconds += math.ceil(k.later_calls / args.batch_size) * step * k.later_max_tokens
    n_cached = sum(k.cached_calls for k in kinds.values())
    basis = (f"local: a probe of {probed} real requests (one batch per kind) took {probe_secs:.1f} s"
             + (f", {cached} of them already cached: time underestimated" if cached else "")
             + (f"; {n_cached:,} calls already cached (free)" if n_cached else "")
             + f"; decode step {step:.2f} s; batches of {args.batch_size}")
    return Estimate(kinds, sum(k.seconds for k in kinds.values()), basis,
                    probe={"requests": probed, "seconds": probe_secs, "cached": cached, "step_s": step})

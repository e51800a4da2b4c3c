"""The interface of a synth kind: each generator module declares one `SynthKind` (its name, what
it reads, whether templates wrote it) and one entry function; `kbake.synth.KINDS` registers
them, and `synth()` runs any of them without asking which one it is."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from kbake.run import RunDir, SynthItem
from kbake.synth.job import Job


@dataclass
class KindReport:
    jobs: int = 0
    items: int = 0
    removed: dict[str, int] = field(default_factory=lambda: Counter())


@dataclass
class SynthContext:
    """What a generator may use: the run, its options and seed, the chunks by document, the LLM
    (`complete` runs jobs with a progress bar), the items of kinds already written this run
    (`done`), and the fact table (`facts()`, built and written on first use)."""

    run: RunDir
    args: object
    seed: int
    by_doc: dict[str, list[dict]]
    titles: dict[str, str]
    llm: object
    progress: bool
    done: dict[str, list[SynthItem]] = field(default_factory=dict)
    fact_table: list | None = None

    @property
    def model(self) -> str:
        return self.llm.model_id

    def complete(self, jobs: list[Job], desc: str):
        return complete_jobs(self.llm, jobs, desc, self.progress)

    def facts(self) -> list:
        if self.fact_table is None:
            from kbake.synth import facts as fact_table
            from kbake.synth import prose

            chunks = [c for cs in self.by_doc.values() for c in cs]
            self.fact_table = fact_table.build_facts(chunks, self.args.fact_heldout_share, self.seed,
                                                     self.args.fact_heldout_unit)
            if self.args.fact_prose:
                self.fact_table += prose.prose_facts(chunks, self.args.fact_heldout_share, self.seed,
                                                     start=len(self.fact_table))
            fact_table.write_facts(self.run, self.fact_table)
        return self.fact_table


@dataclass
class KindPlan:
    calls: int
    input_tokens: int
    max_tokens: int
    """Longest answer of this kind's calls."""
    jobs: list[Job] = field(default_factory=list, repr=False)
    """The calls known before the run starts (all of them but EntiGraph's relation calls)."""
    later_calls: int = 0
    """Calls that depend on earlier answers (EntiGraph relations), counted at their cap."""
    later_max_tokens: int = 0
    cached_calls: int = 0
    """Calls whose answers are already in the run's cache (free; counted by the local probe)."""
    output_share: float = 1.0
    """Expected answer length as a share of max_tokens (measured by the probe when local)."""
    seconds: float = float("nan")


def count_tokens(jobs: list[Job], tokenizer) -> int:
    texts = [" ".join(c for _, c in j.request.messages) for j in jobs]
    return sum(len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]) if texts else 0


def no_calls(chunks_by_doc, args, seed: int, tokenizer) -> KindPlan:
    """The plan of a kind that makes no model call (a diff, templates over the fact table)."""
    return KindPlan(0, 0, 0)


@dataclass(frozen=True)
class SynthKind:
    name: str
    generate: Callable[[SynthContext, KindReport], tuple[list, list[Job], int]]
    """(the items with the source text each must be grounded in, the jobs whose candidates
    compete, the model calls made)."""
    after: tuple[str, ...] = ()
    """Kinds whose items this one reads: it runs after them whatever the order given."""
    templated: bool = False
    """Written by templates from the fact table, correct by construction: only the leak filter
    applies, against probes that are not fact probes (fact probes ask in untrained wordings)."""
    reads_facts: bool = False
    """Written from the fact table (by templates or by the LLM): its tokens count toward the fact
    layer's expansion ratio (`kbake synth --stats`)."""
    candidates_compete: bool = True
    """With synth.candidates > 1, keep the candidate passage that keeps most of its source's facts."""
    plan: Callable[..., KindPlan] = no_calls
    """`kbake synth --estimate`: (chunks_by_doc, args, seed, tokenizer) -> the calls and tokens it will need."""


def one_call_per_job(name: str, make_jobs, to_items, max_tokens: str, **kw) -> SynthKind:
    """The kind of a generator that makes one call per job known up front (qa, rephrase):
    `make_jobs(chunks_by_doc, args, seed)`, `to_items(job, completion, model)`, and the name of
    the args field capping its answers."""

    def generate(ctx: SynthContext, rep: KindReport):
        todo = make_jobs(ctx.by_doc, ctx.args, ctx.seed)
        return collect(todo, ctx.complete(todo, name), to_items, ctx.model, rep), todo, len(todo)

    def plan(chunks_by_doc, args, seed: int, tokenizer) -> KindPlan:
        todo = make_jobs(chunks_by_doc, args, seed)
        return KindPlan(len(todo), count_tokens(todo, tokenizer), getattr(args, max_tokens), todo)

    return SynthKind(name, generate, plan=plan, **kw)


def complete_jobs(llm, jobs: list[Job], desc: str, progress: bool):
    """Run every job's request, with a progress bar showing items done, tokens and rate."""
    from tqdm import tqdm

    bar = tqdm(total=len(jobs), desc=desc, unit="call", disable=not progress or not jobs, dynamic_ncols=True)
    t0, tokens = time.perf_counter(), [0]

    def done(i, c):
        if c is not None and not c.cached:
            tokens[0] += c.completion_tokens
        bar.update(1)
        rate = tokens[0] / max(time.perf_counter() - t0, 1e-6)
        bar.set_postfix(new_tokens=tokens[0], tok_s=f"{rate:.0f}", cached=llm.stats.cache_hits, refresh=False)

    try:
        return llm.complete([j.request for j in jobs], on_done=done)
    finally:
        bar.close()


def collect(jobs: list[Job], completions, to_items, model: str, rep: KindReport) -> list[tuple[SynthItem, str]]:
    """The items of each completion with the job's context; a completion that yields none is
    counted in `rep.removed` under the reason its generator gave (or truncated/format)."""
    out = []
    for job, comp in zip(jobs, completions):
        if comp is None:
            rep.removed["dropped_by_backend"] += 1
            continue
        got = to_items(job, comp, model)
        if isinstance(got, str) or not got:  # a generator may say why it kept nothing
            # Nothing parseable: an answer cut at max_tokens ('truncated'; under a JSON schema the
            # only way left to fail) or one that drifted from the format.
            rep.removed[got or ("truncated" if comp.finish_reason == "length" else "format")] += 1
            continue
        out.extend((it, job.context) for it in got)
    return out

"""`kbake synth` and `kbake probes`: turn chunks into a large, diverse synthetic corpus.

Training on a small document's raw text mostly teaches a model to repeat its sentences
(Yang et al. 2024, "Synthetic continued pretraining"); rewriting the same facts many
ways — questions, rephrasings, entity relations — is what makes them learnable.
Every call goes through the run's LLM cache, so a re-run is free and a killed run resumes.
"""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from kbake.config import ProbesArgs, SynthArgs
from kbake.llm import CachedLLM, make_llm
from kbake.run import (
    RunDir,
    SynthItem,
    atomic_write_jsonl,
    load_manifest,
    provenance,
    read_chunks,
    read_items,
    read_probes,
    save_stage,
    write_items,
)
from kbake.synth import augment, changes, entigraph, extract, fact_paraphrase, focal, qa, rephrase
from kbake.synth import facts as fact_table
from kbake.synth import probes as probe_gen
from kbake.synth.filters import dedup_filter, grounding_filter, leak_filter, numbers
from kbake.synth.job import Job
from kbake.synth.kind import KindReport, SynthContext, SynthKind, complete_jobs

KINDS: dict[str, SynthKind] = {k.name: k for k in (
    qa.KIND, extract.KIND, rephrase.KIND, focal.KIND, entigraph.KIND, changes.KIND, augment.RESTATE, augment.FACT_QA,
    fact_paraphrase.KIND)}
"""The synth kinds by name: each generator module declares its own (kbake/synth/kind.py)."""
FACT_KINDS = tuple(k for k, spec in KINDS.items() if spec.templated)
"""Written from the fact table by templates: correct by construction, so only the leak filter applies."""
FACT_LAYER = tuple(k for k, spec in KINDS.items() if spec.reads_facts)
"""Written from the fact table, by templates or checked LLM rewrites: the fact layer's tokens."""


@dataclass
class SynthReport:
    kinds: dict[str, KindReport] = field(default_factory=dict)
    calls: int = 0
    cache_hits: int = 0
    tokens: int = 0
    seconds: float = 0.0


def llm_for(run: RunDir, args) -> CachedLLM:
    """The run's LLM behind the run's cache (`RUN/cache/llm.sqlite`, owner-only)."""
    return make_llm(args.llm, cache_path=run.root / "cache" / "llm.sqlite", base_url=args.base_url,
                    api_key_env=args.api_key_env, concurrency=args.concurrency, max_retries=args.max_retries,
                    timeout=args.timeout, token_budget=args.token_budget, batch_size=args.batch_size,
                    precision=args.precision, share_prefix=args.share_prefix)


def group_by_doc(chunks: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for c in sorted(chunks, key=lambda c: (c["doc_id"], c["start"])):
        out[c["doc_id"]].append(c)
    return dict(out)


def select_chunks(chunks: list[dict], max_chunks: int | None) -> list[dict]:
    """All chunks, or `max_chunks` of them spread evenly (every k-th in document order)."""
    if not max_chunks or len(chunks) <= max_chunks:
        return chunks
    ordered = [c for cs in group_by_doc(chunks).values() for c in cs]
    return [ordered[i * len(ordered) // max_chunks] for i in range(max_chunks)]


def best_candidates(items: list[SynthItem], contexts: dict[str, str], family: dict[str, str]) -> tuple[list[SynthItem], int]:
    """Of the passages answering one request under different seeds (`family`: item id -> the
    request less its seed), the one keeping most of its source's figures and capitalised
    names, longer first on ties; QA items all stay. Returns the kept items and the count dropped."""
    best: dict[str, tuple[tuple, SynthItem]] = {}
    for it in items:
        if it.question is not None or it.id not in family:
            continue
        facts = facts_of(contexts[it.id])
        score = (len(facts & facts_of(it.text)) / len(facts) if facts else 0.0, len(it.text))
        key = family[it.id]
        if key not in best or score > best[key][0]:
            best[key] = (score, it)
    chosen = {id(it) for _, it in best.values()}
    out = [it for it in items if it.question is not None or it.id not in family or id(it) in chosen]
    return out, len(items) - len(out)


def facts_of(text: str) -> set[str]:
    """The figures and capitalised words of a text: what a faithful rewrite must keep."""
    return numbers(text) | {w for w in re.findall(r"\b[A-Z][a-zA-Z]{2,}\b", text)}


def _family(job: Job) -> str:
    """A request's identity less its seed: the candidates of one item share it."""
    return replace(job.request, sampling=replace(job.request.sampling, seed=0)).cache_key("")


def synth(run: RunDir, args: SynthArgs, *, seed: int = 0, progress: bool = True, llm: CachedLLM | None = None,
          embedder=None) -> SynthReport:
    """Generate every kind in `args.kinds` into `RUN/synth/<kind>.jsonl` (+ .parquet)."""
    by_doc = group_by_doc(select_chunks(read_chunks(run.chunks), args.max_chunks))
    llm = llm or llm_for(run, args)
    probes = read_probes(run.probes) if run.probes.exists() else []
    if probes and embedder is None:
        from kbake.models import load_embedder

        embedder = load_embedder(args.embedder)
    titles = {d: Path(cs[0]["source"]).stem for d, cs in by_doc.items()}
    unknown = [k for k in args.kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"synth.kinds: unknown kind {unknown[0]!r}; allowed: {', '.join(KINDS)}")
    report = SynthReport()
    t0 = time.perf_counter()
    ctx = SynthContext(run, args, seed, by_doc, titles, llm, progress)
    for kind in sorted(args.kinds, key=lambda k: bool(KINDS[k].after)):
        spec = KINDS[kind]
        rep = report.kinds.setdefault(kind, KindReport())
        pairs, jobs, rep.jobs = spec.generate(ctx, rep)
        items = [it for it, _ in pairs]
        if spec.templated:
            # Fact probes ask in wordings no template trains; hand-written and generated probes must not leak
            # into a trained question. Statements are not filtered: they restate the document's own sentences
            # and rows, as the raw text does, and a verbatim probe copies those, so filtering them would take
            # exposures away from exactly the facts the probes ask about (113 of 636 on the sample).
            guarded = [p for p in probes if not p.kind.startswith("fact_")]
            asks = [it for it in items if it.question is not None]
            kept, rep.removed["leak"] = leak_filter(asks, guarded, embedder, args.leak_threshold) if guarded else (asks, 0)
            kept_ids = {it.id for it in kept}
            items = [it for it in items if it.question is None or it.id in kept_ids]
        else:
            contexts = {it.id: ctx_text for it, ctx_text in pairs}
            items, rep.removed["grounding"] = grounding_filter(items, contexts, args.grounding_min)
            if args.candidates > 1 and spec.candidates_compete:
                family = {f"{job.kind}-{job.key}": _family(job) for job in jobs}
                items, rep.removed["other_candidate"] = best_candidates(items, contexts, family)
            items, rep.removed["duplicate"] = dedup_filter(items, args.near_dup_threshold)
            items, rep.removed["leak"] = leak_filter(items, probes, embedder, args.leak_threshold) if probes else (items, 0)
        rep.items = len(items)
        ctx.done[kind] = items
        write_items(run.synth_dir / f"{kind}.jsonl", items)
    report.calls, report.cache_hits, report.tokens = llm.stats.calls, llm.stats.cache_hits, llm.stats.tokens
    report.seconds = time.perf_counter() - t0
    entry = provenance(args.model_dump(mode="json"), seed=seed, model=llm.model_id)
    prior = load_manifest(run).get("stages", {}).get("synth", {}).get("kinds", {})
    entry["kinds"] = {**prior, **{k: {"jobs": r.jobs, "items": r.items, "removed": dict(r.removed)} for k, r in report.kinds.items()}}
    entry["llm"] = {"calls": report.calls, "cache_hits": report.cache_hits, "tokens": report.tokens,
                    "dropped": llm.stats.dropped}
    if ctx.fact_table is not None:
        entry["facts"] = fact_table.fact_stats(ctx.fact_table)
    save_stage(run, "synth", entry)
    return report


def make_probes(run: RunDir, args: ProbesArgs, *, seed: int = 0, progress: bool = True,
                llm: CachedLLM | None = None) -> dict[str, int]:
    """Generate `RUN/probes.jsonl` from the chunks; returns counts kept and removed per filter."""
    from kbake.ingest.dedup import dedup_texts

    chunks = read_chunks(run.chunks)
    llm = llm or llm_for(run, args)
    jobs = probe_gen.jobs(chunks, args, seed)
    comps = complete_jobs(llm, jobs, "probes", progress)
    kept, counts = [], Counter()
    for job, comp in zip(jobs, comps):
        if comp is None:
            counts["dropped_by_backend"] += 1
            continue
        p, why = probe_gen.probe(job, comp, len(kept) + 1, args.grounding_min)
        if p is None:
            counts[why] += 1
        else:
            kept.append(p)
    keep, removed = dedup_texts([p.question for p in kept], threshold=0.8)
    counts["duplicate"] = removed["exact"] + removed["near"]
    kept = [kept[i] for i in keep]
    for n, p in enumerate(kept, 1):
        p.id = f"probe-{n:04d}"
    assign_splits(kept, args.dev_share, seed)
    atomic_write_jsonl(run.probes, [asdict(p) for p in kept])
    entry = provenance(args.model_dump(mode="json"), seed=seed, model=llm.model_id)
    entry.update(n_probes=len(kept), n_dev=sum(p.split == "dev" for p in kept), removed=dict(counts))
    save_stage(run, "probes", entry)
    counts["kept"] = len(kept)
    return dict(counts)


def make_fact_probes(run: RunDir, args: ProbesArgs, synth_args: SynthArgs, *, seed: int = 0) -> dict[str, int]:
    """Add multiple-choice probes written from the fact table to RUN/probes.jsonl (replacing
    earlier fact probes, keeping hand-written and generated ones); returns counts per kind and split."""
    facts = fact_table.read_facts(run)
    new = augment.fact_probes(facts, args.fact_templates, synth_args.fact_question_templates, args.dev_share, seed)
    trained = set()
    for kind in FACT_KINDS:
        path = run.synth_dir / f"{kind}.jsonl"
        if path.exists():
            trained |= {it.question or it.text for it in read_items(path)}
    leaked = [p.id for p in new if p.question in trained]
    if leaked:
        raise ValueError(f"{run.synth_dir}: probe {leaked[0]} asks in a wording that is trained; change probes.fact_templates")
    kept = [p for p in (read_probes(run.probes) if run.probes.exists() else []) if not p.kind.startswith("fact_")]
    atomic_write_jsonl(run.probes, [asdict(p) for p in kept + new])
    counts = Counter(f"{p.kind}/{p.split}" for p in new)
    entry = provenance(args.model_dump(mode="json"), seed=seed, model="templates")
    entry.update(n_probes=len(kept) + len(new), n_fact_probes=len(new), fact_probes=dict(counts),
                 facts_without_distractors=len(facts) - len(new))
    save_stage(run, "probes", entry)
    return dict(counts)


def assign_splits(probes: list, dev_share: float, seed: int) -> None:
    """Mark about `dev_share` of the probes `split: dev`, the rest `test`, whole source chunks
    at a time (a seeded shuffle of the chunks), so tuning on dev never sees a test passage."""
    import random

    groups: dict[str, list] = {}
    for p in probes:
        groups.setdefault(p.chunk_id or p.passage_id or p.id, []).append(p)
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    want, n_dev = round(dev_share * len(probes)), 0
    for k in keys:
        split = "dev" if n_dev + len(groups[k]) <= want else "test"
        n_dev += len(groups[k]) if split == "dev" else 0
        for p in groups[k]:
            p.split = split


def corpus_stats(run: RunDir, tokenizer, embedder=None) -> dict:
    """Items and tokens per kind and per document, the expansion ratio (synthetic tokens ÷
    source tokens, the source counted once despite chunk overlap), distinct-n per kind, and
    with an `embedder` each kind's embedding spread. With synth's `max_chunks`, the source is
    the chunks it wrote about, not the whole run."""
    max_chunks = load_manifest(run).get("stages", {}).get("synth", {}).get("config", {}).get("max_chunks")
    chunks = select_chunks(read_chunks(run.chunks), max_chunks)
    ntok = lambda s: len(tokenizer(s, add_special_tokens=False)["input_ids"])  # noqa: E731
    source_by_doc: dict[str, int] = {}
    for doc_id, cs in group_by_doc(chunks).items():
        end, parts = 0, []
        for c in cs:
            if c["end"] > end:
                parts.append(c["text"][max(0, end - c["start"]):])
                end = c["end"]
        source_by_doc[doc_id] = ntok("".join(parts))
    kinds, per_doc = {}, Counter()
    for kind in KINDS:
        path = run.synth_dir / f"{kind}.jsonl"
        if not path.exists():
            continue
        items = read_items(path)
        texts = [it.training_text() for it in items]
        toks = 0
        for it, text in zip(items, texts):
            n = ntok(text)
            toks += n
            per_doc[it.doc_id] += n
        kinds[kind] = {"items": len(items), "tokens": toks, **distinct_ngrams(texts)}
        if embedder is not None:
            kinds[kind]["spread"] = embedding_spread(texts, embedder)
    source = sum(source_by_doc.values())
    synthetic = sum(k["tokens"] for k in kinds.values())
    facts = {}
    if run.facts.exists():
        table = fact_table.read_facts(run)
        fact_chunks = {f.chunk_id for f in table}
        fact_source = sum(ntok(c["text"]) for c in chunks if c["chunk_id"] in fact_chunks)
        fact_tokens = sum(kinds.get(k, {}).get("tokens", 0) for k in FACT_LAYER)
        facts = {"facts": {**fact_table.fact_stats(table), "source_tokens": fact_source, "synthetic_tokens": fact_tokens,
                           "expansion_ratio": fact_tokens / fact_source if fact_source else 0.0}}
    return {**facts, "kinds": kinds, "source_tokens": source, "synthetic_tokens": synthetic,
            "expansion_ratio": synthetic / source if source else 0.0,
            "per_doc": {d: {"source_tokens": s, "synthetic_tokens": per_doc.get(d, 0)} for d, s in source_by_doc.items()}}


def embedding_spread(texts: list[str], embedder) -> float:
    """1 − the mean cosine similarity of every pair of items' sentence embeddings: 0 when all say
    the same thing, higher the more the corpus ranges over (a semantic complement to distinct-n)."""
    if len(texts) < 2:
        return 0.0
    v = embedder.encode(texts, normalize_embeddings=True, convert_to_numpy=True, batch_size=64)
    sims = v @ v.T
    n = len(texts)
    return round(float(1.0 - (sims.sum() - n) / (n * (n - 1))), 4)


def distinct_ngrams(texts: list[str], ns: tuple[int, ...] = (1, 2, 3)) -> dict[str, float]:
    """Distinct-n (Li et al. 2016): distinct word n-grams ÷ all word n-grams over a corpus, a
    cheap diversity measure (1.0: no n-gram repeats; a corpus of near-copies sinks toward 0)."""
    out = {}
    for n in ns:
        seen, total = set(), 0
        for t in texts:
            words = t.lower().split()
            grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
            seen.update(grams)
            total += len(grams)
        out[f"distinct_{n}"] = round(len(seen) / total, 4) if total else 0.0
    return out

"""The RAG baseline: retrieve the top-k chunks for a question and put them in the prompt of
the same model. Retrieval is dense (sentence embeddings, cosine), lexical (BM25 through
bm25s: fast, sparse, maintained; exact figures and names that embeddings blur) or hybrid
(both rankings fused by reciprocal rank, Cormack et al. 2009). The dense index is kept in
RUN/eval/index/ and rebuilt only when the chunks or the embedder change; BM25 is rebuilt
each time (milliseconds). The units retrieved are the run's chunks, or (`eval.rag_units: facts`)
one sentence per row of its fact table: a small model that cannot read a table row it is given
may read a sentence that binds one value to one period."""

from __future__ import annotations

import json

import numpy as np

from kbake.ingest.headers import with_headers
from kbake.ingest.index import RETRIEVERS, RRF_K, ChunkIndex, fuse
from kbake.run import RunDir, atomic_write_json, make_private_dir, read_chunks, sha256_file

RAG_TEMPLATE = "Use the context to answer the question.\n\nContext:\n{context}\n\nQuestion: {question}"


def load_index(run: RunDir, embedder_name: str, embedder=None, headers: bool = False) -> tuple[ChunkIndex, bool]:
    """The run's chunk index and whether it was (re)built now. With `headers`, each chunk is
    indexed (and passed to RAG) with its document and section in front (kbake/ingest/headers.py)."""
    from kbake.models import load_embedder

    embedder = embedder or load_embedder(embedder_name)
    chunks = read_chunks(run.chunks)
    texts = with_headers(chunks) if headers else [c["text"] for c in chunks]
    folder = run.eval_dir / "index"
    want = {"chunks_sha256": sha256_file(run.chunks), "embedder": embedder_name}
    if headers:
        want["headers"] = True
    vectors, rebuilt = _cached_vectors(folder, want, texts, embedder, batch_size=32)
    return ChunkIndex([c["chunk_id"] for c in chunks], texts, vectors, embedder), rebuilt


def _cached_vectors(folder, want: dict, texts: list[str], embedder, batch_size: int) -> tuple[np.ndarray, bool]:
    """The unit-normalised embeddings of `texts`, read from `folder` when its meta.json equals
    `want` (what they were computed from), else computed and written there; and whether computed now."""
    meta_path, vec_path = folder / "meta.json", folder / "embeddings.npy"
    if meta_path.exists() and vec_path.exists() and json.loads(meta_path.read_text()) == want:
        return np.load(vec_path), False
    vectors = embedder.encode(texts, normalize_embeddings=True, convert_to_numpy=True,
                              batch_size=batch_size).astype(np.float32)
    make_private_dir(folder)
    tmp = folder / ".embeddings.tmp.npy"
    np.save(tmp, vectors)
    tmp.replace(vec_path)
    atomic_write_json(meta_path, want)
    return vectors, True


def fact_statement(f) -> str:
    """One fact as a retrieval unit: entity, line item, period (as printed and as asked) and value,
    so a reader needs no table to bind them: "Costco Wholesale Corporation, Net sales, fiscal 2022
    (52 Weeks Ended August 28, 2022): $222,730 million." """
    from kbake.synth.augment import entity_names
    from kbake.synth.facts import phrase

    period = f"fiscal {f.period}" if f.period else ""
    if f.period_text and f.period_text != f.period:
        period = f"{period} ({f.period_text})" if period else f.period_text
    name = f.attribute if f.source == "prose" else phrase(f)
    return ", ".join(p for p in (entity_names(f)[0], name, period) if p) + f": {f.value}."


def load_fact_index(run: RunDir, embedder_name: str, embedder=None) -> tuple[ChunkIndex, list[str], bool]:
    """An index whose units are the fact table's rows (`fact_statement`), cached in
    RUN/eval/index-facts/; each unit's evidence (its table row or sentence as printed, what a
    probe's evidence is matched against); and whether the index was (re)built now."""
    from kbake.models import load_embedder
    from kbake.synth.facts import read_facts

    facts = read_facts(run)
    if not facts:
        raise ValueError(f"{run.facts}: the fact table is empty; eval.rag_units=facts needs facts")
    embedder = embedder or load_embedder(embedder_name)
    texts = [fact_statement(f) for f in facts]
    want = {"facts_sha256": sha256_file(run.facts), "embedder": embedder_name}
    vectors, rebuilt = _cached_vectors(run.eval_dir / "index-facts", want, texts, embedder, batch_size=64)
    return ChunkIndex([f.chunk_id for f in facts], texts, vectors, embedder), [f.evidence for f in facts], rebuilt


def _norm(s: str) -> str:
    return " ".join(s.split()).lower()


def is_fact_hit(probe, chunk_id: str, evidence: str, statement: str) -> bool:
    """A retrieved fact is the probe's: its evidence (a table row or sentence as printed) holds the
    probe's evidence quote or lies within it (without a quote: the same chunk), and its statement
    holds the probe's answer, so another period of the same row is not a hit. A hand-written answer
    worded unlike the table ("$222.7 billion") counts as a miss: recall is then a lower bound."""
    if probe.evidence and evidence.strip():
        a, b = _norm(probe.evidence), _norm(evidence)
        same_source = a in b or b in a
    else:
        same_source = bool(probe.chunk_id) and probe.chunk_id == chunk_id
    return same_source and _norm(probe.answer).rstrip(".") in _norm(statement)


def is_hit(probe, chunk_id: str, text: str) -> bool:
    """The retrieved chunk holds the probe's source passage (its evidence quote, or its chunk id)."""
    if probe.evidence:
        return _norm(probe.evidence) in _norm(text)
    return bool(probe.chunk_id) and probe.chunk_id == chunk_id


def rag_prompt(question: str, passages: list[str]) -> str:
    return RAG_TEMPLATE.format(context="\n\n".join(passages), question=question)

__all__ = ["RETRIEVERS", "RRF_K", "ChunkIndex", "fuse", "fact_statement", "is_fact_hit", "is_hit", "load_fact_index", "load_index",
           "rag_prompt"]

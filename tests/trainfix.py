"""A small run folder with synthetic corpora, for training and eval tests."""

from __future__ import annotations

import re

from kbake.config import IngestArgs, Recipe
from kbake.ingest import ingest
from kbake.run import RunDir, SynthItem, read_chunks, write_items
from kbake.sample import sample_documents, sample_probes


def small_run(root, tiny_model, n_chunks: int | None = 6) -> RunDir:
    """The sample ingested, probes installed, and simple grounded corpora made from its sentences."""
    rd = RunDir.at(root)
    ingest([str(p) for p in sample_documents()], rd, IngestArgs(tokenizer=tiny_model, chunk_tokens=128, overlap_tokens=0),
           progress=False)
    rd.probes.write_bytes(sample_probes().read_bytes())
    chunks = read_chunks(rd.chunks)[:n_chunks]
    qa, eg = [], []
    for c in chunks:
        sents = [s for s in re.split(r"(?<=[.!?])\s+", c["text"]) if len(s.split()) > 5]
        for k, s in enumerate(sents):
            w = s.split()
            qa.append(SynthItem(id=f"qa-{c['chunk_id']}-{k}", kind="qa", doc_id=c["doc_id"], chunk_ids=[c["chunk_id"]],
                                generator="qa/factual", prompt_version="qa.v1", model="test",
                                question=f"What follows '{' '.join(w[:4])}'?", answer=" ".join(w[4:12])))
        eg.append(SynthItem(id=f"eg-{c['chunk_id']}", kind="entigraph", doc_id=c["doc_id"], chunk_ids=[c["chunk_id"]],
                            generator="entigraph/pair", prompt_version="relation.v1", model="test",
                            text=" ".join(reversed(sents))))
    write_items(rd.synth_dir / "qa.jsonl", qa)
    write_items(rd.synth_dir / "entigraph.jsonl", eg)
    return rd


def tiny_recipe(tiny_model, method: str, **train) -> Recipe:
    base = dict(method=method, base_model=tiny_model, block_size=64, batch_size=4, epochs=3, lr=3e-3,
                warmup_ratio=0.0, eval_every=5, save_every=1000, replay_ratio=0.1, memory_slots=256, memory_k=8,
                memory_key_dim=16, memory_top_t=64, memory_background_batches=8)
    if method == "memory":
        # The tiny model's MLP outputs are ~1e-3 (init 0.02), and so is the memory's read-out scale.
        base.update(lr=20.0, memory_optimizer="adamw")
    base.update(train)
    return Recipe(seed=0, train=base)

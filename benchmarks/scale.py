"""Ingest at scale: 10x, 100x and 1000x the shipped sample, time and peak memory per size,
and RAG query latency over the largest index.

    .venv/bin/python benchmarks/scale.py [--sizes 10,100,1000]

Each copy of the sample gets its numbers redrawn and its paragraphs shuffled, so copies
are not near-duplicates of each other (every chunk survives dedup and is really stored).
Each size is ingested in a fresh process, so peak RSS is that size's alone.
"""

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kbake.ingest.readers import read_document
from kbake.sample import sample_documents

CHILD = r"""
import json, resource, sys, time
from kbake.config import IngestArgs
from kbake.ingest import ingest
from kbake.run import RunDir
t = time.perf_counter()
rep = ingest([sys.argv[1]], RunDir.at(sys.argv[2]), IngestArgs(), progress=False)
print(json.dumps({"seconds": time.perf_counter() - t, "chunks": rep.n_chunks, "docs": len(rep.added),
                  "removed": rep.removed, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def make_corpus(folder: Path, copies: int, text: str) -> int:
    folder.mkdir(parents=True)
    paras = text.split("\n\n")
    total = 0
    for i in range(copies):
        rng = random.Random(i)
        ps = paras[:]
        rng.shuffle(ps)
        body = re.sub(r"\d+(?:[.,]\d+)*", lambda m, rng=rng: f"{rng.uniform(1, 9999):,.1f}", "\n\n".join(ps))
        (folder / f"doc{i:05d}.txt").write_text(body)
        total += len(body.encode())
    return total


ap = argparse.ArgumentParser()
ap.add_argument("--sizes", default="10,100,1000")
a = ap.parse_args()
text = read_document(sample_documents()[0])
rows = []
with tempfile.TemporaryDirectory() as tmp:
    last_run = None
    for n in [int(x) for x in a.sizes.split(",")]:
        corpus = Path(tmp) / f"x{n}"
        nbytes = make_corpus(corpus, n, text)
        run = Path(tmp) / f"run{n}"
        out = subprocess.run([sys.executable, "-c", CHILD, str(corpus), str(run)], capture_output=True, text=True)
        if out.returncode:
            sys.exit(out.stderr[-2000:])
        r = json.loads(out.stdout.strip().splitlines()[-1])
        r.update(size=f"{n}x", mib=nbytes / 2**20)
        rows.append(r)
        print(f"{n:>5}x  {nbytes / 2**20:8.1f} MiB  {r['docs']:>6} docs  {r['chunks']:>7} chunks  "
              f"{r['seconds']:8.1f} s  {r['mib'] / r['seconds']:6.2f} MiB/s  peak RSS {r['peak_rss_mib']:7.0f} MiB",
              flush=True)
        last_run = run

    # RAG latency: the real embedder over the largest run's chunks (first 2,000 embedded for real,
    # the rest of the matrix tiled from them: search cost depends on the matrix size, not its values).
    import numpy as np

    from kbake.eval.rag import ChunkIndex
    from kbake.models import load_embedder
    from kbake.run import read_chunks

    chunks = read_chunks(last_run / "chunks.parquet")
    emb = load_embedder()
    real = emb.encode([c["text"] for c in chunks[:2000]], normalize_embeddings=True, convert_to_numpy=True,
                      batch_size=64)
    reps = -(-len(chunks) // len(real))
    vectors = np.tile(real, (reps, 1))[: len(chunks)].astype(np.float32)
    index = ChunkIndex([c["chunk_id"] for c in chunks], [c["text"] for c in chunks], vectors, emb)
    qs = ["Where are the membranes made?", "What was the backlog at year end?", "Who is the CEO?"] * 10
    index.search(qs[:1], 3)
    t = time.perf_counter()
    for q in qs:
        index.search([q], 3)
    ms = (time.perf_counter() - t) / len(qs) * 1000
    qv = emb.encode(qs, normalize_embeddings=True, convert_to_numpy=True)
    t = time.perf_counter()
    for v in qv:
        sims = vectors @ v
        np.argpartition(-sims, 2)[:3]
    search_ms = (time.perf_counter() - t) / len(qs) * 1000
    print(f"RAG query over {len(chunks):,} chunks x {vectors.shape[1]} dims (numpy, exact): {ms:.1f} ms per query "
          f"with the query's embedding, {search_ms:.2f} ms for the search alone")

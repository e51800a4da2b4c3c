"""Retrieval recall@k of the probes' source passage: dense, lexical (BM25) and hybrid (RRF),
on the shipped sample ingested with the demo recipe, per probe split.

    .venv/bin/python benchmarks/retrieval.py [--recipe recipes/demo.yaml] [--run R]

With --run, an existing run (its chunks and probes.jsonl) instead of the sample.
"""

import argparse
import tempfile
from pathlib import Path

from kbake.config import load_recipe
from kbake.eval.rag import RETRIEVERS, is_hit, load_index
from kbake.ingest import ingest
from kbake.run import RunDir, read_probes
from kbake.sample import sample_documents, sample_probes

ap = argparse.ArgumentParser()
ap.add_argument("--recipe", default=str(Path(__file__).resolve().parents[1] / "recipes" / "demo.yaml"))
ap.add_argument("--run", type=Path, default=None)
a = ap.parse_args()

recipe = load_recipe(a.recipe)
if a.run:
    run = RunDir.at(a.run)
else:
    run = RunDir.at(Path(tempfile.mkdtemp()) / "run")
    ingest([str(p) for p in sample_documents()], run, recipe.ingest, progress=False)
    run.probes.write_bytes(sample_probes().read_bytes())
probes = read_probes(run.probes)
index, _ = load_index(run, recipe.eval.embedder)
print(f"{len(index.texts)} chunks; {len(probes)} probes")
for retriever in RETRIEVERS:
    cells = []
    for k in (1, 3, 10):
        hits = index.search([p.question for p in probes], k, retriever)
        for split in ("dev", "test"):
            sel = [any(is_hit(p, index.chunk_ids[i], index.texts[i]) for i in row)
                   for p, row in zip(probes, hits) if p.split == split]
            if sel:
                cells.append(f"{split} @{k} {100 * sum(sel) / len(sel):5.1f}%")
    print(f"{retriever:8s} " + "  ".join(cells))

"""Prefix sharing in the local backend (`synth.share_prefix`): the same synth requests with
the shared prefix prefilled once per generate call (64) and every prompt prefilled whole (0).

The requests are the real ones of `recipes/corpus.yaml` for the first --chunks chunks of the
sample: each chunk's rephrase styles and QA requests with their candidates, which share the
instruction and the chunk. Greedy (temperature 0, so the outputs can be compared), no LLM
cache, both modes in one process on the same prompts. Prints prompt+output tokens/s, output
tokens/s and how many outputs are the same text in both modes, per precision.

    .venv/bin/python benchmarks/synth_prefix.py [--chunks 8] [--max-tokens 96] [--precision bf16 fp32]
"""

import argparse
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from kbake.config import load_recipe
from kbake.ingest import ingest
from kbake.llm.local import LocalBackend
from kbake.run import RunDir, read_chunks
from kbake.sample import sample_documents
from kbake.synth import group_by_doc, qa, rephrase

ap = argparse.ArgumentParser()
ap.add_argument("--chunks", type=int, default=8)
ap.add_argument("--max-tokens", type=int, default=96)
ap.add_argument("--batch-size", type=int, default=32)
ap.add_argument("--precision", nargs="+", default=["bf16", "fp32"])
ap.add_argument("--recipe", type=Path, default=Path("recipes/corpus.yaml"))
a = ap.parse_args()

recipe = load_recipe(a.recipe)
args = recipe.synth.model_copy(update={"temperature": 0.0, "qa_max_tokens": a.max_tokens,
                                       "rephrase_max_tokens": a.max_tokens, "structured_output": False})
with TemporaryDirectory() as tmp:
    run = RunDir.at(Path(tmp) / "run")
    run.ensure()
    ingest([str(p) for p in sample_documents()], run, recipe.ingest, progress=False)
    by_doc = group_by_doc(read_chunks(run.chunks))
by_doc = {d: cs[: a.chunks] for d, cs in by_doc.items()}
requests = [j.request for m in (rephrase, qa) for j in m.jobs(by_doc, args, 0)]
print(f"{len(requests)} requests ({a.chunks} chunks: {len(args.rephrase_styles)} styles + {len(args.qa_types)} QA types, "
      f"x{args.candidates} candidates), max {a.max_tokens} new tokens, batch {a.batch_size}")
print("| precision | share_prefix | seconds | prompt tokens | output tokens | prompt+output tok/s | output tok/s | same text |")
print("|---|---|---|---|---|---|---|---|")
for precision in a.precision:
    backend = LocalBackend("default", batch_size=a.batch_size, precision=precision)
    backend.complete(requests[:2], lambda i, c: None)  # load and warm up
    texts = {}
    for share in (0, 64):
        backend.share_prefix = share
        t0 = time.perf_counter()
        out = backend.complete(requests, lambda i, c: None)
        dt = time.perf_counter() - t0
        texts[share] = [c.text for c in out]
        p, o = sum(c.prompt_tokens for c in out), sum(c.completion_tokens for c in out)
        same = sum(x == y for x, y in zip(texts[0], texts[share]))
        print(f"| {precision} | {share} | {dt:.1f} | {p:,} | {o:,} | {(p + o) / dt:.0f} | {o / dt:.1f} | "
              f"{same}/{len(out)} |", flush=True)

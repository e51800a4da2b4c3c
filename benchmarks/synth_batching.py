"""Local backend: batched generation vs one `generate` call per prompt, same prompts.

    .venv/bin/python benchmarks/synth_batching.py [--model default] [--n 32] [--batch 16] [--tokens 64]

Greedy decoding, so both paths produce the same kind of work; reports new tokens per second.
"""

import argparse
import time

from kbake.llm import ChatRequest, Sampling
from kbake.llm.local import LocalBackend
from kbake.sample import general_paragraphs

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="default")
ap.add_argument("--n", type=int, default=32)
ap.add_argument("--batch", type=int, default=16)
ap.add_argument("--tokens", type=int, default=64)
a = ap.parse_args()

paras = general_paragraphs("eval")[: a.n]
reqs = [ChatRequest.chat(None, f"Summarise in one sentence:\n{p[:600]}", Sampling(a.tokens, 0.0, 1.0, 0)) for p in paras]


def run(batch: int) -> tuple[float, int]:
    backend.batch_size = batch
    t = time.perf_counter()
    out = backend.complete(reqs, lambda i, c: None)
    return time.perf_counter() - t, sum(c.completion_tokens for c in out)


backend = LocalBackend(a.model, batch_size=a.batch)
run(a.batch)  # warm-up (threads, allocator)
tb, nb = run(a.batch)
t1, n1 = run(1)
print(f"prompts={a.n} max_new_tokens={a.tokens}")
print(f"batched (batch {a.batch}): {nb} tokens in {tb:.1f}s = {nb / tb:.1f} tok/s")
print(f"one call per prompt:      {n1} tokens in {t1:.1f}s = {n1 / t1:.1f} tok/s")
print(f"speed-up: {(nb / tb) / (n1 / t1):.2f}x")

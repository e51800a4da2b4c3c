"""Training throughput: kbake's loop vs a bare PyTorch forward/backward/step loop on the
same model, batch and sequence length; packing efficiency; peak memory.

    .venv/bin/python benchmarks/train_throughput.py [--model default] [--batch 4] [--seq 256] [--steps 6]
"""

import argparse
import resource
import tempfile
import time
from pathlib import Path

import torch

from kbake.config import TrainArgs
from kbake.models import load_causal_lm
from kbake.run import read_items
from kbake.sample import sample_dir
from kbake.train.data import pack_blocks, qa_example, text_example
from kbake.train.loop import run_loop

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="default")
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--seq", type=int, default=256)
ap.add_argument("--steps", type=int, default=6)
a = ap.parse_args()

model, tok = load_causal_lm(a.model)
synth = sample_dir() / "synth"
examples = [qa_example(tok, i.question, i.answer) if i.question is not None else text_example(tok, i.text, i.kind)
            for kind in ("qa", "entigraph") for i in read_items(synth / f"{kind}.jsonl")]
ids, labels = pack_blocks(examples, a.seq)
real = sum(len(e.ids) for e in examples)
stream = [t for e in examples for t in e.ids]
# Every position of every block holds the next token of the example stream: none is padding.
filled = sum(1 for got, want in zip(ids.flatten().tolist(), stream) if got == want)
print(f"packing: {len(examples)} examples, {real} tokens -> {ids.shape[0]} blocks of {a.seq}; "
      f"non-pad share {filled / ids.numel():.4f}; dropped tail {real - ids.numel()} tokens")
# The same examples padded one per row, as an unpacked loader would: the waste packing avoids.
longest = min(max(len(e.ids) for e in examples), a.seq)
padded_share = sum(min(len(e.ids), longest) for e in examples) / (len(examples) * longest)
print(f"without packing (one example per row, padded to {longest}): non-pad share {padded_share:.4f}")

n = a.batch * (a.steps + 1)
x, y = ids[:n].clone(), labels[:n].clone()
torch.manual_seed(0)


def bare(steps):
    m, _ = load_causal_lm(a.model)
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-5)
    # first step is warm-up, not timed
    for s in range(steps + 1):
        if s == 1:
            t = time.perf_counter()
        xb, yb = x[s * a.batch:(s + 1) * a.batch], y[s * a.batch:(s + 1) * a.batch]
        loss = m(input_ids=xb, labels=yb).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    return steps * a.batch * a.seq / (time.perf_counter() - t)


def kbake_loop(steps):
    m, _ = load_causal_lm(a.model)
    m.train()
    args = TrainArgs(method="full", base_model=a.model, batch_size=a.batch, block_size=a.seq, max_steps=steps + 1,
                     lr=1e-5, warmup_ratio=0.0, eval_fraction=0.0, save_every=10_000, eval_every=10_000)
    with tempfile.TemporaryDirectory() as tmp:
        run_loop(m, x, y, x[:0], y[:0], args, Path(tmp), seed=0, progress=False)
        rows = [__import__("json").loads(l) for l in (Path(tmp) / "metrics.jsonl").read_text().splitlines()]
    return sum(r["tokens_per_s"] for r in rows[1:]) / len(rows[1:])  # first step is warm-up


b = bare(a.steps)
k = kbake_loop(a.steps)
print(f"bare PyTorch loop: {b:.1f} tok/s; kbake loop: {k:.1f} tok/s; ratio {k / b:.2f}")
print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")

"""The generation loop against its floor, one run: for batch 1, 16 and 32, in fp32 and bf16,
with transformers' dynamic KV cache and the static one kbake uses, the time of one greedy
decode step (the difference between generating 1+S and 1 tokens, divided by S) and new
tokens per second. The floor of a step is the larger of reading the weights once at the
measured memory rate and the step's arithmetic (batch x 2 x parameters) at the measured
matmul rate of that precision, both measured here in the same process.

    .venv/bin/python benchmarks/decode.py [--steps 32] [--batches 1,16,32] [--profile]
"""

import argparse
import time

import torch

from kbake.models import load_causal_lm
from kbake.models.generate import chat_prompt, generate_batch
from kbake.models.precision import cast_for_inference, torch_dtype
from kbake.sample import general_paragraphs

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=32)
ap.add_argument("--batches", default="1,16,32")
ap.add_argument("--profile", action="store_true", help="print a torch.profiler table of bf16 decode at the largest batch")
a = ap.parse_args()


def per_call(f, repeats: int) -> float:
    f()
    t = time.perf_counter()
    for _ in range(repeats):
        f()
    return (time.perf_counter() - t) / repeats


# Rates of this machine, same process: matmul at the shape of a decode step's largest product
# would flatter nobody, so the square 2048 product (the best case) sets the arithmetic floor.
rates = {}
for p in ("fp32", "bf16"):
    x, y = torch.randn(2048, 2048, dtype=torch_dtype(p)), torch.randn(2048, 2048, dtype=torch_dtype(p))
    rates[p] = 2 * 2048**3 / per_call(lambda: x @ y, 10)
big = torch.ones(2**28, dtype=torch.float32)
mem = big.numel() * 4 / per_call(lambda: big.sum(), 5)
del big
print(f"matmul fp32 {rates['fp32'] / 1e9:.0f} GFLOP/s, bf16 {rates['bf16'] / 1e9:.0f} GFLOP/s; memory read {mem / 1e9:.1f} GB/s")

model, tok = load_causal_lm()
n_params = sum(p.numel() for p in model.parameters())
paras = general_paragraphs("eval")
prompts = [chat_prompt(tok, "Summarise this paragraph:\n" + p[:600]) for p in paras]


def decode_step(batch: int, cache: str) -> tuple[float, float]:
    """(seconds per decode step, new tokens/s of the whole call) at `batch`, EOS ignored."""
    ps = prompts[:batch]
    eos = tok.eos_token_id
    tok.eos_token_id = None  # every row runs all steps: the step time is what is measured
    try:
        generate_batch(model, tok, ps[:1], max_new_tokens=2, cache=cache)
        t = time.perf_counter()
        generate_batch(model, tok, ps, max_new_tokens=1, cache=cache)
        t1 = time.perf_counter() - t
        t = time.perf_counter()
        generate_batch(model, tok, ps, max_new_tokens=1 + a.steps, cache=cache)
        tn = time.perf_counter() - t
    finally:
        tok.eos_token_id = eos
    return (tn - t1) / a.steps, batch * (1 + a.steps) / tn


print("| precision | batch | cache | decode step | floor | step ÷ floor | new tokens/s (prefill included) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for p in ("fp32", "bf16"):
    cast_for_inference(model, p)
    weight_bytes = n_params * torch.finfo(torch_dtype(p)).bits // 8
    for b in [int(v) for v in a.batches.split(",")]:
        floor = max(weight_bytes / mem, b * 2 * n_params / rates[p])
        for cache in ("dynamic", "static"):
            step, tps = decode_step(b, cache)
            print(f"| {p} | {b} | {cache} | {step * 1000:.1f} ms | {floor * 1000:.1f} ms | {step / floor:.1f}x | {tps:.1f} |",
                  flush=True)

if a.profile:
    from torch.profiler import ProfilerActivity, profile

    cast_for_inference(model, "bf16")
    b = max(int(v) for v in a.batches.split(","))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        eos = tok.eos_token_id
        tok.eos_token_id = None
        generate_batch(model, tok, prompts[:b], max_new_tokens=1 + a.steps, cache="static")
        tok.eos_token_id = eos
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))

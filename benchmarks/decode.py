"""The generation loop against its floor, one run: for batch 1, 16 and 32, in fp32 and bf16,
with transformers' dynamic KV cache and the static one kbake uses, the time of one greedy
decode step (the difference between generating 1+S and 1 tokens, divided by S) and new
tokens per second. The floor of a step is the larger of reading the weights once at the
measured memory rate and the step's arithmetic (batch x 2 x parameters) at the measured
matmul rate of that precision, both measured here in the same process.

    .venv/bin/python benchmarks/decode.py [--steps 32] [--batches 1,16,32] [--profile | --profile-only]
"""

import argparse
import time

import torch
from machine import machine_rates  # benchmarks/machine.py

from kbake.models import load_causal_lm
from kbake.models.generate import chat_prompt, generate_batch
from kbake.models.precision import cast_for_inference, torch_dtype
from kbake.sample import general_paragraphs

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=32)
ap.add_argument("--batches", default="1,16,32")
ap.add_argument("--profile", action="store_true", help="also break one bf16 decode step at the largest batch down by op")
ap.add_argument("--profile-only", action="store_true", help="only the rates and the --profile breakdown")
a = ap.parse_args()


# The square 2048 product (the best case) sets the arithmetic floor.
rates = machine_rates()
mem = rates["memory"]
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


if not a.profile_only:
    print("| precision | batch | cache | decode step | floor | step ÷ floor | new tokens/s (prefill included) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
for p in () if a.profile_only else ("fp32", "bf16"):
    cast_for_inference(model, p)
    weight_bytes = n_params * torch.finfo(torch_dtype(p)).bits // 8
    for b in [int(v) for v in a.batches.split(",")]:
        floor = max(weight_bytes / mem, b * 2 * n_params / rates[p])
        for cache in ("dynamic", "static"):
            step, tps = decode_step(b, cache)
            print(f"| {p} | {b} | {cache} | {step * 1000:.1f} ms | {floor * 1000:.1f} ms | {step / floor:.1f}x | {tps:.1f} |",
                  flush=True)

if a.profile or a.profile_only:
    # Per-op cost of one decode step: profile a call that generates 1 token (prefill) and one
    # that generates 1 + S, and divide the difference of each op's self time by S.
    from torch.profiler import ProfilerActivity, profile

    cast_for_inference(model, "bf16")
    b = max(int(v) for v in a.batches.split(","))

    def op_times(new_tokens: int) -> dict[str, float]:
        eos = tok.eos_token_id
        tok.eos_token_id = None
        try:
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                generate_batch(model, tok, prompts[:b], max_new_tokens=new_tokens, cache="static")
        finally:
            tok.eos_token_id = eos
        return {e.key: e.self_cpu_time_total / 1000 for e in prof.key_averages()}

    one, many = op_times(1), op_times(1 + a.steps)
    per_step = sorted(((k, (many[k] - one.get(k, 0.0)) / a.steps) for k in many), key=lambda kv: -kv[1])
    total = sum(v for _, v in per_step)
    print(f"\nbf16, batch {b}, static cache: one decode step, by op (self time; {total:.1f} ms in all)")
    print("| op | ms per step | share |")
    print("| --- | --- | --- |")
    for k, v in per_step[:8]:
        print(f"| {k} | {v:.1f} | {v / total:.0%} |")
    n_mm = 2 * b * n_params  # the step's matmul arithmetic (attention scores aside)
    mm = dict(per_step).get("aten::mm", 0.0) / 1000
    if mm:
        print(f"aten::mm ran at {n_mm / mm / 1e9:.0f} GFLOP/s, against {rates['bf16'] / 1e9:.0f} for a 2048x2048 product")

"""What keeps bf16 LoRA training under 1.8x float32 on a 2-core CPU: a profile of one step,
and three things tried against it (issue 17). One process per case, read the ratios.

    .venv/bin/python benchmarks/bf16_train_ablations.py profile     # op table of one LoRA r32 bf16 step, 4 x 256
    .venv/bin/python benchmarks/bf16_train_ablations.py attention   # sdpa vs eager attention, tokens/s
    .venv/bin/python benchmarks/bf16_train_ablations.py frozen      # frozen base Linear weights stored in bf16 vs autocast casts
    .venv/bin/python benchmarks/bf16_train_ablations.py ce          # cross-entropy over the 49,152-token vocabulary: fp32, bf16, chunked
"""

import sys
import time

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model

from kbake.models import load_causal_lm

case = sys.argv[1] if len(sys.argv) > 1 else "profile"
x = torch.randint(0, 49000, (4, 256), generator=torch.Generator().manual_seed(0))


def lora_model(attn: str = "sdpa", frozen_bf16: bool = False):
    torch.manual_seed(0)
    model, _ = load_causal_lm("default")
    model.config._attn_implementation = attn
    model = get_peft_model(model, LoraConfig(r=32, lora_alpha=64, target_modules="all-linear", task_type="CAUSAL_LM",
                                             init_lora_weights="gaussian"))
    if frozen_bf16:  # the same numbers under autocast: the cast happens once instead of every forward
        emb = model.get_input_embeddings().weight
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and not m.weight.requires_grad and m.weight is not emb:
                m.weight.data = m.weight.data.to(torch.bfloat16)
    model.train()
    return model


def steps(model, n: int) -> tuple[float, list[float]]:
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    times, losses = [], []
    for _ in range(n + 1):
        t = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t)
        losses.append(round(loss.item(), 5))
    return x.numel() * n / sum(times[1:]), losses


if case == "profile":
    from torch.profiler import ProfilerActivity, profile

    model = lora_model()
    steps(model, 1)
    with profile(activities=[ProfilerActivity.CPU]) as p:
        steps(model, 0)
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
elif case in ("attention", "frozen"):
    variants = [("sdpa", {}), ("eager", {"attn": "eager"})] if case == "attention" else \
        [("autocast casts", {}), ("frozen weights in bf16", {"frozen_bf16": True})]
    for _ in range(3):  # interleaved rounds: this machine's speed drifts
        for name, kw in variants:
            rate, losses = steps(lora_model(**kw), 8)
            print(f"{name}: {rate:.1f} tokens/s, losses {losses[:4]}", flush=True)
elif case == "ce":
    V, D, N = 49152, 576, 1024
    W = (torch.randn(V, D) * 0.02).to(torch.bfloat16)
    h0, y = torch.randn(N, D), torch.randint(0, V, (N,))

    def run(kind: str) -> float:
        h = h0.clone().requires_grad_()
        t = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = h @ W.t()
        if kind == "matmul only":
            logits.float().sum().backward()
        elif kind == "fp32 CE":
            F.cross_entropy(logits.float(), y).backward()
        elif kind == "bf16 CE":
            F.cross_entropy(logits, y).backward()
        else:  # chunked: fp32 log-sum-exp 64 rows at a time, gradient softmax - onehot per chunk
            lse = torch.cat([torch.logsumexp(c.float(), -1) for c in logits.detach().split(64)])
            grad = torch.cat([torch.exp(c.float() - l[:, None]) for c, l in zip(logits.detach().split(64), lse.split(64))])
            grad[torch.arange(N), y] -= 1
            logits.backward((grad / N).to(logits.dtype))
        return time.perf_counter() - t

    for kind in ("matmul only", "fp32 CE", "bf16 CE", "chunked CE") * 2:
        print(f"{kind}: {run(kind):.3f} s per 1,024 tokens", flush=True)

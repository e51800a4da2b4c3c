"""One optimizer step of 8 blocks x 256 tokens (LoRA r32 on the embedded model, bf16
autocast) as one batch of 8, 2 micro-batches of 4, or 4 of 2: tokens/s, three rounds of
three steps each, interleaved, one process (read the ratios).

    .venv/bin/python benchmarks/micro_batch.py
"""

import time

import torch
from peft import LoraConfig, get_peft_model

from kbake.models import load_causal_lm

model, tok = load_causal_lm("default")
model = get_peft_model(model, LoraConfig(r=32, lora_alpha=64, target_modules="all-linear", task_type="CAUSAL_LM"))
model.train()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
x = torch.randint(0, 49000, (8, 256), generator=torch.Generator().manual_seed(0))


def step(micro: int) -> float:
    t = time.perf_counter()
    for part in x.split(micro):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=part, labels=part).loss
        loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return time.perf_counter() - t


step(8)  # warm-up
rates = {8: [], 4: [], 2: []}
for _ in range(3):
    for micro in rates:
        rates[micro].append(2048 * 3 / sum(step(micro) for _ in range(3)))
for micro, r in rates.items():
    print(f"micro-batch {micro}: {' / '.join(f'{v:.0f}' for v in r)} tokens/s, mean {sum(r) / len(r):.0f}")

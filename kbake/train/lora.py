"""`lora`: low-rank adapters through peft (Hu et al. 2021); the base weights stay frozen."""

from __future__ import annotations

from pathlib import Path

import torch

from kbake.config import TrainArgs
from kbake.train.loop import Prepared

SAVED_AS = "peft"
"""The trained folder holds the adapter only; kbake.models.trained.ATTACH loads it onto its base (or
the model it started from)."""
CONTINUABLE = True


def lora_config(args: TrainArgs):
    from peft import LoraConfig

    return LoraConfig(r=args.lora.r, lora_alpha=args.lora.alpha, lora_dropout=args.lora.dropout,
                      target_modules=args.lora.targets, task_type="CAUSAL_LM", bias="none")


def prepare(model, tok, args: TrainArgs, *, precision: str = "fp32", **_) -> Prepared:
    from peft import get_peft_model

    model = get_peft_model(model, lora_config(args))  # adapters in fp32 (peft's autocast_adapter_dtype)
    if precision == "bf16":
        store_frozen_linears(model, torch.bfloat16)
    return Prepared(model, sum(p.numel() for p in model.parameters() if p.requires_grad))


def store_frozen_linears(model, dtype: torch.dtype) -> int:
    """Store the frozen weights of the linear layers in `dtype` (bf16); returns how many.
    Under bf16 autocast every linear layer multiplies in bf16 anyway, so the products are the same
    numbers, without re-casting the fp32 copy each step (14% of LoRA's throughput on an H200, issue 33)
    and at half the memory. Weights tied to the token embeddings stay fp32: a lookup is not autocast."""
    tied = {id(model.get_input_embeddings().weight)}
    n = 0
    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and not module.weight.requires_grad and id(module.weight) not in tied:
            module.weight.data = module.weight.data.to(dtype)
            if module.bias is not None and not module.bias.requires_grad:
                module.bias.data = module.bias.data.to(dtype)
            n += 1
    return n


def save(acc, model, folder: Path, tok, **_) -> None:
    """The adapter only; `kbake export --merge` writes a standalone model."""
    if acc is None or acc.is_main_process:
        (acc.unwrap_model(model) if acc is not None else model).save_pretrained(folder)
        tok.save_pretrained(folder)

"""`memory`: a product-key memory beside the MLP of chosen layers, then sparse memory
finetuning (Lin et al. 2025, "Continual learning via sparse memory finetuning"): only the
value rows of the t slots that the new data reads far more than general text does
(TF-IDF over slot hits) are trained; every other weight is frozen."""

from __future__ import annotations

from pathlib import Path

import torch

from kbake.config import TrainArgs
from kbake.models.memory import MemoryConfig, add_memory, count_hits, save_memory, tfidf_slots


def memory_config(args: TrainArgs) -> MemoryConfig:
    return MemoryConfig(layers=list(args.memory_layers), slots=args.memory_slots, k=args.memory_k,
                        key_dim=args.memory_key_dim, gated=args.memory_gated)


def prepare(model, args: TrainArgs, *, new_blocks: torch.Tensor, background_blocks: torch.Tensor, seed: int, **_):
    torch.manual_seed(seed)  # the random keys and queries decide which slots a text reads
    mems = add_memory(model, memory_config(args))
    for p in model.parameters():
        p.requires_grad_(False)
    new_hits = count_hits(model, new_blocks.split(1))
    bg_hits = count_hits(model, background_blocks.split(1))
    mask = tfidf_slots(new_hits, bg_hits, args.memory_top_t)  # [n_mem, slots]
    masks = {}
    for row, (name, mem) in enumerate(mems.items()):
        mem.values.requires_grad_(True)
        masks[name] = mask[row].to(mem.values.device)

    def grad_hook(m) -> None:
        for name, mem in m.kbake_memory.items():
            if mem.values.grad is not None:
                mem.values.grad.mul_(masks[name].unsqueeze(1).to(mem.values.grad.dtype))

    model.kbake_trainable_slots = {name: int(msk.sum()) for name, msk in masks.items()}
    return model, grad_hook


def save(model, folder: Path, tok, base_model: str) -> None:
    save_memory(model, folder, base_model)
    tok.save_pretrained(folder)

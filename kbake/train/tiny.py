"""`tiny`: TinyLoRA (Morris et al. 2026), a LoRA-XS update U Σ (Σᵢ vᵢ Pᵢ) Vᵀ on the frozen SVD
bases of each weight, whose only trainable numbers are the vector v (`tiny.params` per tie
group): kbake/models/tiny_lora.py. Usable for SFT here and for GRPO (`grpo.adapter: tiny`)."""

from __future__ import annotations

from pathlib import Path

from kbake.config import TrainArgs
from kbake.models.tiny_lora import TinyConfig, apply_tiny_lora, save_tiny
from kbake.train.loop import Prepared

SAVED_AS = "tiny"
"""The trained folder holds the vectors and their frozen bases; kbake.models.trained.ATTACH loads it onto its base."""
CONTINUABLE = True


def tiny_config(args: TrainArgs, seed: int) -> TinyConfig:
    return TinyConfig(params=args.tiny.params, rank=args.tiny.rank, tie=args.tiny.tie,
                      targets=list(args.tiny.targets), seed=seed)


def prepare(model, tok, args: TrainArgs, *, seed: int = 0, **_) -> Prepared:
    vectors = apply_tiny_lora(model, tiny_config(args, seed))
    n = sum(v.numel() for v in vectors.values())
    return Prepared(model, n, state={"tiny": {"groups": len(vectors), "params_per_group": args.tiny.params,
                                              "rank": args.tiny.rank, "tie": args.tiny.tie}})


def save(acc, model, folder: Path, tok, **_) -> None:
    if acc is None or acc.is_main_process:
        save_tiny(acc.unwrap_model(model) if acc is not None else model, folder)
        tok.save_pretrained(folder)

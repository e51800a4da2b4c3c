"""`lora`: low-rank adapters through peft (Hu et al. 2021); the base weights stay frozen."""

from __future__ import annotations

from pathlib import Path

from kbake.config import TrainArgs
from kbake.train.loop import Prepared

SAVED_AS = "peft"
"""The trained folder holds the adapter only; kbake.models.trained.ATTACH loads it onto its base (or
the model it started from)."""
CONTINUABLE = True


def lora_config(args: TrainArgs):
    from peft import LoraConfig

    return LoraConfig(r=args.lora_r, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
                      target_modules=args.lora_targets, task_type="CAUSAL_LM", bias="none")


def prepare(model, tok, args: TrainArgs, **_) -> Prepared:
    from peft import get_peft_model

    model = get_peft_model(model, lora_config(args))
    return Prepared(model, sum(p.numel() for p in model.parameters() if p.requires_grad))


def save(acc, model, folder: Path, tok, **_) -> None:
    """The adapter only; `kbake export --merge` writes a standalone model."""
    if acc is None or acc.is_main_process:
        (acc.unwrap_model(model) if acc is not None else model).save_pretrained(folder)
        tok.save_pretrained(folder)

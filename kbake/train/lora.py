"""`lora`: low-rank adapters through peft (Hu et al. 2021); the base weights stay frozen."""

from __future__ import annotations

from pathlib import Path

from kbake.config import TrainArgs


def prepare(model, args: TrainArgs, **_):
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(r=args.lora_r, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
                     target_modules=args.lora_targets, task_type="CAUSAL_LM", bias="none")
    return get_peft_model(model, cfg), None


def save(model, folder: Path, tok) -> None:
    model.save_pretrained(folder)  # the adapter only; `kbake export --merge` writes a standalone model
    tok.save_pretrained(folder)

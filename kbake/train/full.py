"""`full`: every weight trains (optionally not the token embeddings)."""

from __future__ import annotations

from pathlib import Path

from kbake.config import TrainArgs
from kbake.train.loop import Prepared

SAVED_AS = "whole"
"""The trained folder is a standalone model: it loads without the base, and `--from` it needs no chain."""
CONTINUABLE = True


def prepare(model, tok, args: TrainArgs, **_) -> Prepared:
    for p in model.parameters():
        p.requires_grad_(True)
    if args.freeze_embeddings:
        # With tied embeddings this also freezes the output head: they are one tensor.
        model.get_input_embeddings().weight.requires_grad_(False)
    return Prepared(model, sum(p.numel() for p in model.parameters() if p.requires_grad))


def save(acc, model, folder: Path, tok, **_) -> None:
    """Called on every process: under FSDP each rank gathers its shards; the main one writes."""
    state_dict = acc.get_state_dict(model)
    if acc.is_main_process:
        acc.unwrap_model(model).save_pretrained(folder, state_dict=state_dict)
        tok.save_pretrained(folder)

"""`full`: every weight trains (optionally not the token embeddings)."""

from __future__ import annotations

from pathlib import Path

from kbake.config import TrainArgs


def prepare(model, args: TrainArgs, **_):
    for p in model.parameters():
        p.requires_grad_(True)
    if args.freeze_embeddings:
        # With tied embeddings this also freezes the output head: they are one tensor.
        model.get_input_embeddings().weight.requires_grad_(False)
    return model, None


def save(model, folder: Path, tok, state_dict=None) -> None:
    model.save_pretrained(folder, state_dict=state_dict)
    tok.save_pretrained(folder)

"""Load what `kbake train` wrote, whatever the method: `R/train/<name>/model/`."""

from __future__ import annotations

import json
from pathlib import Path

TRAINED_META = "kbake_model.json"


def write_meta(folder: Path, method: str, base_model: str, init: str | None = None) -> None:
    meta = {"method": method, "base_model": base_model, **({"init": init} if init else {})}
    (Path(folder) / TRAINED_META).write_text(json.dumps(meta, indent=2))


def load_trained(folder: str | Path, *, dtype=None, device: str | None = None, merge: bool = False):
    """(model, tokenizer) from a trained folder (full weights, a LoRA adapter, or a memory),
    in eval mode. A plain model folder or HF id without kbake metadata loads as is. `merge`
    folds a LoRA adapter into the weights: the same function, without the adapter's matmuls."""
    from kbake.models.loading import load_causal_lm, load_tokenizer

    folder = Path(folder)
    if (folder / "model" / TRAINED_META).exists():
        folder = folder / "model"
    meta_path = folder / TRAINED_META
    if not meta_path.exists():
        return load_causal_lm(str(folder), dtype=dtype, device=device)
    meta = json.loads(meta_path.read_text())
    from kbake.train import METHODS  # each method module knows how its folder loads (`attach`)

    method = METHODS.get(meta["method"])
    if method is None:
        raise ValueError(f"{meta_path}: unknown method {meta['method']!r}")
    if method.WHOLE_MODEL:
        return load_causal_lm(str(folder), dtype=dtype, device=device)
    if meta.get("init"):  # an adapter trained on top of an earlier model, merged
        model, _ = load_trained(_init_folder(folder, meta["init"]), dtype=dtype, device=device, merge=True)
    else:
        model, _ = load_causal_lm(meta["base_model"], dtype=dtype, device=device)
    tok = load_tokenizer(str(folder))
    model = method.attach(model, folder, merge=merge)
    model.eval()
    return model, tok


def start_from(train_dir: Path, init: str | None, base_model: str):
    """(model, tokenizer) a training starts from: `base_model`, or a model trained earlier
    (`init`: RUN/train/<init> or a folder, full or LoRA, its adapter merged in)."""
    from kbake.models.loading import load_causal_lm

    if not init:
        return load_causal_lm(base_model)
    folder = Path(init) if Path(init).exists() else Path(train_dir) / init
    if not folder.exists():
        raise FileNotFoundError(f"{folder}: no trained model named {init!r} to start from")
    model, tok = load_trained(folder, merge=True)
    if hasattr(model, "kbake_memory"):
        raise ValueError(f"{folder}: training can start from a full or lora model, not a memory model")
    model.train()
    return model, tok


def _init_folder(folder: Path, init: str) -> Path:
    p = Path(init)
    return p if p.exists() else folder.parent.parent / init  # RUN/train/<init> beside RUN/train/<name>


def export_merged(folder: str | Path, out: str | Path) -> Path:
    """A standalone model folder: LoRA merged into the base weights (full: copied as is)."""
    model, tok = load_trained(folder, merge=True)
    if hasattr(model, "kbake_memory"):
        raise ValueError("a memory-augmented model cannot be merged into plain weights; load it with kbake")
    out = Path(out)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out

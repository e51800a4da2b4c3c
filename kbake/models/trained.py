"""Load what `kbake train` wrote, whatever the method: `R/train/<name>/model/`."""

from __future__ import annotations

import json
from pathlib import Path

TRAINED_META = "kbake_model.json"


def _attach_peft(model, folder: Path, merge: bool):
    from peft import PeftModel

    model = PeftModel.from_pretrained(model, str(folder))
    return model.merge_and_unload() if merge else model  # merged: the same function without the adapter's matmuls


def _attach_tiny(model, folder: Path, merge: bool):
    from kbake.models.tiny_lora import load_tiny

    return load_tiny(model, folder, merge=merge)


def _attach_memory(model, folder: Path, merge: bool):
    from kbake.models.memory import load_memory

    load_memory(model, folder)  # a memory cannot be merged into plain weights
    return model


def _attach_adapter(model, folder: Path, merge: bool):
    from kbake.models.tiny_lora import ADAPTER_FILE

    return (_attach_tiny if (Path(folder) / ADAPTER_FILE).exists() else _attach_peft)(model, folder, merge)


ATTACH = {"peft": _attach_peft, "tiny": _attach_tiny, "memory": _attach_memory, "adapter": _attach_adapter}
"""How a saved folder loads onto its base model, by the format its training method declares
(`SAVED_AS` in kbake/train/<method>.py; 'whole' is a full model folder). Kept here, below
`train`, so loading a trained model never imports the trainers."""
LEGACY_FORMAT = {"full": "whole", "lora": "peft", "tiny": "tiny", "memory": "memory", "grpo": "adapter"}
"""The format of folders written before the metadata named it."""


def write_meta(folder: Path, method: str, base_model: str, init: str | None = None, saved_as: str = "whole") -> None:
    if saved_as != "whole" and saved_as not in ATTACH:
        raise ValueError(f"unknown saved format {saved_as!r}: one of whole, {', '.join(ATTACH)}")
    meta = {"method": method, "saved_as": saved_as, "base_model": base_model, **({"init": init} if init else {})}
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
    saved_as = meta.get("saved_as") or LEGACY_FORMAT.get(meta["method"])
    if saved_as is None or (saved_as != "whole" and saved_as not in ATTACH):
        raise ValueError(f"{meta_path}: unknown saved format {saved_as or meta['method']!r}")
    if saved_as == "whole":
        return load_causal_lm(str(folder), dtype=dtype, device=device)
    if meta.get("init"):  # an adapter trained on top of an earlier model, merged
        model, _ = load_trained(_init_folder(folder, meta["init"]), dtype=dtype, device=device, merge=True)
    else:
        model, _ = load_causal_lm(meta["base_model"], dtype=dtype, device=device)
    tok = load_tokenizer(str(folder))
    model = ATTACH[saved_as](model, folder, merge)
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

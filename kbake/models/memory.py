"""Product-key memory layers (Lample et al. 2019, "Large memory layers with product keys";
Berges et al. 2024, "Memory layers at scale"), added as a residual branch beside the MLP
of chosen decoder layers.

A query projection of the layer's input is split in two halves; each half scores its own
set of √N sub-keys; the top-k of each give k² candidate slots (the Cartesian product), of
which the top-k by summed score are read: out = Σ softmax(score)_i · V[slot_i], optionally
gated by silu(W_g x) as in Berges et al. The value table V starts at zero, so at
initialisation the branch adds exactly 0 and the model's outputs are unchanged.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class MemoryConfig:
    layers: list[int] = field(default_factory=lambda: [-1])
    """Decoder layers that get a memory branch (negative counts from the end; -1 is resolved to the middle layer)."""
    slots: int = 16384
    """N, the number of memory slots; must be a perfect square (√N sub-keys per half)."""
    k: int = 32
    """Slots read per token (top-k over the product keys)."""
    key_dim: int = 128
    """Query / key width (split in two halves of key_dim/2)."""
    gated: bool = True
    """Multiply the read-out by silu(W_g x) (Berges et al. 2024)."""

    def resolved_layers(self, n_layers: int) -> list[int]:
        if self.layers == [-1]:
            return [n_layers // 2]
        return sorted({l % n_layers for l in self.layers})


class ProductKeyMemory(nn.Module):
    def __init__(self, d_model: int, cfg: MemoryConfig):
        super().__init__()
        n_sub = math.isqrt(cfg.slots)
        if n_sub * n_sub != cfg.slots:
            raise ValueError(f"memory slots must be a perfect square, got {cfg.slots}")
        if cfg.key_dim % 2:
            raise ValueError(f"memory key_dim must be even, got {cfg.key_dim}")
        self.cfg = cfg
        self.n_sub = n_sub
        half = cfg.key_dim // 2
        self.query = nn.Linear(d_model, cfg.key_dim, bias=False)
        self.keys = nn.Parameter(torch.randn(2, n_sub, half) / math.sqrt(half))
        self.values = nn.Parameter(torch.zeros(cfg.slots, d_model))  # zero: the branch starts as a no-op
        self.gate = nn.Linear(d_model, d_model, bias=False) if cfg.gated else None
        self.query_norm = nn.LayerNorm(cfg.key_dim, elementwise_affine=False)
        nn.init.normal_(self.query.weight, std=1 / math.sqrt(d_model))
        if self.gate is not None:
            nn.init.normal_(self.gate.weight, std=1 / math.sqrt(d_model))
        self.hit_counter: torch.Tensor | None = None  # set by count_hits()

    def lookup(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(slot indices, softmax weights), each [..., k], for inputs x [..., d_model]."""
        k = self.cfg.k
        q = self.query_norm(self.query(x))
        q1, q2 = q.chunk(2, dim=-1)
        s1 = q1 @ self.keys[0].T  # [..., n_sub]
        s2 = q2 @ self.keys[1].T
        kk = min(k, self.n_sub)
        v1, i1 = s1.topk(kk, dim=-1)
        v2, i2 = s2.topk(kk, dim=-1)
        # Product keys: the score of slot (a, b) is s1[a] + s2[b]; search the k×k candidates only.
        cand = (v1.unsqueeze(-1) + v2.unsqueeze(-2)).flatten(-2)  # [..., kk*kk]
        best, pos = cand.topk(min(k, kk * kk), dim=-1)
        slots = i1.gather(-1, pos // kk) * self.n_sub + i2.gather(-1, pos % kk)
        return slots, F.softmax(best, dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        slots, w = self.lookup(x)
        if self.hit_counter is not None:
            self.hit_counter += torch.bincount(slots.flatten(), minlength=self.cfg.slots).to(self.hit_counter)
        out = (self.values[slots] * w.unsqueeze(-1).to(self.values.dtype)).sum(dim=-2)
        if self.gate is not None:
            out = out * F.silu(self.gate(x))
        return out


def _decoder_layers(model) -> nn.ModuleList:
    base = getattr(model, "base_model", model)
    for path in ("model.layers", "model.model.layers", "transformer.h", "layers"):
        obj = base
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
            return obj
        except AttributeError:
            continue
    raise ValueError(f"cannot find the decoder layers of {type(model).__name__}")


def add_memory(model, cfg: MemoryConfig) -> nn.ModuleDict:
    """Attach a memory beside the MLP of each chosen layer (forward hook: mlp(x) + memory(x)).
    Returns the memories, also reachable as `model.kbake_memory`."""
    layers = _decoder_layers(model)
    d_model = model.config.hidden_size
    dtype = next(model.parameters()).dtype
    device = next(model.parameters()).device
    mems = nn.ModuleDict()
    for idx in cfg.resolved_layers(len(layers)):
        mem = ProductKeyMemory(d_model, cfg).to(device=device, dtype=dtype)
        mems[str(idx)] = mem

        def hook(module, inputs, output, mem=mem):
            return output + mem(inputs[0])

        layers[idx].mlp.register_forward_hook(hook)
    model.kbake_memory = mems  # registered as a submodule: saved, moved and counted with the model
    model.kbake_memory_config = cfg
    return mems


MEMORY_FILE = "memory.safetensors"
MEMORY_CONFIG = "memory_config.json"


def save_memory(model, folder: Path, base_model: str) -> None:
    """Save only what the memory adds: its config, the base model's name, its weights."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.kbake_memory.state_dict().items()}
    save_file(state, str(folder / MEMORY_FILE))
    (folder / MEMORY_CONFIG).write_text(json.dumps({"base_model": base_model, **asdict(model.kbake_memory_config)}, indent=2))


def load_memory(model, folder: Path) -> nn.ModuleDict:
    from safetensors.torch import load_file

    meta = json.loads((Path(folder) / MEMORY_CONFIG).read_text())
    meta.pop("base_model", None)
    mems = add_memory(model, MemoryConfig(**meta))
    mems.load_state_dict(load_file(str(Path(folder) / MEMORY_FILE)))
    return mems


def count_hits(model, batches, device=None) -> torch.Tensor:
    """How often each slot of each memory is read, per batch of input ids:
    an int tensor [n_batches, n_memories, slots]."""
    mems = list(model.kbake_memory.values())
    rows = []
    with torch.no_grad():
        for ids in batches:
            for m in mems:
                m.hit_counter = torch.zeros(m.cfg.slots, dtype=torch.long, device=m.values.device)
            model(input_ids=ids.to(device or next(model.parameters()).device))
            rows.append(torch.stack([m.hit_counter.cpu() for m in mems]))
        for m in mems:
            m.hit_counter = None
    return torch.stack(rows)


def tfidf_slots(new_hits: torch.Tensor, background_hits: torch.Tensor, top_t: int) -> torch.Tensor:
    """Sparse memory finetuning (Lin et al. 2025): rank slots by TF-IDF, where TF is how often
    the new data reads a slot and IDF = log((B + 1) / (df + 1)), df the number of the B
    background (general-text) batches that read it at all. Returns a bool mask
    [n_memories, slots] of the top-t slots per memory: the only rows of V that will train."""
    tf = new_hits.sum(dim=0).float()  # [n_mem, slots]
    n_bg = background_hits.shape[0]
    df = (background_hits > 0).sum(dim=0).float()
    score = tf * torch.log((n_bg + 1) / (df + 1))
    score[tf == 0] = -1.0  # a slot the new data never reads cannot help it
    mask = torch.zeros_like(score, dtype=torch.bool)
    t = min(top_t, score.shape[1])
    idx = score.topk(t, dim=1).indices
    mask.scatter_(1, idx, True)
    return mask & (tf > 0)

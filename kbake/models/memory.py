"""Product-key memory layers (Lample et al. 2019, "Large memory layers with product keys";
Berges et al. 2024, "Memory layers at scale"), added as a residual branch beside the MLP
of chosen decoder layers of a pretrained model.

A query of the layer's input is split in two halves; each half scores its own set of √N
sub-keys; the top-k of each give k² candidate slots (the Cartesian product), of which the
top-k by summed score are read: out = scale · Σ softmax(score)_i · V[slot_i]. V starts at
zero, so the branch adds exactly 0 until it is trained.

Addressing. A retrofit has to give the addresses meaning (Kim & Jung 2020 retrofit product
keys into a pretrained LM; Lin et al. 2025 start from a model pretrained with its memory).
With `addressing: activations` (the default) they come from the model's own hidden states
at the layer (`fit_addresses`): the query map is the centred, PCA-whitened projection of the
MLP's input (its top `key_dim` components, alternated between the halves so each half gets
a share of the variance), and each half's sub-keys are k-means centroids of those queries,
scored as -‖q - c‖²/2 up to a term constant per query (q·c - ‖c‖²/2), so a token reads the
slots of the centroid pairs nearest its hidden state: tokens in similar contexts — a fact's
passage and a question about it, at the position that predicts the answer — share slots.
The read-out is scaled by the RMS of the MLP's output at the layer, so a value row of unit
RMS adds as much as the MLP does. `addressing: random` keeps the random, frozen addresses
of the first version (measured to learn nothing: docs/results.md).
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
    layers: list[int] = field(default_factory=list)
    """Decoder layers that get a memory branch, Python-style (-1 is the last); empty: the middle layer."""
    slots: int = 16384
    """N, the number of memory slots; must be a perfect square (√N sub-keys per half)."""
    k: int = 32
    """Slots read per token (top-k over the product keys)."""
    key_dim: int = 128
    """Query / key width (split in two halves of key_dim/2)."""
    gated: bool = False
    """Multiply the read-out by silu(W_g x) (Berges et al. 2024); a random gate in a retrofit adds noise."""
    addressing: str = "activations"
    """activations (queries and keys fitted to the model's hidden states) | random."""

    def resolved_layers(self, n_layers: int) -> list[int]:
        if not self.layers:
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
        if cfg.addressing not in ("activations", "random"):
            raise ValueError(f"memory addressing must be activations or random, got {cfg.addressing!r}")
        self.cfg = cfg
        self.n_sub = n_sub
        half = cfg.key_dim // 2
        self.query = nn.Linear(d_model, cfg.key_dim, bias=True)
        self.keys = nn.Parameter(torch.randn(2, n_sub, half) / math.sqrt(half))
        self.register_buffer("key_bias", torch.zeros(2, n_sub))  # -‖c‖²/2 for fitted centroids
        self.register_buffer("out_scale", torch.ones(()))
        self.values = nn.Parameter(torch.zeros(cfg.slots, d_model))  # zero: the branch starts as a no-op
        self.gate = nn.Linear(d_model, d_model, bias=False) if cfg.gated else None
        # Random queries are normalised to keep scores in range; fitted ones are already whitened.
        self.query_norm = nn.LayerNorm(cfg.key_dim, elementwise_affine=False) if cfg.addressing == "random" else None
        nn.init.normal_(self.query.weight, std=1 / math.sqrt(d_model))
        nn.init.zeros_(self.query.bias)
        if self.gate is not None:
            nn.init.normal_(self.gate.weight, std=1 / math.sqrt(d_model))
        # Keep each lookup (slots, weights): "train" in training mode only (sparse finetuning), "all" (diagnostics).
        self.record: str | bool = False
        self.reads: list[tuple[torch.Tensor, torch.Tensor]] = []

    def lookup(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(slot indices, softmax weights), each [..., k], for inputs x [..., d_model]."""
        k = self.cfg.k
        q = self.query(x)
        if self.query_norm is not None:
            q = self.query_norm(q)
        q1, q2 = q.chunk(2, dim=-1)
        s1 = q1 @ self.keys[0].T + self.key_bias[0]  # [..., n_sub]
        s2 = q2 @ self.keys[1].T + self.key_bias[1]
        kk = min(k, self.n_sub)
        v1, i1 = s1.topk(kk, dim=-1)
        v2, i2 = s2.topk(kk, dim=-1)
        # Product keys: the score of slot (a, b) is s1[a] + s2[b]; search the k×k candidates only.
        cand = (v1.unsqueeze(-1) + v2.unsqueeze(-2)).flatten(-2)  # [..., kk*kk]
        best, pos = cand.topk(min(k, kk * kk), dim=-1)
        slots = i1.gather(-1, pos // kk) * self.n_sub + i2.gather(-1, pos % kk)
        return slots, F.softmax(best.float(), dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        slots, w = self.lookup(x)
        if self.record == "all" or (self.record == "train" and self.training):
            self.reads.append((slots.detach(), w.detach()))
        out = (self.values[slots] * w.unsqueeze(-1).to(self.values.dtype)).sum(dim=-2) * self.out_scale
        if self.gate is not None:
            out = out * F.silu(self.gate(x))
        return out.to(x.dtype)


def decoder_layers(model) -> nn.ModuleList:
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
    layers = decoder_layers(model)
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


# ---------------------------------------------------------------- fitting the addresses


@torch.no_grad()
def capture_mlp_io(model, blocks: list[torch.Tensor]) -> dict[str, list[tuple[torch.Tensor, torch.Tensor]]]:
    """Per memory: for each block of input ids, the MLP's input and output at its layer
    ([tokens, d_model] each, float32), with the memory branch itself silent."""
    layers = decoder_layers(model)
    out: dict[str, list] = {name: [] for name in model.kbake_memory}
    handles, current = [], {}
    for name in model.kbake_memory:
        def grab(module, inputs, output, name=name):
            current[name] = (inputs[0].detach().float().reshape(-1, inputs[0].shape[-1]),
                             output.detach().float().reshape(-1, output.shape[-1]))
        # registered after the memory's own hook would see mlp+memory; values are zero at fit time anyway
        handles.append(layers[int(name)].mlp.register_forward_hook(grab, prepend=True))
    device = next(model.parameters()).device
    try:
        for ids in blocks:
            model(input_ids=ids.reshape(1, -1).to(device))
            for name in out:
                out[name].append(current[name])
    finally:
        for h in handles:
            h.remove()
    return out


def kmeans(x: torch.Tensor, n: int, iters: int, generator: torch.Generator) -> torch.Tensor:
    """Lloyd's k-means of the rows of x into n centroids (empty clusters restart at a random row)."""
    c = x[torch.randperm(len(x), generator=generator)[:n]].clone()
    if len(c) < n:  # fewer points than centroids: pad with jittered copies
        extra = c[torch.randint(len(c), (n - len(c),), generator=generator)]
        c = torch.cat([c, extra + 1e-3 * torch.randn(extra.shape, generator=generator)])
    for _ in range(iters):
        assign = torch.cdist(x, c).argmin(dim=1)
        sums = torch.zeros_like(c).index_add_(0, assign, x)
        counts = torch.bincount(assign, minlength=n).unsqueeze(1).to(x.dtype)
        empty = counts.squeeze(1) == 0
        c = torch.where(empty.unsqueeze(1), x[torch.randint(len(x), (n,), generator=generator)], sums / counts.clamp(min=1))
    return c


@torch.no_grad()
def fit_addresses(mem: ProductKeyMemory, inputs: torch.Tensor, outputs: torch.Tensor, *, seed: int,
                  iters: int = 20) -> dict:
    """Fit one memory's query map, sub-keys and read-out scale to the MLP's inputs and
    outputs at its layer (rows of `inputs`/`outputs`); returns what was fitted, for the log."""
    g = torch.Generator().manual_seed(seed)
    x = inputs.float()
    mu = x.mean(dim=0)
    cov = (x - mu).T @ (x - mu) / max(len(x) - 1, 1)
    evals, evecs = torch.linalg.eigh(cov)  # ascending
    top = evals.flip(0)[: mem.cfg.key_dim].clamp(min=1e-6)
    vecs = evecs.flip(1)[:, : mem.cfg.key_dim]
    order = torch.cat([torch.arange(0, mem.cfg.key_dim, 2), torch.arange(1, mem.cfg.key_dim, 2)])  # alternate halves
    w = (vecs / top.sqrt()).T[order]  # [key_dim, d]: whitened principal components
    mem.query.weight.copy_(w.to(mem.query.weight.dtype))
    mem.query.bias.copy_((-w @ mu).to(mem.query.bias.dtype))
    q = x @ w.T - w @ mu
    half = mem.cfg.key_dim // 2
    for h, part in enumerate((q[:, :half], q[:, half:])):
        c = kmeans(part, mem.n_sub, iters, g)
        mem.keys[h].copy_(c.to(mem.keys.dtype))
        mem.key_bias[h].copy_((-(c * c).sum(dim=1) / 2).to(mem.key_bias.dtype))
    mem.out_scale.fill_(float(outputs.float().pow(2).mean().sqrt()))
    explained = float(top.sum() / evals.clamp(min=0).sum())
    return {"vectors": len(x), "variance_explained": round(explained, 4), "out_scale": round(float(mem.out_scale), 5)}


# ---------------------------------------------------------------- diagnostics


def slot_entropy(hits: torch.Tensor) -> dict:
    """Entropy of slot usage (counts per slot): in nats, as a share of the uniform maximum,
    and as the effective number of slots exp(H)."""
    p = hits.float() / hits.sum().clamp(min=1)
    h = float(-(p[p > 0] * p[p > 0].log()).sum())
    return {"entropy": round(h, 4), "entropy_share": round(h / math.log(len(hits)), 4),
            "effective_slots": round(math.exp(h), 1)}


def trained_rows(mem: ProductKeyMemory) -> torch.Tensor:
    """Bool [slots]: value rows that training moved from zero."""
    return mem.values.detach().abs().sum(dim=1) > 0


@torch.no_grad()
def read_share(model, sequences: list[list[int]], positions: list[list[int]]) -> float | None:
    """Share of the memories' read weight that falls on trained value rows at the given
    positions (e.g. where a probe's answer is predicted), averaged over positions and memories."""
    mems = list(model.kbake_memory.values())
    masks = [trained_rows(m) for m in mems]
    device = next(model.parameters()).device
    total, n = 0.0, 0
    for m in mems:
        m.record, m.reads = "all", []
    try:
        for ids, pos in zip(sequences, positions):
            if not pos:
                continue
            model(input_ids=torch.tensor([ids], device=device))
            for m, mask in zip(mems, masks):
                slots, w = m.reads.pop()
                slots, w = slots[0, pos], w[0, pos]
                total += float((w * mask[slots].to(w.dtype)).sum(dim=-1).sum())
                n += len(pos)
    finally:
        for m in mems:
            m.record, m.reads = False, []
    return total / n if n else None


# ---------------------------------------------------------------- saving


MEMORY_FILE = "memory.safetensors"
MEMORY_CONFIG = "memory_config.json"


def save_memory(model, folder: Path, base_model: str) -> None:
    """Save only what the memory adds: its config (layers resolved), the base model's name, its weights."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.kbake_memory.state_dict().items()}
    save_file(state, str(folder / MEMORY_FILE))
    cfg = asdict(model.kbake_memory_config)
    cfg["layers"] = [int(n) for n in model.kbake_memory]
    (folder / MEMORY_CONFIG).write_text(json.dumps({"base_model": base_model, **cfg}, indent=2))


def load_memory(model, folder: Path) -> nn.ModuleDict:
    from safetensors.torch import load_file

    meta = json.loads((Path(folder) / MEMORY_CONFIG).read_text())
    meta.pop("base_model", None)
    if "addressing" not in meta:  # saved by kbake 0.1: random addressing, [-1] meant the middle layer
        meta["addressing"] = "random"
        if meta.get("layers") == [-1]:
            meta["layers"] = []
    mems = add_memory(model, MemoryConfig(**meta))
    state = load_file(str(Path(folder) / MEMORY_FILE))
    for name, mem in mems.items():  # 0.1 files have no key_bias / out_scale buffers: keep their defaults
        for buf in ("key_bias", "out_scale"):
            state.setdefault(f"{name}.{buf}", getattr(mem, buf).detach().clone())
    mems.load_state_dict(state)
    return mems


def lookup_hits(mem: ProductKeyMemory, vectors: torch.Tensor) -> torch.Tensor:
    """How often each slot is read by the given MLP inputs [n, d_model] (a count per slot)."""
    with torch.no_grad():
        slots, _ = mem.lookup(vectors.to(mem.values.dtype))
    return torch.bincount(slots.flatten().cpu(), minlength=mem.cfg.slots)


def idf(background_hits: torch.Tensor) -> torch.Tensor:
    """Sparse memory finetuning (Lin et al. 2025) weighs a slot's hits (TF) by IDF =
    log((B + 1) / (df + 1)), df the number of the B background (general-text) blocks that
    read it at all: from hits [B, ..., slots], one IDF per slot."""
    n_bg = background_hits.shape[0]
    df = (background_hits > 0).sum(dim=0).float()
    return torch.log((n_bg + 1) / (df + 1))


def top_tfidf(tf: torch.Tensor, idf_: torch.Tensor, top_t: int) -> torch.Tensor:
    """Bool mask [..., slots] of the top-t slots by tf·idf among those read at all (tf > 0):
    the only value rows that train this step."""
    score = tf * idf_
    score[tf == 0] = -1.0  # a slot the new data never reads cannot help it
    mask = torch.zeros_like(score, dtype=torch.bool)
    t = min(top_t, score.shape[-1])
    mask.scatter_(-1, score.topk(t, dim=-1).indices, True)
    return mask & (tf > 0)

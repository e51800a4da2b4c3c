"""TinyLoRA: a low-rank update driven by a handful of trainable numbers (Morris et al. 2026,
"Learning to Reason in 13 Parameters"), built on LoRA-XS (Bałazy et al. 2024).

Each adapted linear layer W (out × in) keeps its rank-r truncated SVD, W ≈ U Σ Vᵀ, frozen.
LoRA-XS trains an r × r matrix R between them: W' = W + U Σ R Vᵀ. TinyLoRA makes R a
combination of u fixed random r × r matrices, R = Σᵢ vᵢ Pᵢ, and trains only the vector
v ∈ ℝᵘ, which several layers may share ("tying"). The trainable count is exactly
u × (number of tie groups): with `tie: all`, u numbers move the whole model.

v starts at zero, so the adapted model equals its base until trained. Written by hand
(peft has LoRA-XS-like tuners but none with a shared random-basis vector); the frozen
bases are saved with the vector, so loading never depends on an SVD's signs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn as nn

ADAPTER_FILE = "tiny_adapter.safetensors"
CONFIG_FILE = "tiny_adapter.json"


@dataclass
class TinyConfig:
    params: int = 16
    """u: trainable numbers per tie group."""
    rank: int = 2
    """r: rank of the frozen SVD bases of each adapted weight."""
    tie: str = "all"
    """all: one vector for every adapted layer; layer: one per decoder layer; module: one per linear layer."""
    targets: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                        "up_proj", "down_proj"])
    """Names of the linear layers adapted (the last part of their module path)."""
    seed: int = 0
    """Seed of the random matrices Pᵢ."""


class TinyLoRALinear(nn.Module):
    """base(x) + x V Rᵀ Σ Uᵀ with R = Σᵢ vᵢ Pᵢ: the update U Σ R Vᵀ of TinyLoRA, never materialised."""

    def __init__(self, base: nn.Linear, vector: nn.Parameter, rank: int, generator: torch.Generator):
        super().__init__()
        self.base = base
        # Shared with the other layers of its tie group and registered once, at model.kbake_tiny
        # (a list hides it from this module's parameters: one tensor under many names breaks saving).
        self._vector = [vector]
        w = base.weight.detach().float()
        u_, s, vt = torch.linalg.svd(w, full_matrices=False)
        r = min(rank, s.numel())
        # Not in state_dict (save_tiny writes them): a trainer's checkpoint holds the vectors only.
        self.register_buffer("U", u_[:, :r].contiguous(), persistent=False)
        self.register_buffer("S", s[:r].contiguous(), persistent=False)
        self.register_buffer("Vt", vt[:r].contiguous(), persistent=False)
        # Pᵢ ~ N(0, 1/r): R's entries then have the scale of ‖v‖ whatever r is.
        self.register_buffer("P", torch.randn(vector.numel(), r, r, generator=generator) / r ** 0.5,
                             persistent=False)

    @property
    def vector(self) -> nn.Parameter:
        return self._vector[0]

    def delta_r(self) -> torch.Tensor:
        return torch.einsum("u,uij->ij", self.vector.float(), self.P)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x @ self.Vt.to(x.dtype).T                 # [.., r]
        h = h @ self.delta_r().to(x.dtype).T * self.S.to(x.dtype)
        return self.base(x) + h @ self.U.to(x.dtype).T

    def merged_weight(self) -> torch.Tensor:
        delta = self.U @ torch.diag(self.S) @ self.delta_r() @ self.Vt
        return self.base.weight + delta.to(self.base.weight.dtype)


def _group_key(name: str, tie: str) -> str:
    if tie == "all":
        return "all"
    if tie == "module":
        return name
    parts = name.split(".")  # model.layers.<i>.self_attn.q_proj -> model.layers.<i>
    for i, p in enumerate(parts):
        if p.isdigit():
            return ".".join(parts[: i + 1])
    return name


def apply_tiny_lora(model: nn.Module, cfg: TinyConfig) -> nn.ParameterDict:
    """Freeze `model` and replace its target linear layers by TinyLoRA ones, in place.
    Returns the trainable vectors by tie group (also at `model.kbake_tiny`)."""
    for p in model.parameters():
        p.requires_grad_(False)
    targets = [(name, m) for name, m in model.named_modules()
               if isinstance(m, nn.Linear) and name.split(".")[-1] in cfg.targets]
    if not targets:
        raise ValueError(f"no linear layer named any of {cfg.targets} in the model")
    gen = torch.Generator().manual_seed(cfg.seed)
    vectors: dict[str, nn.Parameter] = {}
    for name, lin in targets:
        key = _group_key(name, cfg.tie)
        if key not in vectors:
            vectors[key] = nn.Parameter(torch.zeros(cfg.params, device=lin.weight.device))
        model.set_submodule(name, TinyLoRALinear(lin, vectors[key], cfg.rank, gen).to(lin.weight.device))
    vecs = nn.ParameterDict({k.replace(".", "__"): v for k, v in vectors.items()})
    model.kbake_tiny = vecs  # the one place the vectors are registered as parameters
    model.kbake_tiny_config = cfg
    return vecs


def tiny_modules(model: nn.Module) -> dict[str, TinyLoRALinear]:
    return {n: m for n, m in model.named_modules() if isinstance(m, TinyLoRALinear)}


def save_tiny(model: nn.Module, folder: Path) -> None:
    """The vectors, the frozen bases and the random matrices, so loading needs no SVD."""
    from safetensors.torch import save_file

    tensors = {f"vector.{k}": v.detach().float().cpu().contiguous() for k, v in model.kbake_tiny.items()}
    for name, m in tiny_modules(model).items():
        for buf in ("U", "S", "Vt", "P"):
            tensors[f"{name}.{buf}"] = getattr(m, buf).detach().cpu().contiguous()
    folder = Path(folder)
    save_file(tensors, str(folder / ADAPTER_FILE))
    (folder / CONFIG_FILE).write_text(json.dumps(asdict(model.kbake_tiny_config), indent=2))


def load_tiny(model: nn.Module, folder: Path, *, merge: bool = False) -> nn.Module:
    """The adapter saved in `folder` on `model` (its base); `merge` folds it into the weights."""
    from safetensors.torch import load_file

    folder = Path(folder)
    cfg = TinyConfig(**json.loads((folder / CONFIG_FILE).read_text()))
    tensors = load_file(str(folder / ADAPTER_FILE))
    model = _apply_from(model, cfg, tensors)
    return merge_tiny(model) if merge else model


def _apply_from(model: nn.Module, cfg: TinyConfig, tensors: dict) -> nn.Module:
    vecs = apply_tiny_lora(model, cfg)
    with torch.no_grad():
        for k, v in vecs.items():
            v.copy_(tensors[f"vector.{k}"])
        for name, m in tiny_modules(model).items():
            for buf in ("U", "S", "Vt", "P"):
                getattr(m, buf).copy_(tensors[f"{name}.{buf}"])
    return model


def merge_tiny(model: nn.Module) -> nn.Module:
    """Fold every TinyLoRA update into its base weight and put the plain linear layers back."""
    with torch.no_grad():
        for name, m in tiny_modules(model).items():
            m.base.weight.copy_(m.merged_weight())
            model.set_submodule(name, m.base)
    for attr in ("kbake_tiny", "kbake_tiny_config"):
        if hasattr(model, attr):
            delattr(model, attr)
    return model

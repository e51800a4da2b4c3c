"""Which number format a stage computes in: `auto | fp32 | bf16 | fp16`, one rule for
train, eval and the local generator.

`auto` picks bfloat16 only where the hardware computes it natively: a GPU that reports
bf16 support, or a CPU whose instruction set has bf16 dot products (x86 AVX512-BF16 or
AMX-BF16, Arm's BF16 extension), read from the flags PyTorch's own CPU feature detection
(cpuinfo) reports, never from the vendor's name. Elsewhere bf16 is emulated and slower
than float32, so `auto` stays fp32 there.

How each stage uses the answer (docs/train.md, docs/eval.md):
- training: float32 master weights and optimiser state under autocast (accelerate's
  `mixed_precision`), so only the matrix products run in bf16;
- eval and generation: the weights themselves are cast to bf16 (inference only; halving
  the bytes read per decode step is the point), logits are taken back to float32 before
  any log-softmax.
"""

from __future__ import annotations

from functools import cache

import torch

# CPU feature flags (torch.cpu.get_capabilities(), from cpuinfo) that mean native bf16 arithmetic.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16", "sve_bf16", "neon_bf16")


@cache
def cpu_native_bf16() -> bool:
    """True when this CPU has bf16 dot-product instructions (see NATIVE_BF16_FLAGS)."""
    caps = getattr(torch.cpu, "get_capabilities", None)
    if caps is not None:
        try:
            flags = caps()
        except Exception:  # noqa: BLE001 - a failed probe means "not known to be native"
            flags = {}
        if any(flags.get(f) for f in NATIVE_BF16_FLAGS):
            return True
    probe = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    return bool(probe and probe())


def device_native_bf16(device: str | torch.device = "cpu") -> bool:
    """Native bf16 on `device` ('cpu', 'cuda', 'cuda:1', ...)."""
    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if kind == "cpu":
        return cpu_native_bf16()
    return False


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_precision(requested: str, device: str | torch.device | None = None) -> str:
    """The concrete format for `requested` on `device`: 'fp32', 'bf16' or 'fp16'.

    auto: bf16 where native, else fp16 on a GPU without bf16, else fp32. An explicit
    'bf16' is honoured everywhere (emulated where not native: slower, same numbers);
    'fp16' only on a GPU (CPUs have no fp16 matmul worth using), else fp32.
    """
    device = device or default_device()
    kind = torch.device(device).type
    if requested in ("fp32", "bf16"):
        return requested
    if requested == "fp16":
        return "fp16" if kind == "cuda" else "fp32"
    if requested != "auto":
        raise ValueError(f"precision must be auto, fp32, bf16 or fp16, got {requested!r}")
    if device_native_bf16(device):
        return "bf16"
    return "fp16" if kind == "cuda" else "fp32"


def torch_dtype(precision: str) -> torch.dtype:
    """The dtype of a resolved precision ('fp32', 'bf16', 'fp16')."""
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def mixed_precision_flag(precision: str) -> str:
    """accelerate's `mixed_precision` value for a resolved precision."""
    return {"fp32": "no", "bf16": "bf16", "fp16": "fp16"}[precision]


def cast_for_inference(model, precision: str):
    """Cast an inference model's weights to `precision` (in place); returns the model."""
    dtype = torch_dtype(precision)
    if next(model.parameters()).dtype != dtype:
        model.to(dtype)
    return model

"""Which number format a stage computes in: `auto | fp32 | bf16 | fp16`, one rule for
train, eval and the local generator.

`auto` picks bfloat16 only where the hardware computes it natively: a GPU that reports
bf16 support, or a CPU whose instruction set has bf16 dot products (x86 AVX512-BF16 or
AMX-BF16, Arm's BF16 extension), read from the flags PyTorch's own CPU feature detection
(cpuinfo) reports, never from the vendor's name, *and* on which a bf16 matrix product is
measured to run at least MIN_CPU_BF16_SPEEDUP times as fast as float32 at the shapes of
a small model's layers (about 0.3 s, once per process). The flag alone is not enough: on an Intel Xeon reporting AVX512-BF16 but no
AMX (2026-12-06) a bf16 matmul ran at 0.47x float32 and LoRA training at 0.55x, while on an
AMD EPYC with the same flag bf16 ran at 2.7x (benchmarks/RESULTS.md, "Hardware").
Elsewhere bf16 is emulated and slower than float32, so `auto` stays fp32 there.

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
# bf16 is chosen on a CPU only if its matmul beats float32 by this much: measured 2.7x (EPYC)
# and 0.47x (Xeon without AMX), so the margin keeps a noisy timing from flipping the choice.
MIN_CPU_BF16_SPEEDUP = 1.25


@cache
def cpu_native_bf16() -> bool:
    """True when this CPU has bf16 dot-product instructions and they pay: the flag
    (cpu_bf16_flag) and a measured matmul speedup of at least MIN_CPU_BF16_SPEEDUP."""
    return cpu_bf16_flag() and cpu_bf16_speedup() >= MIN_CPU_BF16_SPEEDUP


@cache
def cpu_bf16_speedup(tokens: int = 2048, width: int = 576, hidden: int = 1536, reps: int = 3) -> float:
    """float32 time / bf16 time of a transformer MLP's two products (tokens x width by
    width x hidden, then back; the embedded 135M model at a batch of 2,048 tokens) on this
    CPU, best of `reps` after one warm-up (about 0.3 s). Timed at the model's shapes, not a
    square: on the Xeon above a 1024^3 product ran 1.55x faster in bf16 while these ran 0.36x."""
    import time

    gen = torch.Generator().manual_seed(0)
    pairs = [(torch.randn(tokens, width, generator=gen), torch.randn(width, hidden, generator=gen)),
             (torch.randn(tokens, hidden, generator=gen), torch.randn(hidden, width, generator=gen))]
    best = {}
    for dtype in (torch.float32, torch.bfloat16):
        cast = [(a.to(dtype), b.to(dtype)) for a, b in pairs]
        times = []
        for rep in range(reps + 1):
            t = time.perf_counter()
            for a, b in cast:
                a @ b
            if rep:  # the first pass warms the kernels up
                times.append(time.perf_counter() - t)
        best[dtype] = min(times)
    return best[torch.float32] / max(best[torch.bfloat16], 1e-9)


@cache
def cpu_bf16_flag() -> bool:
    """True when this CPU reports bf16 dot-product instructions (see NATIVE_BF16_FLAGS)."""
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

"""This machine's rates, measured in the calling process: the 2048 x 2048 matmul in fp32 and
bf16 (the best case for the arithmetic floor) and the memory read rate. Shared by
precision.py and decode.py (run them from the repository root)."""

import time

import torch


def per_call(f, repeats: int) -> float:
    """Seconds per call of `f`, after one untimed warm-up call."""
    f()
    t = time.perf_counter()
    for _ in range(repeats):
        f()
    return (time.perf_counter() - t) / repeats


def machine_rates(n: int = 2048) -> dict[str, float]:
    """{'fp32': FLOP/s, 'bf16': FLOP/s, 'memory': bytes/s}."""
    rates = {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        x, y = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        rates[name] = 2 * n**3 / per_call(lambda x=x, y=y: x @ y, 10)
    big = torch.ones(2**28, dtype=torch.float32)  # 1 GiB
    rates["memory"] = big.numel() * 4 / per_call(lambda: big.sum(), 5)
    return rates

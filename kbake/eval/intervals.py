"""Error bars for every change against the base model: paired bootstrap 95% intervals over
items (Efron & Tibshirani 1993, percentile method; paired as in Koehn 2004 for MT), and the
counts of items that went from wrong to right (gained) and right to wrong (lost).

Paired: each resample draws the same items for the base and the trained model, so the
interval reflects only the items on which the two disagree, which is far narrower than two
independent intervals.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

N_BOOT = 2000
LEVEL = 0.95
POWER = 0.8


def detectable_change(d, level: float = LEVEL, power: float = POWER) -> float | None:
    """The smallest mean change these items would detect with `power` in a two-sided test at
    1 - `level`, given the paired differences `d` observed: (z_{1-a/2} + z_{power}) * sqrt(mean(d^2) / n).
    For 0/1 scores mean(d^2) is the share of items the two models disagree on, and this is the
    normal approximation of McNemar's test's power (Connor 1987). None when no item moved."""
    d = np.asarray(d, dtype=float)
    second = float((d * d).mean()) if d.size else 0.0
    if second == 0:
        return None
    z = NormalDist().inv_cdf((1 + level) / 2) + NormalDist().inv_cdf(power)
    return z * math.sqrt(second / d.size)


def _indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n, size=(n_boot, n))


def _interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.quantile(samples, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def paired_bootstrap(base, new, *, n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL) -> dict | None:
    """Change of the mean from `base` to `new` (per-item scores of the same items, e.g. 0/1
    correctness or a margin): {diff, lo, hi, n, gained, lost, detectable}; gained/lost count the
    items whose score rose/fell, detectable is `detectable_change`. None when there are no items."""
    b, a = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    if b.shape != a.shape:
        raise ValueError(f"paired scores differ in length: {b.shape} vs {a.shape}")
    if b.size == 0:
        return None
    d = a - b
    idx = _indices(d.size, n_boot, seed)
    lo, hi = _interval(d[idx].mean(axis=1), level)
    return {"diff": float(d.mean()), "lo": lo, "hi": hi, "n": int(d.size),
            "gained": int((d > 0).sum()), "lost": int((d < 0).sum()), "detectable": detectable_change(d, level)}


def pooled_bootstrap(base, news, *, n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL) -> dict | None:
    """A change pooled over training seeds: `news` holds one list of per-item scores per seed
    (the same items as `base`). The estimate is the mean over seeds and items of new - base; the
    interval resamples seeds, then items (a two-level bootstrap, Davison & Hinkley 1997 §3.8),
    so seed-to-seed spread widens it as item noise does. Adds `seeds` and `per_seed` changes."""
    b = np.asarray(base, dtype=float)
    a = np.asarray(news, dtype=float)
    if a.ndim != 2 or a.shape[1] != b.size:
        raise ValueError(f"expected one row of {b.size} item scores per seed, got shape {a.shape}")
    return pooled_paired(np.broadcast_to(b, a.shape), a, n_boot=n_boot, seed=seed, level=level)


def pooled_paired(olds, news, *, n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL) -> dict | None:
    """`pooled_bootstrap` where the old scores differ by seed too (one row per seed, paired with
    the same seed's new row): e.g. each seed's model with retrieval against the same model closed
    book. Same two-level resampling of seeds, then items."""
    o = np.asarray(olds, dtype=float)
    a = np.asarray(news, dtype=float)
    if a.ndim != 2 or o.shape != a.shape:
        raise ValueError(f"expected one row of item scores per seed for both, got shapes {o.shape} and {a.shape}")
    if a.shape[1] == 0 or a.shape[0] == 0:
        return None
    d = a - o  # [seeds, items]
    rng = np.random.default_rng(seed)
    s_idx = rng.integers(0, d.shape[0], size=(n_boot, d.shape[0]))
    i_idx = rng.integers(0, d.shape[1], size=(n_boot, d.shape[1]))
    boot = np.array([d[s_idx[k]][:, i_idx[k]].mean() for k in range(n_boot)])
    lo, hi = _interval(boot, level)
    mean_d = d.mean(axis=0)
    return {"diff": float(d.mean()), "lo": lo, "hi": hi, "n": int(d.shape[1]), "seeds": int(d.shape[0]),
            "per_seed": [float(x) for x in d.mean(axis=1)],
            "gained": int((mean_d > 0).sum()), "lost": int((mean_d < 0).sum()),
            "detectable": detectable_change(mean_d, level)}


def pooled_difference(a, b, *, n_boot: int = N_BOOT, seed: int = 0, level: float = LEVEL) -> dict | None:
    """Setting a minus setting b, each trained on its own seeds and scored on the same items
    (one row of item scores per seed). The estimate is the mean over seeds and items of a minus
    that of b; the interval resamples each setting's seeds on their own (separate trainings) and
    the items once for both (the same probes): pooled_bootstrap's two levels, applied to a difference."""
    A = np.asarray(a, dtype=float)
    B = np.asarray(b, dtype=float)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1]:
        raise ValueError(f"expected one row per seed over the same items, got shapes {A.shape} and {B.shape}")
    if A.shape[1] == 0 or not len(A) or not len(B):
        return None
    rng = np.random.default_rng(seed)
    sa = rng.integers(0, A.shape[0], size=(n_boot, A.shape[0]))
    sb = rng.integers(0, B.shape[0], size=(n_boot, B.shape[0]))
    items = rng.integers(0, A.shape[1], size=(n_boot, A.shape[1]))
    boot = np.array([A[sa[k]][:, items[k]].mean() - B[sb[k]][:, items[k]].mean() for k in range(n_boot)])
    lo, hi = _interval(boot, level)
    mean_d = A.mean(axis=0) - B.mean(axis=0)
    return {"diff": float(mean_d.mean()), "lo": lo, "hi": hi, "n": int(A.shape[1]),
            "seeds": [int(A.shape[0]), int(B.shape[0])],
            "gained": int((mean_d > 0).sum()), "lost": int((mean_d < 0).sum()),
            "detectable": detectable_change(mean_d, level)}


def beyond_noise(c: dict | None) -> bool:
    """The 95% interval excludes zero."""
    return bool(c) and (c["lo"] > 0 or c["hi"] < 0)


def what_it_detects(changes: dict, keys: list[str]) -> dict:
    """Per accuracy comparison in `changes` (a model's vs_base): items, change, the detectable
    change, and whether the change cleared its interval. A change within noise whose set could
    miss a change of `detectable` says only that the effect, if any, is smaller than that."""
    out = {}
    for k in keys:
        c = changes.get(k)
        if c:
            out[k] = {"n": c["n"], "diff": c["diff"], "detectable": c.get("detectable"),
                      "beyond_noise": beyond_noise(c)}
    return out


def paired_bootstrap_ppl(base_nll, new_nll, tokens, *, n_boot: int = N_BOOT, seed: int = 0,
                         level: float = LEVEL) -> dict | None:
    """Relative change of token-weighted perplexity, exp(Σnll/Σtokens), resampling passages:
    {diff, lo, hi, n, gained, lost} with diff = ppl_new / ppl_base - 1 and gained/lost the
    passages whose perplexity fell/rose."""
    b, a, t = (np.asarray(x, dtype=float) for x in (base_nll, new_nll, tokens))
    if b.size == 0:
        return None
    idx = _indices(b.size, n_boot, seed)
    ratio = np.exp((a[idx].sum(1) - b[idx].sum(1)) / t[idx].sum(1)) - 1
    lo, hi = _interval(ratio, level)
    return {"diff": math.exp((a.sum() - b.sum()) / t.sum()) - 1, "lo": lo, "hi": hi, "n": int(b.size),
            "gained": int((a < b).sum()), "lost": int((a > b).sum())}


def items_to_see(discordant_rate: float, drop: float, level: float = LEVEL) -> int | None:
    """Items needed for a paired accuracy change of `drop` to clear its interval, given the
    share of items on which the two models disagree: the half-width z·sqrt(p/n) (the paired
    difference's standard error when the mean change is small) falls below `drop`."""
    if discordant_rate <= 0 or drop <= 0:
        return None
    z = NormalDist().inv_cdf((1 + level) / 2)
    return math.ceil(discordant_rate * (z / drop) ** 2)


def wilson(successes: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """Wilson score interval of a proportion (Wilson 1927): unlike the normal approximation it
    stays inside [0, 1] and is sound for the small counts of a probe set. None when n is 0."""
    if n == 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)

"""Seeds as an axis: trained models named `NAME-sSEED` (what `kbake train --seeds` writes) are
one recipe trained on several seeds. Their changes against the base are pooled: the mean over
seeds and items, with an interval that resamples seeds, then items
(`intervals.pooled_bootstrap`), and the per-seed changes beside it.

Computed from the per-item rows of metrics.json (`per_probe`, `general_eval_items`), so it
runs inside `kbake eval` and on any metrics.json written before it existed
(`benchmarks/fact_seeds.py`).
"""

from __future__ import annotations

import re

from kbake.eval.intervals import pooled_bootstrap, pooled_paired

SEED_NAME = re.compile(r"^(?P<group>.+)-s(?P<seed>\d+)$")


def seed_groups(names: list[str], min_seeds: int = 2) -> dict[str, list[str]]:
    """{group: its model names in seed order} for every group of at least `min_seeds` `NAME-sSEED` models."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for n in names:
        m = SEED_NAME.match(n)
        if m:
            groups.setdefault(m["group"], []).append((int(m["seed"]), n))
    return {g: [n for _, n in sorted(v)] for g, v in groups.items() if len(v) >= min_seeds}


def _pool(per_probe: list[dict], names: list[str], keep, key: str, old_key: str, own: bool = False) -> dict | None:
    """Each seed's `key` answers against the base's `old_key` ones, or with `own` against the same
    seed's `old_key` ones, over the probes `keep` holds; None when any answer is missing."""
    rows = [p for p in per_probe if keep(p)]
    olds = [n if own else "base" for n in names]
    if not rows or any(p["models"][o][old_key] is None or p["models"][n][key] is None
                       for p in rows for n, o in zip(names, olds)):
        return None
    return pooled_paired([[float(bool(p["models"][o][old_key])) for p in rows] for o in olds],
                         [[float(bool(p["models"][n][key])) for p in rows] for n in names])


def pooled_changes(metrics: dict, names: list[str]) -> dict:
    """The pooled changes of the models `names` (one per seed) against the base: closed book on
    all test probes, per probe kind and on dev (all and per kind); closed book minus RAG on the
    base (all and per kind); trained+RAG minus base RAG (`trained_rag`) and minus the same seed's
    closed book (`trained_rag_vs_closed`), which the advice tests; general-eval accuracy. Keys as
    in a model's vs_base."""
    pp = metrics["per_probe"]
    kinds = sorted({p["kind"] for p in pp if p.get("split", "test") == "test"})
    test = lambda p: p.get("split", "test") == "test"  # noqa: E731
    out = {"closed_book": _pool(pp, names, test, "closed", "closed"),
           "dev_closed_book": _pool(pp, names, lambda p: p.get("split") == "dev", "closed", "closed"),
           "closed_vs_base_rag": _pool(pp, names, test, "closed", "rag"),
           "trained_rag": _pool(pp, names, test, "rag", "rag"),
           "trained_rag_vs_closed": _pool(pp, names, test, "rag", "closed", own=True)}
    for k in kinds:
        out[f"closed_book_{k}"] = _pool(pp, names, lambda p, k=k: test(p) and p["kind"] == k, "closed", "closed")
        out[f"closed_vs_base_rag_{k}"] = _pool(pp, names, lambda p, k=k: test(p) and p["kind"] == k, "closed", "rag")
        out[f"dev_closed_book_{k}"] = _pool(pp, names, lambda p, k=k: p.get("split") == "dev" and p["kind"] == k,
                                            "closed", "closed")
    items = metrics.get("general_eval_items") or []
    if items:
        out["general_eval"] = pooled_bootstrap([float(bool(i["models"]["base"]["correct"])) for i in items],
                                               [[float(bool(i["models"][n]["correct"])) for i in items] for n in names])
    return {k: v for k, v in out.items() if v is not None}


def pool_seeds(metrics: dict) -> list[dict]:
    """One entry per seed group among the metrics' trained models: {group, models, seeds, changes}."""
    names = [m["name"] for m in metrics["models"][1:]]
    return [{"group": g, "models": ms, "seeds": [int(SEED_NAME.match(n)["seed"]) for n in ms],
             "changes": pooled_changes(metrics, ms)}
            for g, ms in seed_groups(names).items()]

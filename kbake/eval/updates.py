"""Facts that changed: did a model answer with the newest value, a stale one, or neither?

An update probe (`Probe.stale` non-empty) asks about a fact whose value changed between two
dated documents (docs/eval.md, "Changed facts"): its answer is the newest value and its
stale values are among the distractors, so the multiple-choice pick falls in one of three
outcomes. Models trained on last year's filing tend to keep the old value (EvolvingQA;
KUP 2025); RAG restricted to the newest documents should not.
"""

from __future__ import annotations

from kbake.eval.intervals import wilson

OUTCOMES = ("newest", "stale", "neither")


def outcome(probe, choice: str) -> str:
    """'newest', 'stale' or 'neither' for the option a model chose."""
    if choice == probe.answer:
        return "newest"
    return "stale" if any(choice == old["value"] for old in probe.stale) else "neither"


def update_stats(rows: list[dict | None], probes) -> dict | None:
    """Shares of the three outcomes over the test update probes, each with its Wilson
    interval; `rows` are per-probe results ({"choice": ...}) aligned with `probes`."""
    picked = [outcome(p, r["choice"]) for r, p in zip(rows, probes) if r is not None and p.stale and p.split == "test"]
    if not picked:
        return None
    n = len(picked)
    out: dict = {"n": n}
    for o in OUTCOMES:
        k = sum(x == o for x in picked)
        lo, hi = wilson(k, n)
        out[o] = k / n
        out[f"{o}_ci"] = [lo, hi]
    return out


def newest_documents(chunks: list[dict]) -> set[str]:
    """Chunk ids of each entity's newest dated document (and of undated documents, which have
    nothing newer): the corpus of 'RAG restricted to the newest'."""
    newest: dict[str, str] = {}
    for c in chunks:
        if c.get("as_of"):
            newest[c.get("entity", "")] = max(newest.get(c.get("entity", ""), ""), c["as_of"])
    return {c["chunk_id"] for c in chunks if not c.get("as_of") or c["as_of"] == newest.get(c.get("entity", ""), "")}

"""Filters on synthetic items: grounding, duplicates, and the leak filter against probes.

Each returns the kept items and how many it removed, so `kbake synth` can report them.
"""

from __future__ import annotations

import re

from kbake.ingest.dedup import dedup_texts
from kbake.run import Probe, SynthItem

_NUM = re.compile(r"\d[\d,]*(?:\.\d+)?")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
STOPWORDS = frozenset(
    "the a an and or of to in on for by with at from as is are was were be been it its this that these those "
    "which who whom what when where why how than then there their they them our we us you your he she his her "
    "not no do does did has have had can could would should will may might about into over under more most less "
    "per each also such other any all some one two three very up down out".split()
)


def numbers(text: str) -> set[str]:
    return {n.replace(",", "").rstrip(".") for n in _NUM.findall(text)}


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in STOPWORDS and len(w) > 2}


def is_grounded(answer: str, context: str, min_share: float) -> bool:
    """Every number in the answer occurs in the context, and at least `min_share` of its
    content words do: a cheap, transparent check that the answer comes from the source."""
    if not numbers(answer) <= numbers(context):
        return False
    words = content_words(answer)
    if not words:
        return bool(numbers(answer)) or answer.strip().lower() in {"yes", "no"}
    ctx = content_words(context)
    return len(words & ctx) / len(words) >= min_share


def grounding_filter(items: list[SynthItem], contexts: dict[str, str], min_share: float) -> tuple[list[SynthItem], int]:
    """QA items: the answer must be supported by its chunk(s). Rephrase/EntiGraph texts:
    every number they state must be in the source (no invented figures)."""
    kept = []
    for it in items:
        ctx = contexts[it.id]
        ok = is_grounded(it.answer, ctx, min_share) if it.question is not None else numbers(it.text) <= numbers(ctx)
        if ok:
            kept.append(it)
    return kept, len(items) - len(kept)


def dedup_filter(items: list[SynthItem], threshold: float) -> tuple[list[SynthItem], int]:
    keep, removed = dedup_texts([it.training_text() for it in items], threshold=threshold)
    return [items[i] for i in keep], removed["exact"] + removed["near"]


_SENT = re.compile(r"(?<=[.!?])\s+|\n+")


def leak_filter(items: list[SynthItem], probes: list[Probe], embedder, threshold: float) -> tuple[list[SynthItem], int]:
    """Drop every item that near-duplicates a probe question (cosine similarity of embeddings
    at or above `threshold`): QA items by their question, passages sentence by sentence."""
    if not items or not probes:
        return items, 0
    import numpy as np

    pv = embedder.encode([p.question for p in probes], normalize_embeddings=True, convert_to_numpy=True)
    texts, owner = [], []
    for k, it in enumerate(items):
        parts = [it.question] if it.question is not None else [s for s in _SENT.split(it.text) if len(s.split()) >= 4][:40]
        for s in parts:
            texts.append(s)
            owner.append(k)
    leaked = set()
    if texts:
        iv = embedder.encode(texts, normalize_embeddings=True, convert_to_numpy=True, batch_size=64)
        best = (iv @ pv.T).max(axis=1)
        leaked = {owner[j] for j in np.nonzero(best >= threshold)[0]}
    return [it for k, it in enumerate(items) if k not in leaked], len(leaked)

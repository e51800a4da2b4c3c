"""Exact and near-duplicate removal for chunks.

Exact: SHA-256 of the whitespace- and case-normalised text. Near: MinHash LSH over word
5-grams (datasketch), keeping the first occurrence, so re-ingesting is deterministic.
"""

from __future__ import annotations

import hashlib
import re

_WORD = re.compile(r"\w+", re.UNICODE)


def normalized_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()


def _shingles(text: str, n: int = 5) -> set[bytes]:
    words = _WORD.findall(text.lower())
    if len(words) < n:
        return {" ".join(words).encode()} if words else set()
    return {" ".join(words[i : i + n]).encode() for i in range(len(words) - n + 1)}


def minhash(text: str, num_perm: int = 128, seed: int = 1):
    from datasketch import MinHash

    m = MinHash(num_perm=num_perm, seed=seed)
    m.update_batch(list(_shingles(text)))
    return m


def dedup_texts(texts: list[str], threshold: float = 0.9, num_perm: int = 128) -> tuple[list[int], dict[str, int]]:
    """Indices of `texts` to keep (first occurrences win) and how many each rule removed."""
    from datasketch import MinHashLSH

    seen: set[str] = set()
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    sketches: dict[str, object] = {}
    keep: list[int] = []
    removed = {"exact": 0, "near": 0}
    for i, text in enumerate(texts):
        h = normalized_hash(text)
        if h in seen:
            removed["exact"] += 1
            continue
        seen.add(h)
        m = minhash(text, num_perm)
        # LSH proposes candidates; confirm with the estimated Jaccard so the threshold is what it says.
        if any(m.jaccard(sketches[c]) >= threshold for c in lsh.query(m)):
            removed["near"] += 1
            continue
        lsh.insert(str(i), m)
        sketches[str(i)] = m
        keep.append(i)
    return keep, removed

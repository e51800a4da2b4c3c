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


_PERMUTATIONS: dict[tuple[int, int], object] = {}


def minhash(text: str, num_perm: int = 128, seed: int = 1):
    from datasketch import MinHash

    # Permutations depend only on (num_perm, seed): draw them once, not for every chunk.
    perms = _PERMUTATIONS.get((num_perm, seed))
    if perms is None:
        m = MinHash(num_perm=num_perm, seed=seed)
        _PERMUTATIONS[(num_perm, seed)] = (m.permutations, m.scheme)
    else:
        m = MinHash(num_perm=num_perm, seed=seed, permutations=perms[0], scheme=perms[1])
    m.update_batch(list(_shingles(text)))
    return m


class StreamingDedup:
    """Exact + near-duplicate detection one text at a time (first occurrence wins), so a
    corpus can be deduplicated as it streams past; holds hashes and sketches, not text."""

    def __init__(self, threshold: float = 0.9, num_perm: int = 128):
        from datasketch import MinHashLSH

        self.threshold = threshold
        self.num_perm = num_perm
        self.seen: set[bytes] = set()
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
        self.sketches: dict[str, object] = {}  # key -> hash values only, not the MinHash object
        self.removed = {"exact": 0, "near": 0}

    def add(self, text: str) -> str | None:
        """None when `text` is new (and is now remembered), else 'exact' or 'near'."""
        h = bytes.fromhex(normalized_hash(text))[:16]
        if h in self.seen:
            self.removed["exact"] += 1
            return "exact"
        self.seen.add(h)
        m = minhash(text, self.num_perm)
        # LSH proposes candidates; confirm with the estimated Jaccard so the threshold is what it says.
        values = m.hashvalues.copy()
        if any((values == self.sketches[c]).mean() >= self.threshold for c in self.lsh.query(m)):
            self.removed["near"] += 1
            return "near"
        key = str(len(self.sketches))
        self.lsh.insert(key, m)
        self.sketches[key] = values
        return None


def dedup_texts(texts: list[str], threshold: float = 0.9, num_perm: int = 128) -> tuple[list[int], dict[str, int]]:
    """Indices of `texts` to keep (first occurrences win) and how many each rule removed."""
    d = StreamingDedup(threshold, num_perm)
    keep = [i for i, t in enumerate(texts) if d.add(t) is None]
    return keep, d.removed

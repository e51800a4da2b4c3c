"""Exact and near-duplicate removal for chunks.

Exact: SHA-256 of the whitespace- and case-normalised text. Near: MinHash LSH over word
5-grams (datasketch), keeping the first occurrence, so re-ingesting is deterministic.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import sqlite3
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

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
    corpus can be deduplicated as it streams past.

    The index lives in SQLite (a scratch file under `folder`, or memory when None), so RAM
    stays flat however many chunks pass: datasketch's MinHashLSH keeps every band table in
    Python dicts (about 2.8 KB a chunk) and its only on-disk storages are Redis/Cassandra.
    Banding is datasketch's own (b bands of r rows chosen for `threshold`); candidates are
    confirmed by the estimated Jaccard, so the threshold is what it says.
    """

    def __init__(self, threshold: float = 0.9, num_perm: int = 128, folder: str | Path | None = None):
        from datasketch import MinHashLSH

        self.threshold = threshold
        self.num_perm = num_perm
        lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)  # only for its optimal (b, r)
        self.bands, self.rows = lsh.b, lsh.r
        self.removed = {"exact": 0, "near": 0}
        self.path: Path | None = None
        if folder is not None:
            fd, name = tempfile.mkstemp(dir=folder, prefix=".dedup.", suffix=".sqlite")
            os.close(fd)
            self.path = Path(name)
        with self._disk_errors():
            self.db = sqlite3.connect(str(self.path) if self.path else ":memory:")
            # A scratch index, rebuilt on every ingest: no journal, no fsync, a bounded page cache.
            self.db.executescript("""
            PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-8192;
                CREATE TABLE exact (h BLOB PRIMARY KEY) WITHOUT ROWID;
                CREATE TABLE band (key INTEGER, id INTEGER, PRIMARY KEY (key, id)) WITHOUT ROWID;
                CREATE TABLE sketch (id INTEGER PRIMARY KEY, v BLOB);
            """)
        self.n = 0

    def _band_keys(self, values: np.ndarray) -> list[int]:
        r = self.rows
        return [int.from_bytes(hashlib.blake2b(values[i * r : (i + 1) * r].tobytes(), digest_size=8,
                                               salt=i.to_bytes(8, "little")).digest(), "little", signed=True)
                for i in range(self.bands)]

    @contextmanager
    def _disk_errors(self):
        """SQLite's write failures as the OSError they are, naming the file (the CLI's one-line error)."""
        try:
            yield
        except sqlite3.OperationalError as e:
            if "disk" not in str(e) and "full" not in str(e):
                raise
            self.close()
            code = errno.ENOSPC if "full" in str(e) else errno.EIO
            raise OSError(code, f"dedup index: {e}", str(self.path or ":memory:")) from None

    def add(self, text: str) -> str | None:
        """None when `text` is new (and is now remembered), else 'exact' or 'near'."""
        with self._disk_errors():
            return self._add(text)

    def _add(self, text: str) -> str | None:
        h = bytes.fromhex(normalized_hash(text))[:16]
        if self.db.execute("INSERT OR IGNORE INTO exact VALUES (?)", (h,)).rowcount == 0:
            self.removed["exact"] += 1
            return "exact"
        values = minhash(text, self.num_perm).hashvalues.astype(np.uint32)  # datasketch hashes are < 2**32
        keys = self._band_keys(values)
        marks = ",".join("?" * len(keys))
        for (v,) in self.db.execute(
                f"SELECT v FROM sketch WHERE id IN (SELECT DISTINCT id FROM band WHERE key IN ({marks}))", keys):
            if (np.frombuffer(v, dtype=np.uint32) == values).mean() >= self.threshold:
                self.removed["near"] += 1
                return "near"
        self.db.execute("INSERT INTO sketch VALUES (?, ?)", (self.n, values.tobytes()))
        self.db.executemany("INSERT OR IGNORE INTO band VALUES (?, ?)", [(k, self.n) for k in keys])
        self.n += 1
        return None

    def close(self) -> None:
        """Drop the index (its scratch file too)."""
        if getattr(self, "db", None) is not None:
            self.db.close()
            self.db = None
        if self.path is not None:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> StreamingDedup:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def dedup_texts(texts: list[str], threshold: float = 0.9, num_perm: int = 128) -> tuple[list[int], dict[str, int]]:
    """Indices of `texts` to keep (first occurrences win) and how many each rule removed."""
    with StreamingDedup(threshold, num_perm) as d:
        keep = [i for i, t in enumerate(texts) if d.add(t) is None]
        return keep, d.removed

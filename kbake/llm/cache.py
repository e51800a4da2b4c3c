"""The on-disk response cache and the cached front every stage calls.

SQLite, keyed by a hash of model + messages + sampling. Each answer is stored the
moment it arrives (WAL mode, one short transaction), so a killed run loses at most the
calls in flight, and a re-run with a warm cache makes zero model calls.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kbake.llm.base import Backend, BudgetExhausted, ChatRequest, Completion


class ResponseCache:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, completion TEXT, created REAL)"
        )
        self._db.commit()
        try:
            self.path.chmod(0o600)
        except OSError:
            pass

    def get_many(self, keys: Sequence[str]) -> dict[str, Completion]:
        out: dict[str, Completion] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = list(keys[i : i + 500])
                q = f"SELECT key, completion FROM responses WHERE key IN ({','.join('?' * len(part))})"
                for key, blob in self._db.execute(q, part):
                    c = Completion(**json.loads(blob))
                    c.cached = True
                    out[key] = c
        return out

    def put(self, key: str, model: str, completion: Completion) -> None:
        blob = json.dumps({k: v for k, v in asdict(completion).items() if k != "cached"})
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", (key, model, blob, time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


@dataclass
class CallStats:
    """What the cached front did: model calls made, answers served from cache, tokens spent."""

    calls: int = 0
    cache_hits: int = 0
    dropped: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class CachedLLM:
    """A backend behind the cache, with an optional token budget over real (uncached) calls."""

    def __init__(self, backend: Backend, cache: ResponseCache, token_budget: int | None = None, wave: int = 64):
        self.backend = backend
        self.cache = cache
        self.token_budget = token_budget
        self.wave = wave
        self.stats = CallStats()
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def complete(self, requests: Sequence[ChatRequest],
                 on_done: Callable[[int, Completion | None], None] | None = None) -> list[Completion | None]:
        """Answers in request order; None where the backend dropped a malformed answer.
        Misses go to the backend in waves; the budget is checked between waves (so it can be
        overshot by at most one wave), and BudgetExhausted is raised with the cache intact."""
        keys = [r.cache_key(self.model_id) for r in requests]
        hits = self.cache.get_many(list(dict.fromkeys(keys)))
        results: list[Completion | None] = [None] * len(requests)
        first_of: dict[str, int] = {}
        todo: list[int] = []
        for i, k in enumerate(keys):
            if k in hits:
                results[i] = hits[k]
                self.stats.cache_hits += 1
                if on_done:
                    on_done(i, hits[k])
            elif k in first_of:
                continue  # identical request: answered once, copied below
            else:
                first_of[k] = i
                todo.append(i)
        for w in range(0, len(todo), self.wave):
            if self.token_budget is not None and self.stats.tokens >= self.token_budget:
                raise BudgetExhausted(
                    f"token budget of {self.token_budget:,} spent ({self.stats.calls} calls); "
                    f"{len(todo) - w} requests left; answers so far are cached: re-run with a larger budget to resume"
                )
            batch = todo[w : w + self.wave]

            def store(j: int, c: Completion, batch=batch) -> None:
                i = batch[j]
                self.cache.put(keys[i], self.model_id, c)
                with self._lock:
                    self.stats.calls += 1
                    self.stats.prompt_tokens += c.prompt_tokens
                    self.stats.completion_tokens += c.completion_tokens
                results[i] = c
                if on_done:
                    on_done(i, c)

            out = self.backend.complete([requests[i] for i in batch], store)
            for j, c in enumerate(out):
                if c is None:
                    self.stats.dropped += 1
                    if on_done:
                        on_done(batch[j], None)
        for i, k in enumerate(keys):
            if results[i] is None and k in first_of and first_of[k] != i:
                results[i] = results[first_of[k]]
                if on_done:
                    on_done(i, results[i])
        return results

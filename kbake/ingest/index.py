"""The chunks, searchable: dense (sentence embeddings, cosine), lexical (BM25 through bm25s:
fast, sparse, maintained; exact figures and names that embeddings blur) or hybrid (both
rankings fused by reciprocal rank, Cormack et al. 2009). Eval's RAG baseline and GRPO's lookup
environment both search it, so it lives below both."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RRF_K = 60  # the constant of reciprocal rank fusion, as in Cormack et al. 2009
RETRIEVERS = ("dense", "lexical", "hybrid")


def _bm25_tokens(texts: list[str]):
    import bm25s

    return bm25s.tokenize(texts, stopwords="en", show_progress=False)


@dataclass
class ChunkIndex:
    chunk_ids: list[str]
    texts: list[str]
    vectors: np.ndarray  # [n, d], unit-normalised
    embedder: object

    def dense_ranking(self, queries: list[str]) -> np.ndarray:
        """[n_queries, n_chunks] chunk indices, best first, by cosine similarity."""
        q = self.embedder.encode(queries, normalize_embeddings=True, convert_to_numpy=True, batch_size=64)
        return np.argsort(-(q @ self.vectors.T), axis=1, kind="stable")

    def lexical_ranking(self, queries: list[str]) -> np.ndarray:
        """[n_queries, n_chunks] chunk indices, best first, by BM25 (ties in chunk order)."""
        import bm25s

        bm25 = bm25s.BM25()
        bm25.index(_bm25_tokens(self.texts), show_progress=False)
        docs, _ = bm25.retrieve(_bm25_tokens(queries), k=len(self.texts), show_progress=False, sorted=True)
        return np.asarray(docs)

    def search(self, queries: list[str], k: int, retriever: str = "dense",
               allowed: set[str] | None = None) -> list[list[int]]:
        """The top-k chunk indices of each query; with `allowed`, only among those chunk ids
        (RAG restricted to the newest documents)."""
        keep = (lambda i: True) if allowed is None else (lambda i: self.chunk_ids[int(i)] in allowed)  # noqa: E731
        if retriever == "dense":
            rankings = [list(r) for r in self.dense_ranking(queries)]
        elif retriever == "lexical":
            rankings = [list(r) for r in self.lexical_ranking(queries)]
        elif retriever == "hybrid":
            rankings = [fuse([list(d), list(l)]) for d, l in zip(self.dense_ranking(queries), self.lexical_ranking(queries))]
        else:
            raise ValueError(f"retriever must be one of {', '.join(RETRIEVERS)}, got {retriever!r}")
        return [[int(i) for i in r if keep(i)][:k] for r in rankings]


def fuse(rankings: list[list[int]], k: int = RRF_K) -> list[int]:
    """Reciprocal rank fusion: score(d) = sum over rankings of 1 / (k + rank of d), rank from 1."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, d in enumerate(ranking, 1):
            score[int(d)] = score.get(int(d), 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda d: (-score[d], d))

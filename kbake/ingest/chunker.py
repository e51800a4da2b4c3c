"""Token-aware chunking: paragraphs packed greedily up to `chunk_tokens`, with overlap.

Boundaries prefer paragraphs, then sentences, then raw token windows, so a chunk
rarely cuts a sentence; every chunk's token count is checked with the tokenizer itself.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    n_tokens: int


@dataclass(frozen=True)
class Offsets:
    """Character offsets of a text's tokens, sorted; tokens never overlap."""

    starts: list[int]
    ends: list[int]

    @classmethod
    def of(cls, tokenizer, text: str) -> Offsets:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        pairs = [(s, e) for s, e in enc["offset_mapping"] if e > s]
        return cls([s for s, _ in pairs], [e for _, e in pairs])

    def first(self, a: int) -> int:
        """Index of the first token that reaches past character `a`."""
        return bisect.bisect_right(self.ends, a)

    def stop(self, b: int) -> int:
        """Index past the last token that starts before character `b`."""
        return bisect.bisect_left(self.starts, b)

    def count(self, a: int, b: int) -> int:
        """Tokens overlapping [a, b): a byte-level token that starts with the space before a word counts."""
        return max(0, self.stop(b) - self.first(a))


def _units(text: str, tokens: Offsets, limit: int) -> list[Span]:
    """Paragraph spans; a paragraph over the limit is split into sentences, a sentence into token windows."""
    units: list[Span] = []
    for m in re.finditer(r"[^\n]+(?:\n(?!\n)[^\n]+)*", text):
        a, b = m.start(), m.end()
        n = tokens.count(a, b)
        if n <= limit:
            units.append(Span(a, b, n))
            continue
        pieces, pos = [], a
        for s in _SENTENCE_END.finditer(text, a, b):
            pieces.append((pos, s.start()))
            pos = s.end()
        pieces.append((pos, b))
        for pa, pb in pieces:
            n = tokens.count(pa, pb)
            if n <= limit:
                units.append(Span(pa, pb, n))
                continue
            i0, i1 = tokens.first(pa), tokens.stop(pb)
            for i in range(i0, i1, limit):
                wa = pa if i == i0 else tokens.starts[i]
                wb = tokens.starts[i + limit] if i + limit < i1 else pb
                units.append(Span(wa, wb, tokens.count(wa, wb)))
    return units


def chunk_text(text: str, tokenizer, chunk_tokens: int, overlap_tokens: int) -> list[Span]:
    """Cut `text` into spans of at most `chunk_tokens` tokens; consecutive spans share up to
    `overlap_tokens` tokens of whole units (paragraphs or sentences)."""
    # Headroom for tokens that merge differently at a chunk's edge than inside the document.
    limit = max(8, chunk_tokens - 4)
    tokens = Offsets.of(tokenizer, text)
    units = _units(text, tokens, limit)
    spans: list[Span] = []
    i = 0
    while i < len(units):
        j, total = i, 0
        while j < len(units):
            gap = tokens.count(units[j - 1].end, units[j].start) if j > i else 0
            if total + gap + units[j].n_tokens > limit:
                break
            total += gap + units[j].n_tokens
            j += 1
        j = max(j, i + 1)
        a, b = units[i].start, units[j - 1].end
        spans.append(Span(a, b, tokens.count(a, b)))
        if j >= len(units):
            break
        # Step back over trailing units that fit in the overlap, but always move forward.
        k, back = j, 0
        while k - 1 > i and back + units[k - 1].n_tokens <= overlap_tokens:
            back += units[k - 1].n_tokens
            k -= 1
        i = k
    return _enforce_limit(text, spans, tokenizer, chunk_tokens)


def _enforce_limit(text: str, spans: list[Span], tokenizer, chunk_tokens: int) -> list[Span]:
    """Re-count each chunk on its own text; split the rare one that came out over the limit."""
    out: list[Span] = []
    for sp in spans:
        piece = text[sp.start : sp.end]
        n = len(tokenizer(piece, add_special_tokens=False)["input_ids"])
        if n <= chunk_tokens:
            out.append(Span(sp.start, sp.end, n))
            continue
        local = Offsets.of(tokenizer, piece).starts
        step = max(1, chunk_tokens - 8)
        for i in range(0, len(local), step):
            a = sp.start if i == 0 else sp.start + local[i]
            b = sp.start + local[i + step] if i + step < len(local) else sp.end
            m = len(tokenizer(text[a:b], add_special_tokens=False)["input_ids"])
            out.append(Span(a, b, m))
    return out

"""Contextual chunk headers: each chunk's document and the section it falls under ("Costco
Wholesale Corporation, 2022-08-28 — Item 7—Management's Discussion … — RESULTS OF OPERATIONS"),
put in front of the chunk where it is indexed, so a question that names the section or the
company finds chunks whose own text does not ("contextual chunk headers", as retrieval
pipelines for filings use; measured in docs/results.md, "Chunk headers").

Read from the chunk texts in document order, so it needs no change to ingest: an `Item N`
line of a 10-K opens a section; a `Note N` line (notes to the financial statements) or an
upper-case line of two to twelve words (a statement or table title: "CONSOLIDATED BALANCE
SHEETS", "RESULTS OF OPERATIONS") a subsection. PDF text often runs a title into what follows
it, so a title is cut at a page number, the next `Item`, a run of capitals, or 70 characters."""

from __future__ import annotations

import re

ITEM = re.compile(r"^(?:PART [IVX]+\s+)?(Item \d+[A-Z]?\s*[—–.:-]\s*\S.*)$")
NOTE = re.compile(r"^(Note \d+\s*[—–.:-]\s*\S.*)$")
MAX_HEADING = 90
MAX_TITLE = 70


def _title(text: str) -> str:
    """A numbered heading's title without what PDF text ran into it."""
    words = text.split()
    out: list[str] = []
    for k, w in enumerate(words):
        caps = w.isupper() and len(w) > 1 and k + 1 < len(words) and words[k + 1].isupper() and len(words[k + 1]) > 1
        if k > 1 and (w.isdigit() or w == "Item" or caps or len(" ".join(out + [w])) > MAX_TITLE):
            break
        out.append(w)
    return " ".join(out)


def _heading(line: str) -> tuple[str, str] | None:
    """('item', title) for an Item line, ('sub', title) for a Note or upper-case title line, else None."""
    line = " ".join(line.split())
    m = ITEM.match(line)
    if m:
        return "item", _title(m.group(1))
    m = NOTE.match(line)
    if m:
        return "sub", _title(m.group(1))
    words = line.split()
    letters = [ch for ch in line if ch.isalpha()]
    if 2 <= len(words) <= 12 and len(line) <= MAX_HEADING and letters and all(ch.isupper() for ch in letters) \
            and not line[0].isdigit():
        return "sub", line.rstrip(":")
    return None


def chunk_headers(chunks: list[dict]) -> list[str]:
    """One header per chunk (same order as given): its entity (or source file) and date, then
    the Item and the title line in force where the chunk starts."""
    order = sorted(range(len(chunks)), key=lambda i: (chunks[i]["doc_id"], chunks[i]["start"]))
    out = [""] * len(chunks)
    doc, item, sub = None, "", ""
    for i in order:
        c = chunks[i]
        if c["doc_id"] != doc:
            doc, item, sub = c["doc_id"], "", ""
        name = c.get("entity") or str(c.get("source", c["doc_id"])).rsplit("/", 1)[-1]
        lead = f"{name}, {c['as_of']}" if c.get("as_of") else name
        out[i] = " — ".join(p for p in (lead, item, sub) if p)
        for line in c["text"].split("\n"):
            found = _heading(line)
            if found and found[0] == "item":
                item, sub = found[1], ""
            elif found:
                sub = found[1]
    return out


def with_headers(chunks: list[dict]) -> list[str]:
    """Each chunk's text with its header line in front."""
    return [f"{h}\n{c['text']}" for h, c in zip(chunk_headers(chunks), chunks)]

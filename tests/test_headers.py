"""Contextual chunk headers (kbake/ingest/headers.py): the section a chunk falls under, read from
the chunk texts in document order, and an index that searches them when asked."""

from __future__ import annotations

from kbake.ingest.headers import chunk_headers, with_headers


def c(doc: str, start: int, text: str) -> dict:
    return {"chunk_id": f"{doc}:{start}", "doc_id": doc, "start": start, "text": text,
            "as_of": "2022-08-28", "entity": "Acme Corporation", "source": f"/x/{doc}.pdf"}


FILING = [
    c("acme", 0, "PART I\nItem 1—Business\nAcme makes pumps."),
    c("acme", 100, "Pumps are sold worldwide.\nItem 7—Management's Discussion and Analysis 23 Item 7A—Market Risk"),
    c("acme", 200, "RESULTS OF OPERATIONS\nNet sales rose."),
    c("acme", 300, "Gross margin fell."),
    c("acme", 400, "Item 8—Financial Statements and Supplementary Data ACME CORPORATION INDEX\nNote 2—Leases The tables"),
    c("acme", 500, "Lease costs were 12 million."),
    c("beta", 0, "Beta has no headings at all."),
]


def test_a_chunk_gets_the_item_and_title_in_force_where_it_starts():
    # given out of order: headers follow document order, and come back in the order given
    h = dict(zip([x["chunk_id"] for x in FILING[::-1]], chunk_headers(FILING[::-1])))
    assert h["acme:0"] == "Acme Corporation, 2022-08-28"
    assert h["acme:100"] == "Acme Corporation, 2022-08-28 — Item 1—Business"
    # a title cut where PDF text ran the table of contents into it
    assert h["acme:200"] == "Acme Corporation, 2022-08-28 — Item 7—Management's Discussion and Analysis"
    assert h["acme:300"].endswith("Item 7—Management's Discussion and Analysis — RESULTS OF OPERATIONS")
    # a new Item clears the subsection; a Note opens one
    assert h["acme:500"].endswith("Item 8—Financial Statements and Supplementary Data — Note 2—Leases The tables")
    assert h["beta:0"] == "Acme Corporation, 2022-08-28"  # another document starts over


def test_with_headers_puts_the_header_line_in_front():
    texts = with_headers(FILING)
    assert texts[3] == "Acme Corporation, 2022-08-28 — Item 7—Management's Discussion and Analysis — RESULTS OF " \
                       "OPERATIONS\nGross margin fell."
    assert all(t.endswith(x["text"]) for t, x in zip(texts, FILING))


def test_the_index_searches_headers_only_when_asked(tmp_path, tiny_model):
    from trainfix import small_run

    from kbake.eval.rag import load_index
    from kbake.models import load_embedder

    embedder = load_embedder("default")

    run = small_run(tmp_path / "run", tiny_model)
    plain, _ = load_index(run, "default", embedder)
    headed, rebuilt = load_index(run, "default", embedder, headers=True)
    assert rebuilt  # a header index is not the plain one's cache
    assert all(h.endswith(t) and h != t for h, t in zip(headed.texts, plain.texts))
    _, again = load_index(run, "default", embedder, headers=True)
    assert not again

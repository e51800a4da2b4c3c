"""`kbake ingest`: readers, chunking limits, dedup, incremental re-ingest, bad input, atomic writes."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pdfs import blank_pdf, encrypted_pdf, text_pdf
from typer.testing import CliRunner

from kbake.cli import app
from kbake.config import IngestArgs
from kbake.ingest import ingest
from kbake.ingest.chunker import chunk_text
from kbake.ingest.dedup import StreamingDedup, dedup_texts
from kbake.ingest.readers import ReadError, read_document
from kbake.models import load_tokenizer
from kbake.run import RunDir, read_chunks
from kbake.sample import sample_documents

runner = CliRunner()

PUMPS = (
    "Tidewell pumps are built in Muncie. The foundry casts ductile iron.\n\n"
    "ClearSpan membranes come from Aarhus, where 210 chemists work.\n\n"
    "Sightline watches 14,200 sites for failing seals and bearings."
)


@pytest.fixture
def tok(tiny_model):
    return load_tokenizer(tiny_model)


def args(tiny_model, **kw) -> IngestArgs:
    return IngestArgs(tokenizer=tiny_model, **kw)


# ---------------------------------------------------------------- readers


def test_html_drops_script_and_keeps_table_rows(tmp_path):
    p = tmp_path / "f.html"
    p.write_text(
        "<html><head><title>t</title><script>var secret=1;</script></head><body>"
        "<p>Revenue <b>rose</b> 9%.</p><table><tr><th>Segment</th><th>Revenue</th></tr>"
        "<tr><td>MPS</td><td>$812.4</td></tr></table></body></html>"
    )
    text = read_document(p)
    assert "secret" not in text
    assert "Revenue rose 9%." in text  # inline tags do not split a sentence
    assert "MPS — Revenue: $812.4" in text.split("\n\n")  # the figure names its column


def test_html_table_rows_name_their_columns_and_units(tmp_path):
    p = tmp_path / "f.html"
    p.write_text(
        "<table><tr><td colspan='6'>(in millions, except per share data)</td></tr>"
        "<tr><td></td><td colspan='2'>Fiscal 2022</td><td></td><td colspan='2'>Fiscal 2021</td></tr>"
        "<tr><td>Net sales</td><td>$</td><td>222,730</td><td></td><td>$</td><td>192,052</td></tr>"
        "<tr><td>Diluted EPS</td><td>$</td><td>13.14</td><td></td><td>$</td><td>11.27</td></tr>"
        "<tr><td>Shares used (000's)</td><td></td><td>444,757</td><td></td><td></td><td>444,346</td></tr></table>"
        "<table><tr><td>Name</td><td>Role</td></tr><tr><td>Ann</td><td>CEO</td></tr></table>"
    )
    paras = read_document(p).split("\n\n")
    assert paras[0] == "(in millions, except per share data)"
    assert "Net sales — Fiscal 2022: $222,730 million; Fiscal 2021: $192,052 million" in paras
    assert "Diluted EPS — Fiscal 2022: $13.14; Fiscal 2021: $11.27" in paras  # per-share: no unit
    assert "Shares used (000's) — Fiscal 2022: 444,757; Fiscal 2021: 444,346" in paras
    assert "Name | Role" in paras and "Ann | CEO" in paras  # no figures: cells as they are
    p.write_text("<table><tr><th>Location</th><th>Use</th><th>Square feet</th><th>Owned or leased</th></tr>"
                 "<tr><td>Muncie, Indiana</td><td>Foundry</td><td>610,000</td><td>Owned</td></tr></table>")
    # text cells keep their headers too, and take no units
    assert read_document(p) == "Muncie, Indiana — Use: Foundry; Square feet: 610,000; Owned or leased: Owned"


def test_pdf_table_rows_name_their_columns_and_units(tmp_path):
    from pdfs import placed_pdf

    cols = (300, 400)
    items = [(50, 740, "Revenue rose because members bought more."),
             (200, 700, "ACME CORP STATEMENTS OF INCOME"), (200, 686, "(amounts in millions, except per share data)"),
             (332, 662, "Year Ended"), (290, 650, "Dec 31, 2024"), (390, 650, "Dec 31, 2023"), (50, 632, "REVENUE")]
    rows = [("Net sales", "2,500", "2,100", True), ("Service fees", "1,200", "1,100", False),
            ("Total revenue", "3,700", "3,200", False)]
    y = 618
    for label, a, b, dollar in rows:
        items += [(60, y, label), (cols[0], y, a), (cols[1], y, b)]
        if dollar:
            items += [(cols[0] - 12, y, "$"), (cols[1] - 12, y, "$")]
        y -= 14
    items += [(50, y, "Diluted EPS"), (cols[0] - 12, y, "$"), (cols[0], y, "13.14"), (cols[1] - 12, y, "$"),
              (cols[1], y, "11.27"), (50, y - 30, "The notes are an integral part of these statements.")]
    p = tmp_path / "t.pdf"
    p.write_bytes(placed_pdf(items))
    paras = read_document(p).split("\n\n")
    assert paras[0] == "Revenue rose because members bought more."
    assert "REVENUE: Net sales — Year Ended Dec 31, 2024: $2,500 million; Year Ended Dec 31, 2023: $2,100 million" in paras
    assert "REVENUE: Total revenue — Year Ended Dec 31, 2024: 3,700 million; Year Ended Dec 31, 2023: 3,200 million" in paras
    assert "Diluted EPS — Year Ended Dec 31, 2024: $13.14; Year Ended Dec 31, 2023: $11.27" in paras
    assert paras[-1] == "The notes are an integral part of these statements."


def test_text_normalises_whitespace_and_zero_width(tmp_path):
    p = tmp_path / "f.md"
    p.write_text("# Title\r\n\r\nline one\ncontinues\u200b   here\n\n\n\nnext")
    assert read_document(p) == "# Title\n\nline one continues here\n\nnext"


def test_legacy_encoding_is_read(tmp_path):
    p = tmp_path / "f.txt"
    p.write_bytes("Caf\u00e9 Aarhus \u2013 1.4%".encode("cp1252"))
    assert read_document(p) == "Caf\u00e9 Aarhus \u2013 1.4%"


def test_pdf_with_text_layer(tmp_path):
    p = tmp_path / "f.pdf"
    p.write_bytes(text_pdf(["Backlog was $1.21 billion.", "Employees: 6,140."]))
    text = read_document(p)
    assert "Backlog was $1.21 billion." in text and "6,140" in text


@pytest.mark.parametrize(
    "name,data,reason",
    [
        ("empty.txt", b"", "empty file"),
        ("blank.md", b"  \n\n \t ", "empty"),
        ("blob.txt", bytes(range(256)) * 4, "binary file"),
        ("corrupt.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R >>\ntrailer garbage", "corrupt PDF"),
        ("scan.pdf", None, "image-only PDF"),
        ("locked.pdf", None, "encrypted PDF"),
        ("data.xlsx", b"PK\x03\x04", "unsupported type '.xlsx'"),
    ],
)
def test_bad_documents_give_a_reason(tmp_path, name, data, reason):
    if data is None:
        data = blank_pdf() if name == "scan.pdf" else encrypted_pdf()
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(ReadError, match=reason):
        read_document(p)


# ---------------------------------------------------------------- chunking


@pytest.mark.parametrize("size,overlap", [(32, 0), (64, 16), (128, 24)])
def test_chunks_respect_the_token_limit_and_cover_the_text(tok, sample_text, size, overlap):
    spans = chunk_text(sample_text, tok, size, overlap)
    assert len(spans) > 3
    for sp in spans:
        assert len(tok(sample_text[sp.start : sp.end], add_special_tokens=False)["input_ids"]) <= size
    # Every character outside the separators is in some chunk: no text is lost.
    covered = bytearray(len(sample_text))
    for sp in spans:
        covered[sp.start : sp.end] = b"\x01" * (sp.end - sp.start)
    lost = "".join(c for c, k in zip(sample_text, covered) if not k and not c.isspace())
    assert lost == ""
    starts = [sp.start for sp in spans]
    assert starts == sorted(starts)


def test_overlap_repeats_context(tok, sample_text):
    no = chunk_text(sample_text, tok, 96, 0)
    yes = chunk_text(sample_text, tok, 96, 40)
    shared = sum(max(0, a.end - b.start) for a, b in zip(yes, yes[1:]))
    assert sum(max(0, a.end - b.start) for a, b in zip(no, no[1:])) == 0
    assert shared > 0 and len(yes) > len(no)


def test_one_huge_line_is_split(tok):
    text = "word " * 5000
    spans = chunk_text(text.strip(), tok, 64, 8)
    assert len(spans) > 10
    assert all(len(tok(text[s.start : s.end], add_special_tokens=False)["input_ids"]) <= 64 for s in spans)


# ---------------------------------------------------------------- dedup


def test_dedup_exact_and_near():
    base = ("The Muncie foundry casts ductile iron for Tidewell pumps and employs 1,150 hourly workers under a union contract "
            "that runs until April 2027 and covers every shift.")
    texts = [base, base.upper(), base.replace("every shift", "every single shift"), PUMPS]
    keep, removed = dedup_texts(texts, threshold=0.7)
    assert keep == [0, 3]
    assert removed == {"exact": 1, "near": 1}



def test_streaming_dedup_keeps_its_index_on_disk_and_removes_it(tmp_path):
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    texts = [" ".join(rng.choice(words) for _ in range(120)) for _ in range(300)]
    # A near-duplicate of every tenth text (one word of 120 changed) and an exact one of every 25th.
    variants = [t.rsplit(" ", 1)[0] + " changed" for t in texts[::10]] + [t.upper() for t in texts[::25]]
    with StreamingDedup(0.8, 128, folder=tmp_path) as d:
        fresh = [d.add(t) for t in texts]
        assert len(list(tmp_path.glob(".dedup.*.sqlite"))) == 1  # the index is a file, not Python dicts
        again = [d.add(t) for t in variants]
    assert fresh == [None] * 300  # unrelated random texts are never merged
    assert again == ["near"] * 30 + ["exact"] * 12
    assert d.removed == {"exact": 12, "near": 30}
    assert not list(tmp_path.iterdir())

# ---------------------------------------------------------------- the whole stage


def test_ingest_sample_no_duplicates_and_noop_rerun(tmp_path, tiny_model):
    run = RunDir.at(tmp_path / "run")
    docs = [str(p) for p in sample_documents()]
    a = args(tiny_model, chunk_tokens=96, overlap_tokens=16)
    first = ingest(docs, run, a, progress=False)
    assert first.wrote and first.added and not first.errors
    rows = read_chunks(run.chunks)
    assert len({r["sha256"] for r in rows}) == len(rows)
    assert len({r["chunk_id"] for r in rows}) == len(rows)
    assert max(r["n_tokens"] for r in rows) <= 96
    manifest = json.loads(run.manifest.read_text())["stages"]["ingest"]
    assert manifest["config"]["chunk_tokens"] == 96 and manifest["kbake_version"] and "seed" in manifest
    mtime = run.chunks.stat().st_mtime_ns
    second = ingest(docs, run, a, progress=False)
    assert not second.wrote and second.unchanged and second.n_chunks == len(rows)
    assert run.chunks.stat().st_mtime_ns == mtime


def test_changed_file_replaces_its_chunks(tmp_path, tiny_model):
    run = RunDir.at(tmp_path / "run")
    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.md").write_text(PUMPS)
    (d / "b.txt").write_text("Saltmere makes energy recovery devices in Southampton.")
    a = args(tiny_model)
    ingest([str(d)], run, a, progress=False)
    (d / "a.md").write_text("Brand new text: the Monterrey plant ran at 85% of capacity.")
    rep = ingest([str(d)], run, a, progress=False)
    assert rep.updated == [str(d / "a.md")] and rep.unchanged == [str(d / "b.txt")]
    text = " ".join(r["text"] for r in read_chunks(run.chunks))
    assert "Monterrey" in text and "Sightline" not in text and "Saltmere" in text


def test_cli_mixed_folder(tmp_path, tiny_model):
    """Good .md and .html ingest; empty, binary and corrupt PDF are named with their reason."""
    d = tmp_path / "mixed"
    d.mkdir()
    (d / "good.md").write_text(PUMPS)
    (d / "good.html").write_text("<html><body><p>Backlog was $1.21 billion at year end.</p></body></html>")
    (d / "empty.txt").write_bytes(b"")
    (d / "binary.txt").write_bytes(os.urandom(2048) + b"\x00")
    (d / "corrupt.pdf").write_bytes(b"%PDF-1.7\nthis is not really a pdf")
    result = runner.invoke(app, ["ingest", str(d), "--run", str(tmp_path / "r"), "--tokenizer", tiny_model, "-q"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"{d / 'empty.txt'}: empty file" in out
    assert f"{d / 'binary.txt'}: binary file" in out
    assert f"{d / 'corrupt.pdf'}: corrupt PDF" in out
    assert "ingested 2 new" in out
    sources = {r["source"] for r in read_chunks(tmp_path / "r" / "chunks.parquet")}
    assert sources == {str(d / "good.md"), str(d / "good.html")}


def test_cli_nothing_usable_exits_1(tmp_path, tiny_model):
    (tmp_path / "empty.txt").write_bytes(b"")
    result = runner.invoke(app, ["ingest", str(tmp_path / "empty.txt"), str(tmp_path / "missing.md"),
                                 "--run", str(tmp_path / "r"), "--tokenizer", tiny_model])
    assert result.exit_code == 1
    assert "empty file" in result.output and "no such file" in result.output
    assert "nothing usable was ingested" in result.output


def test_glob_input(tmp_path, tiny_model):
    (tmp_path / "a.md").write_text(PUMPS)
    (tmp_path / "b.md").write_text("Saltmere makes energy recovery devices.")
    (tmp_path / "c.txt").write_text("Not matched by the glob.")
    rep = ingest([str(tmp_path / "*.md")], RunDir.at(tmp_path / "r"), args(tiny_model), progress=False)
    assert sorted(Path(p).name for p in rep.added) == ["a.md", "b.md"]


def test_killed_write_keeps_old_parquet(tmp_path, tiny_model, monkeypatch):
    """A write that dies half way leaves the previous chunks.parquet whole and no temp files."""
    import kbake.run as runmod

    run = RunDir.at(tmp_path / "r")
    (tmp_path / "a.md").write_text(PUMPS)
    ingest([str(tmp_path / "a.md")], run, args(tiny_model), progress=False)
    before = run.chunks.read_bytes()

    def dying_write(self, table, *a, **kw):  # the header is on disk, the rows never arrive
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(runmod.pq.ParquetWriter, "write_table", dying_write)
    (tmp_path / "a.md").write_text("Changed text about Saltmere.")
    with pytest.raises(KeyboardInterrupt):
        ingest([str(tmp_path / "a.md")], run, args(tiny_model), progress=False)
    assert run.chunks.read_bytes() == before
    assert pq.read_table(run.chunks).num_rows >= 1
    assert [p.name for p in run.root.iterdir() if p.name.endswith(".tmp")] == []


def test_run_folder_is_private(tmp_path, tiny_model):
    (tmp_path / "a.md").write_text(PUMPS)
    run = RunDir.at(tmp_path / "r")
    ingest([str(tmp_path / "a.md")], run, args(tiny_model), progress=False)
    assert run.root.stat().st_mode & 0o077 == 0


def test_page_furniture_is_dropped_and_body_lines_kept():
    from kbake.ingest.readers import drop_page_furniture

    body = "\n".join(f"body line {k}" for k in range(5))
    topics = ["pumps", "membranes", "valves", "meters", "pipes", "filters"]
    pages = [f"Table of Contents\nBody text about {t}.\n{body}\nNet sales $ 1,000\n{body}\n{i + 1}"
             for i, t in enumerate(topics)]
    pages[2] += "\nTable of Contents in the body of a page is kept when it is not at an edge\nlast body line\n3"
    out = drop_page_furniture(pages)
    assert not any(p.startswith("Table of Contents") for p in out)
    assert all(f"Body text about {t}" in p and "Net sales $ 1,000" in p for t, p in zip(topics, out))
    assert "Table of Contents in the body" in out[2]
    assert not any(p.rstrip().splitlines()[-1].strip().isdigit() for p in out)  # page numbers gone
    assert drop_page_furniture(pages[:2]) == pages[:2]  # too few pages to tell furniture from text


COSTCO = Path(__file__).resolve().parents[2] / "shared" / "data" / "10k-pdfs"


needs_costco = pytest.mark.skipif(not COSTCO.exists(), reason="../shared/data/10k-pdfs is not here (an installed kbake does not need it)")


@pytest.fixture(scope="module")
def costco_chunks(tmp_path_factory):
    """The three Costco filings ingested with the default options (about a minute)."""
    import pandas as pd

    run = RunDir(tmp_path_factory.mktemp("costco") / "run")
    report = ingest([str(COSTCO / f"costco-10k-fy{y}.pdf") for y in (2020, 2021, 2022)], run, IngestArgs(), progress=False)
    assert not report.errors
    return pd.read_parquet(run.chunks)


@needs_costco
def test_real_filings_have_no_running_header_in_any_chunk(costco_chunks):
    for year in (2020, 2021, 2022):
        docs = costco_chunks[costco_chunks.source.str.contains(f"fy{year}")]
        assert len(docs) > 200
        assert not docs.text.str.contains("Table of Contents").any()


# Read from the fiscal 2022 filing's pages (income statement p. 36, balance sheet p. 38,
# segment note p. 79): (line item, column as printed, figure as printed).
FY2022_FIGURES = [
    ("Net sales", "52 Weeks Ended August 28, 2022", "$222,730 million"),
    ("Membership fees", "52 Weeks Ended August 29, 2021", "3,877 million"),
    ("Merchandise costs", "52 Weeks Ended August 30, 2020", "144,939 million"),
    ("Operating income", "52 Weeks Ended August 28, 2022", "7,793 million"),
    ("Provision for income taxes", "52 Weeks Ended August 29, 2021", "1,601 million"),
    ("NET INCOME ATTRIBUTABLE TO COSTCO", "52 Weeks Ended August 28, 2022", "$5,844 million"),
    ("Diluted", "52 Weeks Ended August 28, 2022", "$13.14"),
    ("Cash and cash equivalents", "August 28, 2022", "$10,203 million"),
    ("Merchandise inventories", "August 29, 2021", "14,215 million"),
    ("TOTAL ASSETS", "August 28, 2022", "$64,166 million"),
    ("Retained earnings", "August 28, 2022", "15,585 million"),
    ("2022: Total revenue", "United States", "$165,294"),
]


@needs_costco
@pytest.mark.parametrize("item,column,figure", FY2022_FIGURES, ids=[f[0] for f in FY2022_FIGURES])
def test_real_filing_table_figures_keep_their_year_and_line_item(costco_chunks, item, column, figure):
    docs = costco_chunks[costco_chunks.source.str.contains("fy2022")]
    pattern = re.compile(rf"(?m)^(?:[A-Z][A-Z ()]*: )?{re.escape(item)} — (?:[^\n]*; )?{re.escape(column)}: {re.escape(figure)}(?:;|$)")
    assert docs.text.map(lambda t: bool(pattern.search(t))).any(), f"no chunk pairs {figure} with {item} / {column}"


def test_filing_boilerplate_is_dropped_and_other_text_kept():
    from kbake.ingest.readers import drop_filing_boilerplate

    filing = "\n\n".join([
        "FORM 10-K",
        "Indicate by check mark if the registrant is a well-known seasoned issuer. Yes ☒ No ☐ Indicate by check mark "
        "whether the registrant is a shell company. Yes ☐ No ☒ The number of shares outstanding was 442,604,145.",
        "Net sales increased 16% to $222,730.",
        "Incorporated by Reference Exhibit Filed Number Exhibit Description 3.1 Articles of Incorporation",
        "SIGNATURES Pursuant to the requirements of Section 13 or 15(d) the registrant has duly caused this report to be signed.",
        "By /s/ W. CRAIG JELINEK W. Craig Jelinek Chief Executive Officer",
        "Exhibit 21.1 SUBSIDIARIES OF THE COMPANY",
        "Exhibit 31.1", "I, W. Craig Jelinek, certify that:", "1) I have reviewed this Annual Report.",
        "Exhibit 32.1 CERTIFICATION PURSUANT TO 18 U.S.C. SECTION 1350", "Signed by the officers.",
    ])
    assert drop_filing_boilerplate(filing).split("\n\n") == [
        "FORM 10-K", "The number of shares outstanding was 442,604,145.", "Net sales increased 16% to $222,730.",
        "Exhibit 21.1 SUBSIDIARIES OF THE COMPANY"]
    manual = "Press the red button.\n\nExhibit A shows the wiring; check the fuse first.\n\nYes, it is safe."
    assert drop_filing_boilerplate(manual) == manual  # a non-filing is unchanged


COSTCO_PROBES = Path(__file__).parent / "data" / "costco-fy2022-probes.jsonl"


def test_costco_probes_are_valid_and_split_evenly():
    from kbake.run import read_probes

    probes = read_probes(COSTCO_PROBES)
    assert len(probes) == 30 and {p.split for p in probes} == {"dev", "test"}
    assert sum(p.split == "test" for p in probes) == 15
    assert all(p.evidence and p.answer not in p.distractors for p in probes)


@needs_costco
def test_costco_probes_evidence_is_in_the_ingested_filing(costco_chunks):
    from kbake.run import read_probes

    docs = costco_chunks[costco_chunks.source.str.contains("fy2022")]
    texts = [" ".join(t.lower().split()) for t in docs.text]
    for p in read_probes(COSTCO_PROBES):
        assert any(" ".join(p.evidence.lower().split()) in t for t in texts), p.id


# ---------------------------------------------------------------- dates and entities


def test_documents_are_dated_from_flag_front_matter_or_their_own_text(tmp_path, tiny_model):
    from kbake.ingest.dates import parse_date

    (tmp_path / "a.md").write_text("---\ntitle: Pump manual\nas_of: 2024-03-01\n---\n\nThe pump runs at 1,450 rpm.")
    (tmp_path / "b.txt").write_text("Annual report for the fiscal year ended Sept. 27, 2025.\n\nRevenue rose.")
    (tmp_path / "c.txt").write_text("No date here at all.")
    run = RunDir.at(tmp_path / "run")
    ingest([str(tmp_path / n) for n in ("a.md", "b.txt", "c.txt")], run, args(tiny_model), progress=False)
    rows = {r["source"].rsplit("/", 1)[-1]: r for r in read_chunks(run.chunks)}
    assert rows["a.md"]["as_of"] == "2024-03-01" and rows["b.txt"]["as_of"] == "2025-09-27" and rows["c.txt"]["as_of"] == ""
    assert rows["a.md"]["entity"] == "a"  # file name without digits
    manifest = json.loads(run.manifest.read_text())["stages"]["ingest"]["docs"]
    assert {d["as_of"] for d in manifest.values()} == {"2024-03-01", "2025-09-27", None}
    # --as-of overrides, and does not re-chunk or drop the other documents
    run2 = RunDir.at(tmp_path / "run2")
    ingest([str(tmp_path / "c.txt")], run2, args(tiny_model), progress=False)
    ingest([str(tmp_path / "b.txt")], run2, args(tiny_model, as_of=parse_date("2026-01-31"), entity="Corvane"), progress=False)
    rows = {r["source"].rsplit("/", 1)[-1]: r for r in read_chunks(run2.chunks)}
    assert set(rows) == {"b.txt", "c.txt"}
    assert rows["b.txt"]["as_of"] == "2026-01-31" and rows["b.txt"]["entity"] == "Corvane"
    docs = json.loads(run2.manifest.read_text())["stages"]["ingest"]["docs"]
    assert sorted(d["round"] for d in docs.values()) == [1, 2]  # the newer document is the newest round


def test_sample_is_dated(tmp_path, tiny_model):
    from kbake.ingest.dates import document_as_of

    path = sample_documents()[0]
    assert str(document_as_of(path, read_document(path))) == "2025-09-27"


def test_dates_parse_the_forms_filings_print():
    from kbake.ingest.dates import parse_date, stated_as_of

    assert str(parse_date("AUGUST 28, 2022")) == "2022-08-28" and str(parse_date("Sept. 3, 2017")) == "2017-09-03"
    assert parse_date("Smarch 3, 2017") is None and parse_date("February 30, 2021") is None
    assert str(stated_as_of("FORM 10-Q For the quarterly period ended March 31, 2024")) == "2024-03-31"


@needs_costco
def test_real_filings_are_dated_and_linked(costco_chunks):
    for year, day in ((2020, "2020-08-30"), (2021, "2021-08-29"), (2022, "2022-08-28")):
        docs = costco_chunks[costco_chunks.source.str.contains(f"fy{year}")]
        assert set(docs.as_of) == {day}
        assert set(docs.entity) == {"Costco Wholesale Corporation"}


COSTCO_UPDATES = Path(__file__).parent / "data" / "costco-fy2022-updates.jsonl"


def test_costco_update_probes_are_valid():
    """32 facts that changed from the fiscal 2021 to the fiscal 2022 filing, each with its
    stale values among the options (read_probes refuses them otherwise)."""
    from kbake.run import read_probes

    probes = read_probes(COSTCO_UPDATES)
    assert len(probes) == 32 and all(p.as_of == "2022-08-28" and p.stale for p in probes)
    assert all(p.stale[0]["as_of"] == "2021-08-29" and p.stale[0]["value"] != p.answer for p in probes)
    assert len({p.question for p in probes}) == 32


@needs_costco
def test_costco_update_probes_hold_in_the_filings(costco_chunks):
    """Each newest value is in the fiscal 2022 filing (its evidence quote); each fiscal 2021
    value is printed in the fiscal 2021 filing."""
    from kbake.run import read_probes

    def texts(year):
        return " ".join(" ".join(t.split()) for t in costco_chunks[costco_chunks.source.str.contains(f"fy{year}")].text).lower()

    t22, t21 = texts(2022), texts(2021)
    for p in read_probes(COSTCO_UPDATES):
        assert " ".join(p.evidence.lower().split()) in t22, p.id
        old = p.stale[0]["value"].lower().replace("$", "").replace(" million", "").replace(" thousand", "")
        assert old in t21, (p.id, old)

"""Readers: one function per file type, each returning the document's plain text.

Paragraphs are separated by a blank line; HTML tables become one text row per table
row ("cell | cell | cell"), so the figures in a 10-K's tables survive as text.
"""

from __future__ import annotations

import re
from pathlib import Path

SUPPORTED = {".txt", ".md", ".markdown", ".html", ".htm", ".pdf"}


class ReadError(Exception):
    """A document that cannot be ingested; the message is the reason, for one line."""


_WS = re.compile(r"[ \t\f\v\r\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_ZERO_WIDTH = re.compile(r"[\u200b\u200c\u200d\u2060\ufeff]")
_BLANK = re.compile(r"\n\s*\n")


def normalize_paragraphs(text: str) -> str:
    """Collapse whitespace inside paragraphs, drop zero-width characters, one blank line between paragraphs."""
    text = _ZERO_WIDTH.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    paras = []
    for block in _BLANK.split(text):
        para = _WS.sub(" ", block.replace("\n", " ")).strip()
        if para:
            paras.append(para)
    return "\n\n".join(paras)


def _decode(data: bytes, path: Path) -> str:
    if b"\x00" in data[:8192]:
        raise ReadError("binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Mixed or legacy encodings: cp1252 covers most Western files; replace what it cannot.
        text = data.decode("cp1252", errors="replace")
    sample = text[:8192]
    if sample:
        control = sum(1 for c in sample if ord(c) < 32 and c not in "\n\r\t\f")
        if control / len(sample) > 0.05:
            raise ReadError("binary file (mostly control characters)")
    return text


def read_text(path: Path) -> str:
    return normalize_paragraphs(_decode(path.read_bytes(), path))


def read_html(path: Path) -> str:
    from bs4 import BeautifulSoup
    from bs4.element import CData, Comment, Declaration, Doctype, ProcessingInstruction

    soup = BeautifulSoup(_decode(path.read_bytes(), path), "lxml")
    for tag in soup(["script", "style", "noscript", "template", "head", "svg"]):
        tag.decompose()
    for table in soup.find_all("table")[::-1]:  # innermost first: a nested table is read into its cell
        table.replace_with("\n\n" + "\n\n".join(html_table_lines(table)) + "\n\n")
    for br in soup.find_all("br"):
        br.replace_with("\n\n")
    # One pass over the text nodes: a paragraph break wherever the nearest block-level
    # ancestor changes. (Inserting markers around every block tag is quadratic on deep trees.)
    parts: list[str] = []
    prev = None
    for node in soup.find_all(string=True):
        if isinstance(node, (Comment, Doctype, Declaration, ProcessingInstruction, CData)):
            continue
        block = next((p for p in node.parents if p.name in _BLOCK_TAGS), None)
        if parts and block is not prev:
            parts.append("\n\n")
        parts.append(str(node))
        prev = block
    return normalize_paragraphs("".join(parts))


def html_table_lines(table) -> list[str]:
    """One line per row, each cell named by its column header ("Net sales — 2022: $222,730
    million; 2021: …"; see `kbake.ingest.tables.render_table`). Cells are laid on a grid with
    their colspans, so a header spanning a '$' cell and its figure names both. Rows before the
    first row with a figure are the header; a table without figures (or without a header)
    stays 'cell | cell | cell'."""
    from kbake.ingest.tables import is_value, render_table, units_of

    grid: list[list[str]] = []  # a spanning cell in every column it spans (headers)
    once: list[list[str]] = []  # a spanning cell in its first column only (rows)
    plain: list[str] = []
    for tr in table.find_all("tr"):
        row: list[str] = []
        first_only: list[str] = []
        cells = tr.find_all(["td", "th"])
        for c in cells:
            try:
                span = max(1, min(int(c.get("colspan", 1)), 50))
            except (TypeError, ValueError):
                span = 1
            text = c.get_text(" ", strip=True)
            row.extend([text] * span)
            first_only.extend([text] + [""] * (span - 1))
        if any(row):
            grid.append(row)
            once.append(first_only)
            plain.append(" | ".join(t for t in (c.get_text(" ", strip=True) for c in cells) if t))

    def figures(r: list[str]) -> list[int]:
        return [k for k, c in enumerate(r) if k > 0 and c and (is_value(c) or c in "$%")]

    first = next((n for n, r in enumerate(grid) if any(is_value(c) for c in r[1:] if c)), None)
    if first is None or first == 0:
        return plain
    head_cells = [c for r in grid[:first] for c in dict.fromkeys(r) if c and units_of(c)]
    units_line = head_cells[0] if head_cells else ""
    units_only = bool(units_line) and _UNITS_ONLY.match(units_line) is not None
    heads = grid[:first]
    width = max(len(r) for r in grid)
    # Every column after the label that holds something in a row: figures and text cells alike
    # ("Use: Foundry, machining and pump assembly; Segment: MPS; Square feet: 610,000").
    cols = sorted({k for r in once[first:] for k, c in enumerate(r) if k > 0 and c and c not in "$%"})
    headers = [" ".join(dict.fromkeys(h[k] for h in heads if k < len(h) and h[k]
                                      and not (units_only and h[k] == units_line))) for k in cols]
    if not any(headers) or width < 2:
        return plain
    rows, currency = [], []
    for r in once[first:]:
        label = r[0] if r else ""
        values, cur = [], []
        for k in cols:
            v = r[k] if k < len(r) else ""
            values.append(v if v not in "$%" else "")
            cur.append(k > 0 and k - 1 < len(r) and r[k - 1] == "$")
        rows.append((label, values))
        currency.append(cur)
    return render_table(headers, rows, units_line, currency, show_units=units_only)


_UNITS_ONLY = re.compile(r"^\(?\s*(?:amounts |dollars )?in \w+(?:,[^)]*)?\)?$", re.I)


_BLOCK_TAGS = frozenset({"p", "div", "section", "article", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6",
                         "blockquote", "pre", "dt", "dd", "dl", "header", "footer", "tr", "td", "th", "table",
                         "caption", "figcaption", "main", "nav", "aside", "body", "html", "form", "address"})


FURNITURE_SHARE = 0.5  # a header/footer line repeats on at least half the pages
FURNITURE_EDGE = 3  # and sits among the first or last lines of a page


def _line_shape(line: str) -> str:
    return re.sub(r"\d+", "#", " ".join(line.split()).lower())


def furniture_lines(pages: list[list[str]]) -> list[set[int]]:
    """Indices of running headers and footers per page (a "Table of Contents" link, the company
    name, page numbers): lines among the first or last FURNITURE_EDGE of a page whose shape
    (digits as #) is at the edge of at least FURNITURE_SHARE of the pages (and of 3 or more).
    The same line in the body of a page, e.g. a table row, is kept."""
    if len(pages) < 3:
        return [set() for _ in pages]

    def edges(ls: list[str]) -> list[int]:
        return sorted(set(range(min(FURNITURE_EDGE, len(ls)))) | set(range(max(0, len(ls) - FURNITURE_EDGE), len(ls))))

    counts: dict[str, int] = {}
    for ls in pages:
        for shape in {_line_shape(ls[i]) for i in edges(ls)}:
            counts[shape] = counts.get(shape, 0) + 1
    need = max(3, FURNITURE_SHARE * len(pages))
    furniture = {sh for sh, n in counts.items() if n >= need and sh}
    return [{i for i in edges(ls) if _line_shape(ls[i]) in furniture} for ls in pages]


def drop_page_furniture(pages: list[str]) -> list[str]:
    """Pages' text without the lines `furniture_lines` finds."""
    lines = [p.splitlines() for p in pages]
    drops = furniture_lines(lines)
    return ["\n".join(l for i, l in enumerate(ls) if i not in drop) for ls, drop in zip(lines, drops)]


def pdf_blocks(path: Path, password: str) -> list[str] | None:
    """Paragraphs and table rows from pdfplumber's word positions (see `kbake.ingest.tables`);
    None when pdfplumber cannot read a file pypdf could (then pypdf's text is used)."""
    import pdfplumber

    from kbake.ingest.tables import group_lines, page_blocks_from_lines

    try:
        with pdfplumber.open(str(path), password=password) as pdf:
            pages = [group_lines(page.extract_words()) for page in pdf.pages]
    except Exception:  # pdfminer raises many unrelated types on malformed input
        return None
    drops = furniture_lines([[ln.text for ln in lines] for lines in pages])
    blocks: list[str] = []
    for lines, drop in zip(pages, drops):
        blocks.extend(page_blocks_from_lines([ln for i, ln in enumerate(lines) if i not in drop]))
    return blocks


def read_pdf(path: Path) -> str:
    """A PDF's text as a reader sees it: running headers and footers dropped, paragraphs kept
    apart, and each table row written with its line item and column headers."""
    from pypdf import PdfReader

    # pypdf opens the file and says why it cannot be read (encrypted, corrupt, no pages);
    # the text comes from pdfplumber's word positions, and from pypdf only where pdfplumber fails.
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted:
            try:
                ok = reader.decrypt("")
            except Exception:
                ok = 0
            if not ok:
                raise ReadError("encrypted PDF (needs a password)")
        n_pages = len(reader.pages)
    except ReadError:
        raise
    except _pdf_errors() as e:
        raise ReadError(_corrupt(e)) from None
    if not n_pages:
        raise ReadError("PDF has no pages")
    blocks = pdf_blocks(path, "")
    if blocks is None:
        try:
            pages = [page.extract_text() or "" for page in reader.pages]
        except _pdf_errors() as e:
            raise ReadError(_corrupt(e)) from None
        text = normalize_paragraphs("\n\n".join(drop_page_furniture(pages)))
    else:
        text = normalize_paragraphs("\n\n".join(blocks))
    if not text:
        raise ReadError("image-only PDF (no text layer; run OCR first)")
    return text


def _pdf_errors() -> tuple[type[Exception], ...]:
    """What pypdf raises on a malformed file (it has no one base class for it)."""
    from pypdf.errors import PdfReadError

    return (PdfReadError, ValueError, KeyError, TypeError, AttributeError, OSError, RecursionError)


def _corrupt(e: Exception) -> str:
    return f"corrupt PDF ({type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else 'unreadable'})"


_CHECK_BOX = re.compile("[☐☒☑□■]")
_EXHIBIT = re.compile(r"^Exhibit (\d+)\.\d+\b")


def _cover_question(sentence: str) -> bool:
    """A check-box question of a filing's cover, its answer boxes, or a fragment the boxes cut off."""
    return bool(_CHECK_BOX.search(sentence) or re.search(r"check mark|\bfiler\b", sentence, re.I)
                or re.match(r"[\d)(]*[a-z)]", sentence))


def drop_filing_boilerplate(text: str) -> str:
    """Text without what an SEC filing carries for form's sake rather than knowledge: the
    cover page's check-box questions ("Indicate by check mark …  Yes ☒ No ☐", sentence by
    sentence), the exhibit index (paragraphs with "Exhibit Description"), signature blocks
    (paragraphs with "/s/" or opening "SIGNATURES") and the officers' certifications
    (Exhibits 31 and 32, up to the next exhibit). A document without these markers, i.e.
    almost any non-filing, is returned unchanged (paragraphs with "/s/" aside)."""
    out: list[str] = []
    in_certification = False
    for para in text.split("\n\n"):
        m = _EXHIBIT.match(para)
        if m:
            in_certification = m.group(1) in ("31", "32")
        if in_certification or "/s/" in para or para.startswith("SIGNATURES") or "Exhibit Description" in para:
            continue
        if _CHECK_BOX.search(para) or "indicate by check mark" in para.lower():
            para = " ".join(sent for sent in re.split(r"(?<=[.?☐☒☑□■])\s+", para) if not _cover_question(sent))
            if not para:
                continue
        out.append(para)
    return "\n\n".join(out)


def read_document(path: Path) -> str:
    """Plain text of one document, or ReadError with the reason."""
    ext = path.suffix.lower()
    if ext not in SUPPORTED:
        raise ReadError(f"unsupported type '{ext or '(no extension)'}' (supported: {', '.join(sorted(SUPPORTED))})")
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ReadError(f"unreadable ({e.strerror})") from None
    if size == 0:
        raise ReadError("empty file")
    try:
        if ext == ".pdf":
            text = read_pdf(path)
        elif ext in (".html", ".htm"):
            text = read_html(path)
        else:
            text = read_text(path)
    except PermissionError:
        raise ReadError("unreadable (permission denied)") from None
    except OSError as e:
        raise ReadError(f"unreadable ({e.strerror or e})") from None
    if not text.strip():
        raise ReadError("empty (no text after extraction)")
    return text

"""Tables as sentences a model can learn from: every row names its line item and columns.

A flattened table ("Net sales $ 222,730 $ 192,052 $ 163,220") loses which figure belongs to
which year. Here each row becomes one line

    Net sales — 52 Weeks Ended August 28, 2022: $222,730 million; August 29, 2021: $192,052 million; …

with the table's units line ("amounts in millions, except per share data") applied to the
figures it covers and kept once above the rows. `render_table` is shared by the PDF and the
HTML readers; `pdf_page_blocks` finds tables on a PDF page from word positions.

Why hand-written layout rules rather than pdfplumber's `extract_tables`: filings draw few
ruling lines, and on the Costco 10-K income statement pdfplumber's line strategy keeps the
rows but not the header above the ruled area, and its text strategy merges label and value
columns. The rules below use pdfplumber's words (a well-kept extractor) and only decide
which words form a column: right-aligned figures share an x-edge; a header phrase belongs to
the columns under it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_YEAR = re.compile(r"^(19|20)\d\d$")
VALUE = re.compile(r"^\(?\$?\(?-?[\d,]*\d(?:\.\d+)?\)?%?\)?$|^[—–-]$")
UNITS = re.compile(r"\b(?:in|amounts in|dollars in)\s+(millions|thousands|billions)\b", re.I)
_NO_UNIT = re.compile(r"\bshares?\b|\bper\b|%|\bpercent|\bratio\b|\bcount\b|\bnumber of\b|000.?s\b|\bdays?\b|\bweeks?\b", re.I)


def is_value(text: str) -> bool:
    """A table figure: 222,730 / (158) / 13.17 / 2.5% / a dash for an empty cell."""
    return bool(VALUE.match(text))


def units_of(text: str) -> str | None:
    """'millions' from '(amounts in millions, except per share data)'; None if no units line."""
    m = UNITS.search(text)
    return m.group(1).lower() if m else None


def _with_unit(value: str, unit: str | None, label: str, units_line: str, currency: bool) -> str:
    """'$222,730 million' where the units line covers the row; per-share figures, share counts,
    percentages and dashes stay as printed (the units line's "except per share data")."""
    if not is_value(value):
        return value  # a text cell ("Owned") takes neither currency nor units
    shown = ("$" + value) if currency and not value.startswith("$") and value not in "—–-" else value
    if not unit or value in "—–-" or "%" in value or _NO_UNIT.search(label):
        return shown
    if "." in value and re.search(r"\bexcept\b", units_line, re.I):
        return shown  # "except per share data": a decimal here is a per-unit figure
    return shown + " " + unit[:-1]


def render_row(label: str, cells: list[tuple[str, str]], unit: str | None = None, units_line: str = "",
               currency: list[bool] | None = None) -> str:
    """One row as text: 'label — header: value; header: value'. `cells` pairs each column's
    header with the row's value in it (empty values skipped)."""
    parts = []
    for i, (head, value) in enumerate(cells):
        if not value:
            continue
        v = _with_unit(value, unit, label, units_line, bool(currency and currency[i]))
        parts.append(f"{head}: {v}" if head else v)
    return f"{label} — " + "; ".join(parts) if label else "; ".join(parts)


def render_table(headers: list[str], rows: list[tuple[str, list[str]]], units_line: str = "",
                 currency: list[list[bool]] | None = None, indent: list[float] | None = None,
                 show_units: bool = True) -> list[str]:
    """Lines for a whole table: the units line once, then one line per row. A row without
    figures is a section label and prefixes the rows under it ("REVENUE: Net sales — …"); with
    `indent` (a PDF label's x position) only the rows indented under it."""
    unit = units_of(units_line)
    out = [units_line.strip()] if units_line.strip() and show_units else []
    section, section_x = "", -1.0
    for r, (label, values) in enumerate(rows):
        if not any(values):
            section, section_x = label.rstrip(":"), (indent[r] if indent else -1.0)
            out.append(label)
            continue
        if section and indent is not None and indent[r] <= section_x + 2:
            section = ""  # a row back at the section's margin ("INCOME BEFORE INCOME TAXES") ends it
        under = section and (indent is None or indent[r] > section_x + 2)
        full = f"{section}: {label}" if under and label else (label or section)
        out.append(render_row(full, list(zip(headers, values)), unit, units_line,
                              currency[r] if currency else None))
    return out


# ---- PDF pages -----------------------------------------------------------------------------

LINE_TOL = 3.0  # words whose tops differ by less than this (points) share a line
PHRASE_GAP = 10.0  # a wider gap between words starts a new header phrase
HEADER_SLACK = 45.0  # a header word may start this far left of the first figure column


@dataclass
class Line:
    """One printed line of a page: its words (pdfplumber dicts) left to right."""

    words: list[dict]
    top: float = 0.0
    bottom: float = 0.0

    @property
    def text(self) -> str:
        return " ".join(w["text"] for w in self.words)

    def split(self) -> tuple[list[dict], list[dict], list[bool]]:
        """(label words, figure words, currency flag per figure): trailing figures, '$' marks dropped."""
        vals: list[dict] = []
        cur: list[bool] = []
        i = len(self.words)
        percent = False
        while i > 0:
            w = self.words[i - 1]
            t = w["text"]
            if t == "%" and not percent:  # "10.48 %": the sign printed as its own word
                percent = True
                i -= 1
                continue
            if percent:
                if not is_value(t):
                    i += 1  # a lone '%' not after a figure belongs to the label
                    break
                w = dict(w, text=t + "%")
                percent = False
                vals.insert(0, w)
                cur.insert(0, False)
                i -= 1
                continue
            if t == "$" and vals:
                cur[0] = True
                i -= 1
                continue
            if t.endswith("$") and is_value(t[:-1]) and len(t) > 1:  # "633$": a figure run into a '$'
                break
            if not is_value(t):
                break
            vals.insert(0, w)
            cur.insert(0, t.startswith("$"))
            i -= 1
        if i == 0 and len(vals) >= 3 and _YEAR.match(vals[0]["text"]) and not cur[0]:
            return vals[:1], vals[1:], cur[1:]  # "2023 $ 277 $ 288": a year is the row's label
        return self.words[:i], vals, cur


def group_lines(words: list[dict]) -> list[Line]:
    """Words into lines by their top coordinate, each line left to right."""
    lines: list[Line] = []
    for w in sorted(words, key=lambda w: (round(w["top"]), w["x0"])):
        if lines and abs(w["top"] - lines[-1].top) < LINE_TOL:
            lines[-1].words.append(w)
            lines[-1].bottom = max(lines[-1].bottom, w["bottom"])
        else:
            lines.append(Line([w], w["top"], w["bottom"]))
    for ln in lines:
        ln.words.sort(key=lambda w: w["x0"])
    return lines


def _phrases(words: list[dict]) -> list[list[dict]]:
    out: list[list[dict]] = []
    for w in words:
        if out and w["x0"] - out[-1][-1]["x1"] <= PHRASE_GAP:
            out[-1].append(w)
        else:
            out.append([w])
    return out


@dataclass
class Table:
    """A run of page lines read as one table: its columns' right edges and the lines it spans."""

    first: int
    last: int
    edges: list[float]
    lefts: list[float]
    header_from: int
    units_line: str = ""
    headers: list[str] = field(default_factory=list)


_SENTENCE_INSIDE = re.compile(r"[a-z]{2,}\. [A-Z]")  # "Division. Mr.": a sentence ends inside
MAX_LABEL_WORDS = 12  # a longer "label" is prose that happens to end in numbers (officers' ages)


def _is_row(line: Line) -> bool:
    label, vals, _ = line.split()
    prose = _SENTENCE_INSIDE.search(" ".join(w["text"] for w in label))
    return 0 < len(label) <= MAX_LABEL_WORDS and not prose and len(vals) >= 2 and not _year_header(line)


def _header_part(line: Line, lefts: list[float], label_right: float) -> Line | None:
    """The part of `line` that heads the figure columns: the whole line when it sits right of
    the labels, its years ('Estimated Useful Lives 2022 2021'), or the words after a wide gap
    ('As of and for the year ended   (52 weeks) (52 weeks) ...'); None for anything else."""
    if _over_columns(line, lefts, label_right):
        return line
    years = _year_header(line)
    if years is not None:
        return years
    for n in range(1, len(line.words)):
        gap = line.words[n]["x0"] - line.words[n - 1]["x1"]
        right = line.words[n:]
        if gap > 3 * PHRASE_GAP and right[0]["x0"] > label_right + 2 and len(_phrases(right)) >= 2:
            return Line(right, line.top, line.bottom)
    return None


def _year_header(line: Line) -> Line | None:
    """'Estimated Useful Lives 2022 2021': a header line whose figures are all years; returns
    the line reduced to its year words."""
    _, vals, cur = line.split()
    if len(vals) >= 2 and not any(cur) and all(_YEAR.match(w["text"]) for w in vals):
        return Line(vals, line.top, line.bottom)
    return None


def _over_columns(line: Line, lefts: list[float], label_right: float = float("inf")) -> bool:
    """A header line: every word starts right of the label column (near or over the figures)."""
    x0 = line.words[0]["x0"]
    return x0 >= min(lefts) - HEADER_SLACK or x0 > label_right + 2


def _section_label(line: Line, lefts: list[float]) -> bool:
    """'REVENUE', 'CURRENT ASSETS': a short line in the label column with no figures."""
    year = len(line.words) == 1 and _YEAR.match(line.words[0]["text"])  # a segment table's "2022"
    return ((year or not line.split()[1]) and len(line.words) <= 8 and not _over_columns(line, lefts)
            and not units_of(line.text))


def find_tables(lines: list[Line]) -> list[Table]:
    """Runs of at least three rows with two or more right-aligned figures (label-only lines
    between them are section labels), plus the header lines above whose words sit over the
    figure columns and the nearest units line."""
    tables: list[Table] = []
    claimed: set[int] = set()
    i = 0
    while i < len(lines):
        if not _is_row(lines[i]):
            i += 1
            continue
        j, last_row, n_rows = i, i, 0
        while j < len(lines):
            ln = lines[j]
            if _is_row(ln):
                last_row, n_rows = j, n_rows + 1
            elif ln.split()[1] or len(ln.words) > 14 or j - last_row > 2:
                break
            j += 1
        if n_rows < 1:
            i = last_row + 1
            continue
        rows = [lines[k] for k in range(i, last_row + 1) if _is_row(lines[k])]
        counts: dict[int, int] = {}
        for r in rows:
            n = len(r.split()[1])
            counts[n] = counts.get(n, 0) + 1
        ncol = max(counts, key=lambda n: (counts[n], n))
        full = [r.split()[1] for r in rows if len(r.split()[1]) == ncol]
        edges = [sorted(v[c]["x1"] for v in full)[len(full) // 2] for c in range(ncol)]
        lefts = [min(v[c]["x0"] for v in full) for c in range(ncol)]
        label_right = max((r.split()[0][-1]["x1"] for r in rows), default=0.0)
        # Section labels directly above the first row ("REVENUE") belong to the table.
        up = i
        while up > 0 and i - up < 2 and up - 1 not in claimed and _section_label(lines[up - 1], lefts):
            up -= 1
        if up < i and up > 0 and _header_part(lines[up - 1], lefts, label_right) is not None:
            i = up
        # Header lines: directly above, every word right of the label column.
        k = i - 1
        heads: list[Line] = []
        while k >= 0 and i - k <= 5 and k not in claimed:
            ln = lines[k]
            if units_of(ln.text):
                break
            ln = _header_part(ln, lefts, label_right)
            if ln is None:
                break
            heads.insert(0, ln)
            k -= 1
        if not heads and n_rows < 3:  # two rows and no header: too little to call it a table
            i = last_row + 1
            continue
        t = Table(i, last_row, edges, lefts, k + 1)
        for m in range(max(0, k - 3), i):
            if units_of(lines[m].text):
                t.units_line = lines[m].text
        t.headers = _column_headers(heads, edges, lefts)
        prev = tables[-1] if tables else None
        if not any(t.headers) and prev and len(prev.edges) == ncol and \
                all(abs(a - b) < 6 for a, b in zip(prev.edges, edges)):
            # The same columns resumed after a run of labels (the balance sheet's EQUITY part).
            t.headers, t.units_line = prev.headers, t.units_line or prev.units_line
        tables.append(t)
        claimed.update(range(t.header_from, last_row + 1))
        i = last_row + 1
    return tables


def _column_headers(header_lines: list[Line], edges: list[float], lefts: list[float]) -> list[str]:
    """Each column's header, top to bottom: a phrase goes to the columns under its span (a
    spanning '52 Weeks Ended' to all of them), one phrase per column goes to that column."""
    ncol = len(edges)
    centres = [(a + b) / 2 for a, b in zip(lefts, edges)]
    width = min((edges[c + 1] - edges[c] for c in range(ncol - 1)), default=100.0)
    heads: list[list[str]] = [[] for _ in range(ncol)]
    for ln in header_lines:
        ph = _phrases(ln.words)
        if len(ph) == ncol:
            for c, p in enumerate(ph):
                heads[c].append(" ".join(w["text"] for w in p))
            continue
        for p in ph:
            a, b = p[0]["x0"], p[-1]["x1"]
            under = [c for c in range(ncol) if a - width / 2 <= centres[c] <= b + width / 2]
            if len(ph) == 1:
                # The line's only phrase spans all columns when centred over the table's middle
                # ("52 Weeks Ended"); over one column ("Other" above "International") it is that column's.
                pc, mid = (a + b) / 2, sum(centres) / ncol
                if abs(pc - mid) <= min(abs(pc - c) for c in centres) + 1:
                    under = list(range(ncol))
                else:
                    under = [min(range(ncol), key=lambda c: abs(centres[c] - pc))]
            if not under:
                mid = (a + b) / 2
                under = [min(range(ncol), key=lambda c: abs(centres[c] - mid))]
            for c in under:
                heads[c].append(" ".join(w["text"] for w in p))
    return [" ".join(h) for h in heads]


def table_lines(lines: list[Line], t: Table, show_units: bool = True) -> list[str]:
    """The rendered text of one table found on a page."""
    rows: list[tuple[str, list[str]]] = []
    currency: list[list[bool]] = []
    indent: list[float] = []
    for ln in lines[t.first : t.last + 1]:
        label, vals, cur = ln.split()
        if not label and len(vals) == 1 and _YEAR.match(vals[0]["text"]):
            label, vals, cur = vals, [], []  # a year over a block of rows is a section label
        text = " ".join(w["text"] for w in label)
        cells = [""] * len(t.edges)
        flags = [False] * len(t.edges)
        for w, c in zip(vals, cur):
            col = min(range(len(t.edges)), key=lambda k: abs(t.edges[k] - w["x1"]))
            cells[col] = w["text"]
            flags[col] = c
        if rows and not any(rows[-1][1]) and rows[-1][0] and (not vals or text[:1].islower()):
            # A label wrapped over two lines ("... no shares issued and" / "outstanding — —").
            text = rows.pop()[0] + " " + text
            currency.pop()
            x0 = indent.pop()
        else:
            x0 = ln.words[0]["x0"]
        rows.append((text, cells))
        currency.append(flags)
        indent.append(x0)
    if not any(t.headers):
        return [" | ".join([lab] + [v for v in vals if v]) for lab, vals in rows]
    return render_table(t.headers, rows, t.units_line, currency, indent, show_units)


def pdf_page_blocks(words: list[dict]) -> list[str]:
    """A page's text as blocks: prose paragraphs (split at wider vertical gaps) and tables
    rendered row by row (each row its own block, so a chunk never splits a row)."""
    lines = group_lines(words)
    return page_blocks_from_lines(lines)


def page_blocks_from_lines(lines: list[Line]) -> list[str]:
    tables = find_tables(lines)
    skip: dict[int, Table] = {}
    for t in tables:
        for k in range(t.header_from, t.last + 1):
            skip[k] = t
    gaps = sorted(lines[k + 1].top - lines[k].top for k in range(len(lines) - 1))
    step = gaps[len(gaps) // 2] if gaps else 0.0
    blocks: list[str] = []
    para: list[str] = []
    prev: Line | None = None
    done: set[int] = set()
    for k, ln in enumerate(lines):
        if k in skip:
            t = skip[k]
            if id(t) not in done:
                done.add(id(t))
                if para:
                    blocks.append(" ".join(para))
                    para = []
                shown = bool(blocks) and blocks[-1].endswith(t.units_line)
                blocks.extend(table_lines(lines, t, show_units=not shown))
            prev = None
            continue
        if para and prev is not None and step and ln.top - prev.top > 1.6 * step:
            blocks.append(" ".join(para))
            para = []
        para.append(ln.text)
        prev = ln
    if para:
        blocks.append(" ".join(para))
    return blocks

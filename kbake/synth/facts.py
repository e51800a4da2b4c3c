"""The fact table: one row per atomic fact of the documents, read from their table rows.

Ingest writes every table row as one line that names its line item, each column's header
and the units (`kbake/ingest/tables.py`):

    REVENUE: Net sales — 52 Weeks Ended August 28, 2022: $222,730 million; 52 Weeks Ended …

Each (row, column) pair of such a line is a fact — entity, attribute (the line item),
period, value with unit — that needs no language model to be right. The table is the
ground truth the restatements, the fact QA and the fact probes are all written from
(`kbake/synth/augment.py`), so a generator's mistakes cannot enter them.

Facts are split, seeded, into `qa` (their QA pairs are trained) and `heldout` (only their
restatements are trained; their probes measure what restatements alone teach: Allen-Zhu &
Li 2023, "Physics of Language Models 3.1", mixed training). Facts that state the same
figure for the same period (one figure printed in two tables) share a split, so no
held-out fact is trained as QA under another name.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass

import pyarrow as pa

from kbake.run import RunDir, atomic_write_parquet

ROW = re.compile(r"^(?P<label>[^\n]{1,160}?) — (?P<cells>.+)$")
CELL = re.compile(r"^(?P<head>[^:]{1,80}): (?P<value>\S.*)$")
FIGURE = re.compile(r"^\(?\$?\(?-?[\d,]*\d(?:\.\d+)?\)?%?\)?(?: (?:million|thousand|billion))?$")
YEAR = re.compile(r"(?:(?<=FY)|\b)(19|20)\d\d\b")  # '2022', and 'FY2025' as headers print it
DATE = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December)"
                  r"\s+\d{1,2},\s+(?:19|20)\d\d\b")
WEEKS = re.compile(r"\b(\d{2}) Weeks Ended\b", re.I)
_SUFFIX = re.compile(r"[,.]?\s+(?:Corporation|Corp\.?|Incorporated|Inc\.?|Company|Co\.|Ltd\.?|Limited|plc|LLC|"
                     r"Holdings|Group)$", re.I)


@dataclass
class Fact:
    """One atomic fact. `period` is the fiscal year ('' when the column names none);
    `period_text` the column's date words as printed ("52 Weeks Ended August 28, 2022");
    `column` whatever else the header says ("Number of Employees"); `row_id` names the table
    row (its facts are restated together; neighbouring rows give probe distractors)."""

    fact_id: str
    entity: str
    attribute: str
    section: str
    column: str
    period: str
    period_text: str
    value: str
    unit: str
    source: str
    doc_id: str
    chunk_id: str
    row_id: str
    row_index: int
    evidence: str
    as_of: str
    table: str = ""
    """The table the row belongs to, named by its first and last line items (the knowledge map's unit)."""
    split: str = "qa"
    """'qa': QA pairs of this fact are trained; 'heldout': only its restatements are."""

    @property
    def doc_name(self) -> str:
        """The document's id without its path hash ('acme-2025'): seeds use this, so a run's
        splits and wordings do not change with the folder its documents lie in."""
        return self.doc_id.rsplit("-", 1)[0]


FACT_SCHEMA = pa.schema([(name, pa.int64() if name == "row_index" else pa.string()) for name in Fact.__dataclass_fields__])


def short_name(entity: str) -> str:
    """How people name a company: 'Costco' for 'Costco Wholesale Corporation' (corporate
    suffixes dropped, then the first word when more remain)."""
    name = entity.strip()
    while (stripped := _SUFFIX.sub("", name)) != name:
        name = stripped
    return name.split()[0] if name.split() else entity


def unit_of(value: str) -> str:
    """'$ million' / '%' / 'million' / '' : what kind of figure a value is, so distractors match it."""
    parts = ("$" if "$" in value else "") + ("%" if value.endswith("%") else "")
    m = re.search(r"(million|thousand|billion)$", value)
    return (parts + " " + m.group(1)).strip() if m else parts


def _period(head: str) -> tuple[str, str, str]:
    """(fiscal year, date words as printed, the rest of the header) of a column header."""
    date = DATE.search(head)
    weeks = WEEKS.search(head)
    years = [m.group(0) for m in YEAR.finditer(head)]
    if not years:
        return "", "", head.strip()
    year = years[-1]
    printed = (f"{weeks.group(0)} " if weeks else "") + (date.group(0) if date else year)
    rest = re.sub(rf"\bFY\s?(?={year})", "", head)
    for piece in (weeks.group(0) if weeks else "", date.group(0) if date else "", year):
        rest = rest.replace(piece, " ") if piece else rest
    rest = re.sub(r"\s+", " ", rest).strip(" ,;:-")
    return year, printed, "" if rest.lower() in ("fiscal", "fiscal year") else rest


def _attribute(label: str) -> tuple[str, str]:
    """(attribute, section) of a row label: 'REVENUE: Net sales' -> ('Net sales', 'REVENUE');
    'Increases in net sales: U.S.' -> ('Increases in net sales, U.S.', '') — a lower-case
    prefix is the measure and the label its segment."""
    if ": " not in label:
        return label.strip(), ""
    section, item = label.rsplit(": ", 1)
    if section.isupper():
        return item.strip(), section.strip()
    return f"{section.strip()}, {item.strip()}", ""


def table_rows(chunks: list[dict]) -> list[tuple[dict, int, str]]:
    """(chunk, table number, line) of every table-row line, each distinct line once per
    document (chunks overlap), in document order; consecutive row lines form one table."""
    seen: set[tuple[str, str]] = set()
    out = []
    table, last = 0, False
    for c in sorted(chunks, key=lambda c: (c["doc_id"], c["start"])):
        for line in c["text"].split("\n"):
            line = line.strip()
            is_row = " — " in line
            if is_row and not last:
                table += 1
            last = is_row or (last and (not line or (c["doc_id"], line) in seen))
            if not is_row or (c["doc_id"], line) in seen:
                continue
            seen.add((c["doc_id"], line))
            out.append((c, table, line))
    return out


def row_facts(chunk: dict, line: str, row_index: int) -> list[Fact]:
    """The facts of one row line; [] for a line that is not a clean row (a header that is
    not a column name, a cell that is not a figure)."""
    m = ROW.match(line)
    if not m:
        return []
    label = m.group("label").strip()
    if not re.search(r"[A-Za-z]", label) or "—" in label:
        return []
    attribute, section = _attribute(label)
    entity = chunk.get("entity") or ""
    out = []
    row_id = f"{chunk['doc_id']}:row-{row_index:04d}"
    for cell in m.group("cells").split("; "):
        cm = CELL.match(cell.strip())
        if not cm or not FIGURE.match(cm.group("value").strip()):
            continue
        value = cm.group("value").strip()
        if value.strip("()$%") in ("", "—", "-"):
            continue
        year, printed, rest = _period(cm.group("head"))
        if not year or len(rest.split()) > 6 or re.search(r"\d", rest):
            continue  # no period (a statement of equity's running balances), or wrapped header lines run together
        out.append(Fact(fact_id="", entity=entity, attribute=attribute, section=section, column=rest, period=year,
                        period_text=printed, value=value, unit=unit_of(value), source="table",
                        doc_id=chunk["doc_id"], chunk_id=chunk["chunk_id"], row_id=row_id, row_index=row_index,
                        evidence=line, as_of=chunk.get("as_of") or ""))
    return out


GENERIC = {"total", "other", "others", "thereafter", "foreign", "federal", "state", "current", "deferred", "basic",
           "diluted", "net", "subtotal", "united states", "canada", "other international"}


def phrase(f: Fact) -> str:
    """How the texts name a fact's attribute: the line item, with its statement section
    when the item alone says little ('Diluted, net income per common share attributable to
    Costco') and the column's words when it has some ('Total employees (number of employees)')."""
    name = f.attribute[:1] + f.attribute[1:] if not f.attribute.isupper() else f.attribute.capitalize()
    if f.section and f.attribute.lower() in GENERIC:
        name = f"{name}, {f.section.lower()}"
    if f.column:
        name = f"{name} ({f.column.lower()})"
    return name


def digits(value: str) -> str:
    return re.sub(r"[^\d.]", "", value)


def row_value_digits(facts) -> dict[str, set[str]]:
    """Table row id -> the digits of its facts' values (`digits`): which figures a probe's options
    share with its own row. `facts`: Fact objects or any rows with `row_id` and `value` (a
    DataFrame's itertuples()); facts without a row (prose) are left out."""
    rows: dict[str, set[str]] = {}
    for f in facts:
        if f.row_id:
            rows.setdefault(f.row_id, set()).add(digits(f.value))
    return rows


def seeded_share(key: str) -> float:
    """A number in [0, 1) fixed by `key` (sha256): a seeded draw that no process state changes."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") / 2**64


def assign_split(facts: list[Fact], heldout_share: float, seed: int, unit: str = "fact") -> None:
    """Mark about `heldout_share` of the facts 'heldout', seeded, per fact or per table row
    (`unit`). Facts with the same figure in the same period and document share a split (one
    figure printed in two tables); per row, such a figure is 'qa' when any of its copies is, so
    no held-out fact is trained as QA under another name.

    Per row, a held-out probe's same-line-item distractors (its other periods) are held out
    too; per fact they are mostly QA-trained values, which training makes the model prefer for
    any question about that line item, so a held-out probe then measures that interference as
    well as what restatements teach."""
    if unit == "fact":
        for f in facts:
            f.split = "heldout" if seeded_share(f"{seed}|{f.doc_name}|{f.period}|{digits(f.value)}") < heldout_share else "qa"
        return
    if unit != "row":
        raise ValueError(f"synth.fact_heldout_unit: {unit!r} is not 'fact' or 'row'")
    for f in facts:
        f.split = "heldout" if seeded_share(f"{seed}|{f.doc_name}|row|{f.row_index}") < heldout_share else "qa"
    trained = {(f.doc_id, f.period, digits(f.value)) for f in facts if f.split == "qa"}
    for f in facts:
        if (f.doc_id, f.period, digits(f.value)) in trained:
            f.split = "qa"


def build_facts(chunks: list[dict], heldout_share: float, seed: int, heldout_unit: str = "fact") -> list[Fact]:
    """Every table fact of the chunks, deduplicated (same document, attribute, column,
    period and value), with ids and the seeded QA/held-out split."""
    facts, seen = [], set()
    for i, (chunk, table, line) in enumerate(table_rows(chunks)):
        for f in row_facts(chunk, line, i):
            f.table = f"{chunk['doc_id']}:table-{table:03d}"
            if phrase(f).lower() in GENERIC:
                continue  # 'Total — 2022: $1,925': which total, the row alone does not say
            key = (f.doc_id, f.attribute.lower(), f.column.lower(), f.period, f.value)
            if key in seen:
                continue
            seen.add(key)
            f.fact_id = f"fact-{len(facts) + 1:05d}"
            facts.append(f)
    assign_split(facts, heldout_share, seed, heldout_unit)
    names: dict[str, list[str]] = {}
    for f in facts:
        names.setdefault(f.table, [])
        if phrase(f) not in names[f.table]:
            names[f.table].append(phrase(f))
    for f in facts:  # 'Net sales … Net income' (7 line items): what a reader recognises a table by
        items = names[f.table]
        f.table = f"{items[0]} … {items[-1]} ({len(items)} line items)" if len(items) > 1 else items[0]
    return facts


def write_facts(run: RunDir, facts: list[Fact]) -> None:
    """RUN/facts.parquet: opens in pandas (`pd.read_parquet`) and datasets."""
    atomic_write_parquet(run.facts, pa.Table.from_pylist([asdict(f) for f in facts], schema=FACT_SCHEMA))


def read_facts(run: RunDir) -> list[Fact]:
    import pyarrow.parquet as pq

    if not run.facts.exists():
        raise FileNotFoundError(f"{run.facts}: no fact table; run `kbake synth --run {run.root} --kind restate,fact_qa` first")
    return [Fact(**r) for r in pq.read_table(run.facts).to_pylist()]


def fact_stats(facts: list[Fact]) -> dict:
    """Counts of facts by source, by document and by split, and the table rows and prose sentences
    they come from (for `kbake synth --stats`)."""
    from collections import Counter

    return {"n": len(facts), "by_source": dict(Counter(f.source for f in facts)),
            "by_doc": dict(Counter(f.doc_id for f in facts)), "by_split": dict(Counter(f.split for f in facts)),
            "rows": len({f.row_id for f in facts if f.source == "table"}),
            "sentences": len({f.row_id for f in facts if f.source == "prose"})}

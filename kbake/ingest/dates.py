"""When a document's facts were true (`as_of`) and whose facts they are (`entity`).

A company files a new 10-K every year and last year's numbers become stale; to train
updates in and to score them, every document carries the date its facts hold and the
entity it describes, so documents of one entity line up in time. The date comes, in this
order, from `kbake ingest --as-of`, a front-matter field `as_of:` (Markdown/text), or the
first "fiscal year ended <date>" / "period ended <date>" line in the document's opening
text; the entity from `--entity`, the filing's "(Exact name of registrant …)" line, or the
file name without its digits ("costco-10k-fy2022" -> "costco-10k-fy").
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], 1)}
_MONTH_RE = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_ENDED = re.compile(rf"\b(?:fiscal\s+)?(?:year|period|quarter)\s+ended\s+({_MONTH_RE}\s+\d{{1,2}},?\s+\d{{4}})", re.I)
_FRONT = re.compile(r"\A\ufeff?---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)
_REGISTRANT = re.compile(r"([A-Z][A-Za-z0-9&.,' -]{2,80}?)\s*\(Exact name of registrant", re.S)
OPENING_CHARS = 20_000
"""Only the opening of a document is searched: a filing names its own period on the cover."""


def parse_date(text: str) -> date | None:
    """'August 28, 2022', 'Aug. 28 2022', 'SEPTEMBER 27, 2025' or '2022-08-28' -> a date."""
    text = text.strip()
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    m = re.match(r"([A-Za-z]+)\.?\s+(\d{1,2}),?\s+(\d{4})$", text)
    if not m:
        return None
    word = m.group(1).lower()
    month = next((n for name, n in _MONTHS.items() if name.startswith(word[:3]) and (word in name or word == "sept")), None)
    try:
        return date(int(m.group(3)), month, int(m.group(2))) if month else None
    except ValueError:
        return None


def front_matter_as_of(raw: str) -> date | None:
    """`as_of:` in a YAML front-matter block at the top of a Markdown or text file."""
    m = _FRONT.match(raw)
    if not m:
        return None
    line = re.search(r"^as_of:\s*['\"]?([^'\"\n]+)", m.group(1), re.M)
    return parse_date(line.group(1)) if line else None


def stated_as_of(text: str) -> date | None:
    """The first 'fiscal year ended <date>' (or period/quarter ended) in the opening text."""
    m = _ENDED.search(text[:OPENING_CHARS])
    return parse_date(" ".join(m.group(1).split())) if m else None


_COMPANY = re.compile(r"\b[A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*){0,5},?\s+(?:Inc\.|INC\.|Corporation|CORPORATION|"
                      r"Incorporated|Ltd\.|LTD\.|plc|PLC|LLC|N\.V\.|S\.A\.|AG|SE)")


def entity_of(path: Path, text: str) -> str:
    """The registrant's name on a filing's cover, else the first company name of the opening
    text as it is written in mixed case ('Corvane Hydrosystems, Inc.'), else the file name
    without digits."""
    m = _REGISTRANT.search(text[:OPENING_CHARS])
    if m:
        name = " ".join(m.group(1).split())
        name = re.sub(r"^.*?\b(?:number|No\.)\s*[\d-]+\s+", "", name)  # "Commission file number 0-20355 Costco …"
        return name.strip(" ,")
    opening = text[:OPENING_CHARS]
    m = _COMPANY.search(opening)
    if m:  # 'CORVANE HYDROSYSTEMS, INC.' on the cover: its first mixed-case spelling, else title case
        spelled = re.escape(" ".join(m.group(0).split())).replace(r"\ ", r"\s+")
        readable = [x.group(0) for x in re.finditer(spelled, opening, re.I) if not x.group(0).isupper()]
        return " ".join((readable[0] if readable else m.group(0).title()).split())
    return re.sub(r"-+", "-", re.sub(r"\d+", "", path.stem.lower())).strip("-_ ") or path.stem


def document_as_of(path: Path, text: str, override: date | None = None) -> date | None:
    """`override`, else front matter (read from the raw file), else the stated period end."""
    if override:
        return override
    if path.suffix.lower() in (".md", ".markdown", ".txt"):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                found = front_matter_as_of(f.read(4096))
            if found:
                return found
        except OSError:
            pass
    return stated_as_of(text)

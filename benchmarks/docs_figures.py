"""Keeps the figures typed into prose in step with the runs they cite (issue 31): every change
written as `+2.2 [-8.9, +13.3]` in README.md and docs/*.md must be one that a committed
docs/data/*.json holds (a {diff, lo, hi}, or a {share, lo, hi}, at the printed precision, in points
or as stored), and recipes quote none (a recipe names the result it produces; the figures live in docs).

A section measured before docs/data existed is exempt when a line of it says so:

    <!-- figures: typed from runs before docs/data; not checked -->

which covers the section to its next heading of the same or a higher level. Superseded results live
in docs/results.md's "## Changelog" section, each a "### " entry whose title carries its date and
"superseded" and whose first line says "*Superseded because: … Replaced by: …*". The script prints
each figure no data file holds and each changelog entry that lacks those, and exits 1 if any;
tests/test_docs.py runs it. It also counts the exempt sections left outside the changelog.

    python benchmarks/docs_figures.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXEMPT = "<!-- figures: typed from runs before docs/data; not checked -->"
NUM = r"[+\-−]?\d+(?:\.\d+)?"
FIGURE = re.compile(rf"({NUM})%?\s*\[({NUM})%?,\s*({NUM})%?\]")


def _number(text: str) -> tuple[float, int]:
    """The value and its count of decimals: '-8.9' -> (-8.9, 1)."""
    text = text.replace("−", "-")
    return float(text), len(text.split(".")[1]) if "." in text else 0


def data_figures(folder: Path) -> set[tuple[float, float, float, int]]:
    """Every {diff, lo, hi} and {share, lo, hi} of the JSON files in `folder`, scaled by 100 and by 1,
    rounded to 0-3 decimals (margins are printed in nats to 3)."""
    out: set[tuple[float, float, float, int]] = set()

    def walk(o) -> None:
        if isinstance(o, dict):
            for mid in ("diff", "share"):  # a change, or a share with its interval (Wilson)
                if all(isinstance(o.get(k), (int, float)) for k in (mid, "lo", "hi")):
                    for scale in (100, 1):
                        for dec in (0, 1, 2, 3):
                            out.add((*(round(o[k] * scale, dec) + 0.0 for k in (mid, "lo", "hi")), dec))
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    for path in sorted(folder.glob("*.json")):
        walk(json.loads(path.read_text()))
    return out


def prose_figures(text: str) -> list[tuple[int, str, tuple[float, float, float, int]]]:
    """(line number, as written, key) of each change figure outside exempt sections."""
    out, exempt_level, level = [], None, 0
    for n, line in enumerate(text.splitlines(), 1):
        heading = re.match(r"(#+) ", line)
        if heading and exempt_level is not None and len(heading.group(1)) <= exempt_level:
            exempt_level = None
        if heading:
            level = len(heading.group(1))
        if EXEMPT in line:
            exempt_level = level
        if exempt_level is not None:
            continue
        for m in FIGURE.finditer(line):
            nums = [_number(g) for g in m.groups()]
            dec = max(d for _, d in nums)
            out.append((n, m.group(0), (*(v + 0.0 for v, _ in nums), dec)))
    return out


def unbacked(root: Path = ROOT) -> list[str]:
    """'FILE:LINE: FIGURE' for each prose figure no data file holds, and each figure in a recipe."""
    known = data_figures(root / "docs" / "data")
    problems = []
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for n, written, key in prose_figures(path.read_text()):
            if key not in known:
                problems.append(f"{path.relative_to(root)}:{n}: {written} is in no docs/data file")
    for path in sorted((root / "recipes").rglob("*.yaml")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for m in FIGURE.finditer(line):
                problems.append(f"{path.relative_to(root)}:{n}: {m.group(0)}: a recipe names its result, "
                                "the figure belongs in docs")
    return problems


def changelog_problems(text: str, name: str = "docs/results.md") -> list[str]:
    """'FILE:LINE: …' for each changelog entry without a date and "superseded" in its title, or whose
    first line does not say why it was superseded and what replaced it."""
    lines, problems, inside = text.splitlines(), [], False
    for i, line in enumerate(lines):
        if line.startswith("## "):
            inside = line.startswith("## Changelog")
        if not (inside and line.startswith("### ")):
            continue
        if not re.search(r"\d{4}-\d{2}-\d{2}", line) or "superseded" not in line:
            problems.append(f"{name}:{i + 1}: changelog entry without its date and 'superseded' in the title")
        first = next((x for x in lines[i + 1:] if x.strip()), "")
        if not (first.startswith("*Superseded because:") and "Replaced by:" in first):
            problems.append(f"{name}:{i + 1}: changelog entry whose first line is not "
                            "'*Superseded because: … Replaced by: …*'")
    return problems


def exempt_sections(text: str) -> list[str]:
    """Titles of the sections outside the changelog that carry the exempt marker (to rerun or retire)."""
    out, title = [], ""
    for line in text.splitlines():
        if line.startswith("## Changelog"):
            break
        if line.startswith("#"):
            title = line.lstrip("#").strip()
        elif line.strip() == EXEMPT:
            out.append(title)
    return out


def main() -> None:
    results = (ROOT / "docs" / "results.md").read_text()
    problems = unbacked() + changelog_problems(results)
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s)" if problems else "every prose figure is in docs/data; the changelog is in order")
    if left := exempt_sections(results):
        print(f"{len(left)} section(s) of docs/results.md still typed from runs before docs/data: " + "; ".join(left))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

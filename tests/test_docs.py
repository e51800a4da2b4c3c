"""The docs' generated tables match the committed data they are generated from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_generated_tables_match_their_data():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "docs_tables.py")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_a_table_that_drifts_from_its_data_is_caught(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import docs_tables
    finally:
        sys.path.pop(0)
    data = {"models": ["m-s0", "m-s1"], "kinds": {"fact_qa": {
        "n_test": 10, "base_closed": 0.2, "base_rag": 0.3,
        "closed": {"diff": 0.1, "lo": 0.0, "hi": 0.2, "per_seed": [0.05, 0.15], "gained": 2, "lost": 1, "detectable": 0.12},
        "closed_minus_base_rag": None, "dev_closed": None}}}
    (tmp_path / "d.json").write_text(__import__("json").dumps(data))
    monkeypatch.setattr(docs_tables, "ROOT", tmp_path)
    doc = "x\n<!-- table: fact_seeds d.json -->\n| stale |\n<!-- /table -->\ny\n"
    new = docs_tables.render(doc)
    assert "| stale |" not in new and "+10.0 [+0.0, +20.0] (+5.0, +15.0) 2↑ 1↓" in new and "±12.0" in new
    assert docs_tables.render(new) == new


def test_every_prose_figure_is_in_a_data_file():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "docs_figures.py")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


def test_a_figure_without_data_and_a_figure_in_a_recipe_are_caught(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import docs_figures
    finally:
        sys.path.pop(0)
    (tmp_path / "docs" / "data").mkdir(parents=True)
    (tmp_path / "recipes").mkdir()
    (tmp_path / "docs" / "data" / "run.json").write_text('{"m": {"x": {"diff": 0.0222, "lo": -0.0889, "hi": 0.1333}}}')
    (tmp_path / "README.md").write_text("Gained +2.2 [-8.9, +13.3] on test, and +0.02 [-0.09, +0.13] as a share.\n")
    (tmp_path / "docs" / "results.md").write_text(
        "## Kept\nthen +2.3 [-8.9, +13.3], one digit off\n"
        f"## Old\n{docs_figures.EXEMPT}\n+9.9 [+1.0, +20.0]\n### Under old\n+9.8 [+1.0, +20.0]\n"
        "## New\n+9.7 [+1.0, +20.0]\n")
    (tmp_path / "recipes" / "r.yaml").write_text("# gains +2.2 [-8.9, +13.3]\nseed: 0\n")
    found = docs_figures.unbacked(tmp_path)
    assert found == ["docs/results.md:2: +2.3 [-8.9, +13.3] is in no docs/data file",
                     "docs/results.md:9: +9.7 [+1.0, +20.0] is in no docs/data file",
                     "recipes/r.yaml:1: +2.2 [-8.9, +13.3]: a recipe names its result, the figure belongs in docs"]


def test_a_changelog_entry_must_say_when_why_and_what_replaced_it():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import docs_figures
    finally:
        sys.path.pop(0)
    doc = ("## Current\n### Not in the changelog\ntext\n## Changelog: superseded results\n"
           "### Fine (measured 2026-12-03; superseded)\n\n*Superseded because: x. Replaced by: y.*\n"
           "### No date (superseded)\n\n*Superseded because: x. Replaced by: y.*\n"
           "### No reason (measured 2026-12-04; superseded)\n\nthe table\n")
    assert docs_figures.changelog_problems(doc, "r.md") == [
        "r.md:8: changelog entry without its date and 'superseded' in the title",
        "r.md:11: changelog entry whose first line is not '*Superseded because: … Replaced by: …*'"]
    assert docs_figures.changelog_problems((ROOT / "docs" / "results.md").read_text()) == []
    marked = f"## A\n{docs_figures.EXEMPT}\n## B\n### C\n{docs_figures.EXEMPT}\n## Changelog\n{docs_figures.EXEMPT}\n"
    assert docs_figures.exempt_sections(marked) == ["A", "C"]

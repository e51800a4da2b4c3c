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

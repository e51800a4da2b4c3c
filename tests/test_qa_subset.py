"""benchmarks/qa_subset.py: a run folder whose fact_qa corpus keeps whole QA-trained rows (every
period and every wording), chosen by seed, and nothing of the other rows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

from kbake.run import SynthItem, read_items, write_items

ROOT = Path(__file__).parents[1]


def test_the_subset_keeps_whole_rows_in_every_wording(tmp_path):
    src = tmp_path / "W"
    (src / "synth").mkdir(parents=True)
    (src / "config").mkdir()
    (src / "config" / "synth.yaml").write_text("kinds: [fact_qa]\n")
    for name in ("chunks.parquet", "manifest.json", "probes.jsonl"):
        (src / name).write_text("{}")
    facts = [{"fact_id": f"fact-{r}{y}", "row_id": f"row-{r}", "split": "qa" if r < 8 else "heldout"}
             for r in range(10) for y in range(3)]
    pd.DataFrame(facts).to_parquet(src / "facts.parquet")
    write_items(src / "synth" / "fact_qa.jsonl",
                [SynthItem(id=f"fact_qa-{f['fact_id']}-{w}", kind="fact_qa", doc_id="d", chunk_ids=[], generator="t",
                           prompt_version="1", model="t", question=f"q{w} {f['fact_id']}", answer="1")
                 for f in facts if f["split"] == "qa" for w in range(4)])
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "qa_subset.py"), str(src), str(tmp_path / "S"),
                          "--share", "0.25", "--seed", "3"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "2 of 8 QA-trained rows, 6 facts, 24 QA pairs" in out.stdout
    kept = read_items(tmp_path / "S" / "synth" / "fact_qa.jsonl")
    rows = {it.id.split("-")[2][:-1] for it in kept}  # fact_qa-fact-RY-W -> R
    assert len(rows) == 2 and all(int(r) < 8 for r in rows)
    assert len(kept) == 2 * 3 * 4  # every period of a kept row, every wording
    assert (tmp_path / "S" / "facts.parquet").read_bytes() == (src / "facts.parquet").read_bytes()
    again = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "qa_subset.py"), str(src), str(tmp_path / "S"),
                            "--share", "0.25"], capture_output=True, text=True)
    assert again.returncode != 0 and "exists" in again.stderr

"""A run folder whose fact_qa corpus holds only a seeded share of the QA-trained line items, in
every wording the source run wrote: room to repeat many wordings many times on this CPU, to ask
whether a period learnt in many question forms carries to a form never trained.

    python benchmarks/qa_subset.py W S --share 0.2 --seed 0
    kbake train --run S --recipe recipes/filing-wordings.yaml --name qa10-sub --seeds 0 --data fact_qa \\
        --set train.epochs=12 --set train.lr_schedule=cosine --set train.warmup_ratio=0.03 --set train.precision=fp32
    python benchmarks/trained_wordings.py S --recipe recipes/filing-wordings.yaml --model qa10-sub-s0 --split dev

S shares W's chunks, fact table, probes and configs (copied) and model cache (linked); its
synth/fact_qa.jsonl keeps the QA pairs of the chosen rows (row_id, so every period of a row comes
together, as the probes' distractors do). trained_wordings.py scores only probes whose fact has a
QA pair in S, so it measures the chosen rows. A diagnostic, not a recipe: QA alone wrecks the
model's prose (docs/results.md, "QA alone for 12 epochs").
"""

from __future__ import annotations

import argparse
import random
import shutil
from pathlib import Path

import pandas as pd

from kbake.run import RunDir, read_items, write_items
from kbake.synth.augment import fact_id_of


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path, help="a run with facts.parquet, probes.jsonl and synth/fact_qa.jsonl")
    ap.add_argument("out", type=Path, help="the new run folder (must not exist)")
    ap.add_argument("--share", type=float, default=0.2, help="share of the QA-trained rows kept")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    src = RunDir.at(a.source)
    if a.out.exists():
        raise SystemExit(f"{a.out} exists; give a new folder")
    facts = pd.read_parquet(src.facts)
    qa_rows = sorted(facts.loc[facts["split"] == "qa", "row_id"].unique())
    rows = set(random.Random(a.seed).sample(qa_rows, max(1, round(a.share * len(qa_rows)))))
    keep_facts = set(facts.loc[facts["row_id"].isin(rows), "fact_id"])
    items = [it for it in read_items(src.synth_dir / "fact_qa.jsonl")
             if fact_id_of(it.id) in keep_facts]

    a.out.mkdir(parents=True)
    for name in ("chunks.parquet", "manifest.json", "facts.parquet", "probes.jsonl"):
        shutil.copy2(src.root / name, a.out / name)
    shutil.copytree(src.root / "config", a.out / "config")
    if (src.root / "cache").exists():
        (a.out / "cache").symlink_to((src.root / "cache").resolve())
    (a.out / "synth").mkdir()
    write_items(a.out / "synth" / "fact_qa.jsonl", items)
    print(f"{len(rows)} of {len(qa_rows)} QA-trained rows, {len(keep_facts)} facts, {len(items)} QA pairs -> {a.out}")


if __name__ == "__main__":
    main()

"""Where a held-out fact's probe goes wrong: to a QA-trained value of the same line item?

Fact probes take their first distractors from the same line item's other periods. When the
QA/held-out split is drawn per fact (`synth.fact_heldout_unit: fact`), those are often
QA-trained values, which training makes the model prefer for any question about that line
item; a held-out probe then measures that interference as well as what restatements teach.
This script counts, per probe kind and split, how often each model's closed-book choice is a
QA-trained value of the same row against the base, with a paired interval (kbake.eval.intervals).

    python benchmarks/heldout_choices.py R/eval/metrics.json R/facts.parquet R/probes.jsonl --out F.json
"""

from __future__ import annotations

import argparse
import json
import platform
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from kbake.eval.intervals import paired_bootstrap
from kbake.eval.report import fmt_change
from kbake.synth.facts import digits as _num  # a value's number without its unit ('$8,861 million' -> '8861')


def qa_sibling_values(facts: pd.DataFrame) -> dict[str, set[str]]:
    """row_id -> the values of that row's QA-trained facts."""
    return facts[facts.split == "qa"].groupby("row_id")["value"].apply(set).to_dict()


def choice_table(metrics: dict, facts: pd.DataFrame, probes: dict[str, dict]) -> dict:
    """Per model, probe kind and split: accuracy, the share of probes whose choice is a wrong
    QA-trained value of the same row, and that share's paired change against the base."""
    qa_vals = qa_sibling_values(facts)
    names = [m["name"] for m in metrics["models"]]
    out: dict = {}
    for kind in ("fact_heldout", "fact_qa"):
        for split in ("dev", "test"):
            rows = [p for p in metrics["per_probe"] if p["kind"] == kind and p["split"] == split]
            if not rows:
                continue

            def to_qa_sibling(p: dict, name: str) -> float:
                choice = p["models"][name]["closed_choice"]
                pr = probes[p["id"]]
                return float(choice != p["answer"] and any(_num(choice) == _num(v) for v in qa_vals.get(pr["passage_id"], ())))

            base = [to_qa_sibling(p, "base") for p in rows]
            cell = {"n": len(rows), "has_qa_sibling_distractor": sum(
                any(_num(d) == _num(v) for d in probes[p["id"]]["distractors"] for v in qa_vals.get(probes[p["id"]]["passage_id"], ()))
                for p in rows)}
            for name in names:
                mine = [to_qa_sibling(p, name) for p in rows]
                cell[name] = {"acc": sum(p["models"][name]["closed"] for p in rows) / len(rows),
                              "chose_qa_sibling": sum(mine) / len(rows),
                              "chose_qa_sibling_change": None if name == "base" else paired_bootstrap(base, mine)}
            out[f"{kind}/{split}"] = cell
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("metrics", type=Path)
    ap.add_argument("facts", type=Path)
    ap.add_argument("probes", type=Path)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    metrics = json.loads(a.metrics.read_text())
    facts = pd.read_parquet(a.facts)
    probes = {p["id"]: p for p in map(json.loads, a.probes.read_text().splitlines()) if p.get("kind", "").startswith("fact_")}
    table = choice_table(metrics, facts, probes)
    res = {"command": "python benchmarks/heldout_choices.py " + " ".join(map(str, [a.metrics, a.facts, a.probes])),
           "created": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.processor() or platform.machine(),
           "git_hash": metrics["provenance"].get("git_hash"), "seed": metrics["provenance"].get("seed"), "table": table}
    for key, cell in table.items():
        print(f"{key}: n {cell['n']}, a QA-trained same-row value among the distractors: {cell['has_qa_sibling_distractor']}")
        for name in [m["name"] for m in metrics["models"]]:
            c, ch = cell[name], cell[name]["chose_qa_sibling_change"]
            extra = f" change {fmt_change(ch)}" if ch else ""
            print(f"  {name:14s} acc {100 * c['acc']:5.1f}%  chose a QA-trained same-row value {100 * c['chose_qa_sibling']:5.1f}%{extra}")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()

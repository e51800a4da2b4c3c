"""Does a trained model know a line item's values, and which year each belongs to?

A fact probe offers the right value, the same line item's values in other periods (same row)
and a value of a neighbouring row. Per model, probe kind and split this counts how often the
closed-book choice is a value of the probe's own row (the model knows the line item's values),
and, among those probes, how often it is the asked period's (the model binds the year) against
the chance of picking it blindly among the row's values offered (1 / the row's options), with a
paired bootstrap interval of that difference (kbake.eval.intervals). Year binding at chance with
row recognition high is the failure docs/results.md describes.

    python benchmarks/year_binding.py R/eval/metrics.json R/facts.parquet R/probes.jsonl --out F.json
"""

from __future__ import annotations

import argparse
import json
import platform
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from kbake.eval.intervals import paired_bootstrap
from kbake.run import git_hash
from kbake.synth.facts import digits


def binding_table(metrics: dict, facts: pd.DataFrame, probes: dict[str, dict]) -> dict:
    """Per probe kind and split, per model: n, the share choosing a value of the probe's own row,
    the accuracy among those, the chance level among those, and right minus chance with its interval."""
    row_values = facts.groupby("row_id")["value"].apply(lambda v: {digits(x) for x in v}).to_dict()
    names = [m["name"] for m in metrics["models"]]
    out: dict = {}
    for kind in ("fact_qa", "fact_heldout"):
        for split in ("dev", "test"):
            rows = [p for p in metrics["per_probe"] if p["kind"] == kind and p["split"] == split]
            if not rows:
                continue
            cell: dict = {"n": len(rows)}
            for name in names:
                right, chance = [], []
                for p in rows:
                    pr = probes[p["id"]]
                    own = row_values.get(pr["passage_id"], set())
                    in_row = [o for o in [pr["answer"], *pr["distractors"]] if digits(o) in own]
                    choice = p["models"][name]["closed_choice"]
                    if digits(pr["answer"]) in own and len(in_row) > 1 and digits(choice) in own:
                        right.append(float(choice == pr["answer"]))
                        chance.append(1.0 / len(in_row))
                cell[name] = {"in_row": len(right) / len(rows), "n_in_row": len(right),
                              "right_in_row": sum(right) / len(right) if right else None,
                              "chance_in_row": sum(chance) / len(chance) if chance else None,
                              "right_minus_chance": paired_bootstrap(chance, right)}
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
    probes = {p["id"]: p for p in map(json.loads, a.probes.read_text().splitlines()) if p}
    table = binding_table(metrics, pd.read_parquet(a.facts), probes)
    res = {"command": f"python benchmarks/year_binding.py {a.metrics} {a.facts} {a.probes}",
           "created": datetime.now(UTC).isoformat(timespec="seconds"), "git_hash": git_hash(),
           "machine": platform.processor() or platform.machine(), "table": table}
    for key, cell in table.items():
        for name, c in cell.items():
            if name != "n" and c["right_in_row"] is not None:
                print(f"{key:20s} {name:28s} in-row {100 * c['in_row']:5.1f}%  right among them {100 * c['right_in_row']:5.1f}% "
                      f"(chance {100 * c['chance_in_row']:5.1f}%)")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Does a trained model know a line item's values, and which year each belongs to?

A fact probe offers the right value, the same line item's values in other periods (same row)
and a value of a neighbouring row. Per model, probe kind and split this counts how often the
closed-book choice is a value of the probe's own row (the model knows the line item's values),
and, among those probes, how often it is the asked period's (the model binds the year) against
the chance of picking it blindly among the row's values offered (1 / the row's options), with a
paired bootstrap interval of that difference: kbake.eval.comparisons.year_binding, which `kbake
eval` now stores per model; this script computes it for a metrics.json written before that.

    python benchmarks/year_binding.py R/eval/metrics.json R/facts.parquet R/probes.jsonl --out F.json

With --snapshots, each model's snapshots (the `trajectory[*].year_binding` that eval stores since
2026-12-07) come before it as NAME@STEP: does the period bind with more exposures?
"""

from __future__ import annotations

import argparse
import json
import platform
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from kbake.eval.comparisons import year_binding
from kbake.run import git_hash, read_probes
from kbake.synth.facts import row_value_digits


def binding_table(metrics: dict, probes: list, row_values: dict[str, set[str]]) -> dict:
    """Per probe kind and split, per model: kbake.eval.comparisons.year_binding over the closed-book
    choices that metrics.json records (for runs evaluated before eval stored it itself)."""
    by_id = {p["id"]: p for p in metrics["per_probe"]}
    probes = [p for p in probes if p.id in by_id]
    out: dict = {}
    for m in metrics["models"]:
        closed = [{"choice": by_id[p.id]["models"][m["name"]]["closed_choice"],
                   "correct": by_id[p.id]["models"][m["name"]]["closed"]} for p in probes]
        for key, c in year_binding(probes, closed, row_values, seed=0).items():
            out.setdefault(key, {"n": c["n"]})[m["name"]] = c
    return out


def with_snapshots(table: dict, metrics: dict) -> dict:
    """The table with each model's snapshots (NAME@STEP, from the year binding eval stored along its
    trajectory) placed before the model's own column; the final point is the model itself."""
    out: dict = {}
    for key, cell in table.items():
        new = {"n": cell["n"]}
        for m in metrics["models"]:
            for t in m.get("trajectory") or []:
                if t.get("year_binding") and t["step"] != m.get("steps") and key in t["year_binding"]:
                    new[f"{m['name']}@{t['step']}"] = t["year_binding"][key]
            if m["name"] in cell:
                new[m["name"]] = cell[m["name"]]
        out[key] = new
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("metrics", type=Path)
    ap.add_argument("facts", type=Path)
    ap.add_argument("probes", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--snapshots", action="store_true", help="also each model's snapshots (NAME@STEP), from its trajectory")
    a = ap.parse_args()
    metrics = json.loads(a.metrics.read_text())
    facts = pd.read_parquet(a.facts)
    rows = row_value_digits(facts.itertuples())
    table = binding_table(metrics, read_probes(a.probes), rows)
    if a.snapshots:
        table = with_snapshots(table, metrics)
    res = {"command": f"python benchmarks/year_binding.py {a.metrics} {a.facts} {a.probes}"
                      + (" --snapshots" if a.snapshots else ""),
           "created": datetime.now(UTC).isoformat(timespec="seconds"), "git_hash": git_hash(),
           "machine": platform.processor() or platform.machine(), "table": table}
    for key, cell in table.items():
        for name, c in cell.items():
            if name != "n" and c["year_in_row"] is not None:
                print(f"{key:20s} {name:28s} in-row {100 * c['in_row']:5.1f}%  right among them {100 * c['year_in_row']:5.1f}% "
                      f"(chance {100 * c['chance_in_row']:5.1f}%)")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Two trained models of one eval against each other, probe by probe: per fact-probe kind and
split, each model's closed-book accuracy and how often it chose another period's value of the
probe's own line item (the year binding: docs/results.md, "Held out by row"), with the paired
change of the second model against the first (kbake.eval.intervals). Also the general-eval
and novel-perplexity changes of each against the base, as eval stored them.

    python benchmarks/model_vs_model.py R/eval/metrics.json R/facts.parquet R/probes.jsonl A B --out F.json
    ... A B --b-metrics R2/eval/metrics.json   # B evaluated in another run on the same probes
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
from kbake.synth.facts import digits


def other_period(p: dict, name: str, row_values: dict[str, set[str]], probe: dict) -> float:
    """1 when the model chose a wrong option that is a value of the probe's own line item."""
    choice = p["models"][name]["closed_choice"]
    return float(choice != p["answer"] and digits(choice) in row_values.get(probe["passage_id"], set()))


def compare(metrics: dict, facts: pd.DataFrame, probes: dict[str, dict], a: str, b: str) -> dict:
    row_values = facts.groupby("row_id")["value"].apply(lambda vs: {digits(v) for v in vs}).to_dict()
    out: dict = {}
    for kind in ("fact_qa", "fact_heldout"):
        for split in ("dev", "test"):
            rows = [p for p in metrics["per_probe"] if p["kind"] == kind and p["split"] == split]
            if not rows:
                continue
            cell: dict = {"n": len(rows)}
            for key, fn in (("acc", lambda p, m: float(p["models"][m]["closed"])),
                            ("other_period", lambda p, m: other_period(p, m, row_values, probes[p["id"]]))):
                vals = {m: [fn(p, m) for p in rows] for m in ("base", a, b)}
                cell[key] = {m: sum(v) / len(v) for m, v in vals.items()}
                cell[key + "_b_minus_a"] = paired_bootstrap(vals[a], vals[b])
            out[f"{kind}/{split}"] = cell
    by_name = {m["name"]: m for m in metrics["models"]}
    forgetting = {m: {"general_eval": (by_name[m].get("vs_base") or {}).get("general_eval"),
                      "novel_ppl": (by_name[m].get("vs_base") or {}).get("novel_ppl")} for m in (a, b)}
    return {"a": a, "b": b, "table": out, "forgetting": forgetting}


def with_model_from(metrics: dict, other: dict, name: str) -> dict:
    """`metrics` with model `name`'s per-probe results and summary taken from `other`, an eval of
    the same probes with the same base results (checked), e.g. a model trained in another run."""
    if [p["id"] for p in metrics["per_probe"]] != [p["id"] for p in other["per_probe"]]:
        raise ValueError("the two metrics.json hold other probes")
    if [p["models"]["base"]["closed"] for p in metrics["per_probe"]] != [p["models"]["base"]["closed"] for p in other["per_probe"]]:
        raise ValueError("the base model scored differently in the two metrics.json")
    model = next((m for m in other["models"] if m["name"] == name), None)
    if model is None:
        raise ValueError(f"no model named {name!r} in the second metrics.json")
    per_probe = [{**p, "models": {**p["models"], name: q["models"][name]}} for p, q in zip(metrics["per_probe"], other["per_probe"])]
    return {**metrics, "per_probe": per_probe, "models": [*metrics["models"], model]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("metrics", type=Path)
    ap.add_argument("facts", type=Path)
    ap.add_argument("probes", type=Path)
    ap.add_argument("a", help="the first model's name (the reference)")
    ap.add_argument("b", help="the second model's name (the change)")
    ap.add_argument("--b-metrics", type=Path, help="B's metrics.json when B was evaluated in another run on the same probes")
    ap.add_argument("--out", type=Path)
    x = ap.parse_args()
    metrics = json.loads(x.metrics.read_text())
    if x.b_metrics:
        metrics = with_model_from(metrics, json.loads(x.b_metrics.read_text()), x.b)
    facts = pd.read_parquet(x.facts)
    probes = {p["id"]: p for p in map(json.loads, x.probes.read_text().splitlines()) if p.get("kind", "").startswith("fact_")}
    res = compare(metrics, facts, probes, x.a, x.b)
    res.update({"command": "python benchmarks/model_vs_model.py " + " ".join(map(str, [x.metrics, x.facts, x.probes, x.a, x.b]))
                + (f" --b-metrics {x.b_metrics}" if x.b_metrics else ""),
                "created": datetime.now(UTC).isoformat(timespec="seconds"), "machine": platform.processor() or platform.machine(),
                "git_hash": metrics["provenance"].get("git_hash"), "seed": metrics["provenance"].get("seed")})
    for key, cell in res["table"].items():
        print(f"{key} (n {cell['n']}): accuracy " + ", ".join(f"{m} {100 * v:.1f}%" for m, v in cell["acc"].items())
              + f"; {x.b} minus {x.a} {fmt_change(cell['acc_b_minus_a'])}; another period's value "
              + ", ".join(f"{m} {100 * v:.1f}%" for m, v in cell["other_period"].items())
              + f"; change {fmt_change(cell['other_period_b_minus_a'])}")
    if x.out:
        x.out.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()

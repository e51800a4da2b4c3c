"""Pool a method's training seeds from `kbake eval` outputs: per probe kind, the closed-book
change against the base and closed book minus RAG on the base, general-eval accuracy; mean
over seeds with an interval that resamples seeds, then items (kbake.eval.seeds, as `kbake eval` pools
NAME-sSEED models; this script also pools models evaluated in different runs).

    python benchmarks/fact_seeds.py runs/costco/eval/metrics.json runs/costco-s12/eval/metrics.json \
        --models lora-s0,lora-s1,lora-s2 --out docs/data/costco-facts-lora.json

Every metrics.json must hold the same probes and general-eval items and the same base model
results (checked); the JSON written holds the pooled figures, the per-seed ones, and the inputs'
provenance (git hash, seed, date), so the docs table is regenerated from it.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

from kbake.eval.seeds import pooled_changes


def merged(paths: list[Path], names: list[str]) -> tuple[dict, list[dict]]:
    """One metrics dict whose per-item rows hold the base and every named model, from metrics.json
    files that hold the same probes and general-eval items and the same base results (checked)."""
    first = json.loads(paths[0].read_text())
    out = {"models": [{"name": "base"}], "per_probe": [{**p, "models": {"base": p["models"]["base"]}} for p in first["per_probe"]],
           "general_eval_items": [{**i, "models": {"base": i["models"]["base"]}} for i in first["general_eval_items"]]}
    provs, found = [], {}
    for path in paths:
        m = json.loads(path.read_text())
        if [x["id"] for x in m["per_probe"]] != [x["id"] for x in first["per_probe"]]:
            raise ValueError(f"{path}: other probes than {paths[0]}")
        if [x["models"]["base"]["closed"] for x in m["per_probe"]] != [x["models"]["base"]["closed"] for x in first["per_probe"]]:
            raise ValueError(f"{path}: the base model scored differently than in {paths[0]}")
        provs.append({"file": str(path), **{k: m["provenance"].get(k) for k in ("git_hash", "seed", "created", "precision")}})
        for n in names:
            model = next((mm for mm in m["models"] if mm["name"] == n), None)
            if model is None or n in found:
                continue
            found[n] = model
            for row, src in zip(out["per_probe"], m["per_probe"]):
                row["models"][n] = src["models"][n]
            ge = {i["id"]: i["models"][n] for i in m["general_eval_items"]}
            for row in out["general_eval_items"]:
                row["models"][n] = ge[row["id"]]
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"no model named {missing[0]!r} in {', '.join(map(str, paths))}")
    out["models"] += [found[n] for n in names]
    return out, provs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("metrics", nargs="+", type=Path)
    ap.add_argument("--models", required=True, help="comma-separated model names, one per seed")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    names = a.models.split(",")
    metrics, provs = merged(a.metrics, names)
    changes = pooled_changes(metrics, names)
    pp = metrics["per_probe"]
    out: dict = {"command": "python benchmarks/fact_seeds.py " + " ".join(map(str, a.metrics)) + f" --models {a.models}",
                 "models": names, "inputs": provs, "machine": platform.machine(), "kinds": {}}
    for k in sorted({p["kind"] for p in pp}):
        base_test = [p["models"]["base"] for p in pp if p["split"] == "test" and p["kind"] == k]
        rag = [b["rag"] for b in base_test if b["rag"] is not None]
        out["kinds"][k] = {"n_test": len(base_test),
                           "base_closed": sum(bool(b["closed"]) for b in base_test) / max(1, len(base_test)),
                           "base_rag": sum(map(bool, rag)) / len(rag) if rag else None,
                           "closed": changes.get(f"closed_book_{k}"),
                           "closed_minus_base_rag": changes.get(f"closed_vs_base_rag_{k}"),
                           "dev_closed": changes.get(f"dev_closed_book_{k}")}
    out["all_test"] = {"closed": changes.get("closed_book"), "closed_minus_base_rag": changes.get("closed_vs_base_rag")}
    out["general_eval"] = changes.get("general_eval")
    out["novel_ppl_change"] = {m["name"]: m["general"]["novel_ppl_change"] for m in metrics["models"][1:]}
    out["train_minutes"] = {m["name"]: round((m.get("train_seconds") or 0) / 60, 1) for m in metrics["models"][1:]}
    from docs_tables import change_text  # the docs' renderer (this folder)
    from docs_tables import fact_seeds as fact_table

    print(fact_table(out), end="")
    print(f"\nall test probes: {change_text(out['all_test']['closed'])}; "
          f"closed minus base RAG {change_text(out['all_test']['closed_minus_base_rag'])}")
    print("novel perplexity change: " + ", ".join(f"{n} {100 * v:+.1f}%" for n, v in out["novel_ppl_change"].items()))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()

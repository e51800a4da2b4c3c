"""Pool a method's training seeds from `kbake eval` outputs: per probe kind, the closed-book
change against the base and closed book minus RAG on the base, general-eval accuracy; mean
over seeds with an interval that resamples seeds, then items (kbake.eval.intervals.pooled_bootstrap).

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

from kbake.eval.intervals import pooled_bootstrap


def load(paths: list[Path], names: list[str]) -> tuple[dict, dict[str, dict], list[dict]]:
    """(first metrics, per model name its metrics' per-probe and general-eval rows, provenances)."""
    first = json.loads(paths[0].read_text())
    found: dict[str, dict] = {}
    provs = []
    for p in paths:
        m = json.loads(p.read_text())
        if [x["id"] for x in m["per_probe"]] != [x["id"] for x in first["per_probe"]]:
            raise ValueError(f"{p}: other probes than {paths[0]}")
        base = [x["models"]["base"]["closed"] for x in m["per_probe"]]
        if base != [x["models"]["base"]["closed"] for x in first["per_probe"]]:
            raise ValueError(f"{p}: the base model scored differently than in {paths[0]}")
        provs.append({"file": str(p), **{k: m["provenance"].get(k) for k in ("git_hash", "seed", "created", "precision")}})
        for n in names:
            if any(mm["name"] == n for mm in m["models"]):
                found[n] = m
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"no model named {missing[0]!r} in {', '.join(map(str, paths))}")
    return first, found, provs


def pooled(first: dict, found: dict[str, dict], names: list[str], split: str, kind: str | None, key: str,
           base_key: str) -> dict | None:
    sel = [i for i, p in enumerate(first["per_probe"]) if p["split"] == split and (kind is None or p["kind"] == kind)]
    if not sel:
        return None
    base = [float(bool(first["per_probe"][i]["models"]["base"][base_key])) for i in sel]
    news = [[float(bool(found[n]["per_probe"][i]["models"][n][key])) for i in sel] for n in names]
    return pooled_bootstrap(base, news)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("metrics", nargs="+", type=Path)
    ap.add_argument("--models", required=True, help="comma-separated model names, one per seed")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    names = a.models.split(",")
    first, found, provs = load(a.metrics, names)
    kinds = sorted({p["kind"] for p in first["per_probe"]})
    out: dict = {"command": "python benchmarks/fact_seeds.py " + " ".join(map(str, a.metrics)) + f" --models {a.models}",
                 "models": names, "inputs": provs, "machine": platform.machine(), "kinds": {}}
    for k in kinds:
        row = {"n_test": sum(p["split"] == "test" and p["kind"] == k for p in first["per_probe"])}
        base_test = [p for p in first["per_probe"] if p["split"] == "test" and p["kind"] == k]
        row["base_closed"] = sum(bool(p["models"]["base"]["closed"]) for p in base_test) / max(1, len(base_test))
        rag = [p["models"]["base"]["rag"] for p in base_test if p["models"]["base"]["rag"] is not None]
        row["base_rag"] = sum(map(bool, rag)) / len(rag) if rag else None
        row["closed"] = pooled(first, found, names, "test", k, "closed", "closed")
        row["dev_closed"] = pooled(first, found, names, "dev", k, "closed", "closed")
        row["closed_minus_base_rag"] = pooled(first, found, names, "test", k, "closed", "rag")
        row["rag_on_trained_minus_base_rag"] = pooled(first, found, names, "test", k, "rag", "rag")
        out["kinds"][k] = row
    items = first["general_eval_items"]
    base = [float(bool(i["models"]["base"]["correct"])) for i in items]
    per = []
    for n in names:
        rows = {i["id"]: i["models"][n]["correct"] for i in found[n]["general_eval_items"]}
        per.append([float(bool(rows[i["id"]])) for i in items])
    out["general_eval"] = pooled_bootstrap(base, per)
    out["novel_ppl_change"] = {n: next(m for m in found[n]["models"] if m["name"] == n)["general"]["novel_ppl_change"]
                               for n in names}
    out["train_minutes"] = {n: round((next(m for m in found[n]["models"] if m["name"] == n).get("train_seconds") or 0) / 60, 1)
                            for n in names}
    fmt = lambda c: "—" if not c else (f"{100 * c['diff']:+.1f} [{100 * c['lo']:+.1f}, {100 * c['hi']:+.1f}] "  # noqa: E731
                                       f"({', '.join(f'{100 * x:+.1f}' for x in c['per_seed'])})")
    print(f"| probe kind | test n | base closed | base RAG | closed-book change, {len(names)} seeds (per seed) | "
          "closed minus base RAG | dev change |")
    print("|---|---|---|---|---|---|---|")
    for k, r in out["kinds"].items():
        rag = "—" if r["base_rag"] is None else f"{100 * r['base_rag']:.1f}%"
        print(f"| {k} | {r['n_test']} | {100 * r['base_closed']:.1f}% | {rag} | {fmt(r['closed'])} | "
              f"{fmt(r['closed_minus_base_rag'])} | {fmt(r['dev_closed'])} |")
    print(f"\ngeneral-eval accuracy ({len(items)} items): {fmt(out['general_eval'])}")
    print("novel perplexity change: " + ", ".join(f"{n} {100 * v:+.1f}%" for n, v in out["novel_ppl_change"].items()))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()

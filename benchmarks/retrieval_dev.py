"""Choose the RAG retriever on dev probes of several documents (issue 31.5): recall@k of each
probe's source passage for dense, lexical (BM25) and hybrid (RRF) retrieval, per probe family
(hand-written questions in natural wording; rule-made fact probes), with the paired bootstrap
interval of each retriever against the current default (`eval.retriever`).

    python benchmarks/retrieval_dev.py --run costco-fy2022=R22 --run costco-fy2021=R21 --run costco-fy2020=R20 \
        --sample --k 3 --out docs/data/retrieval-dev.json
    ... --headers --out docs/data/retrieval-dev-headers.json   # each retriever also with chunk headers

Each --run is NAME=FOLDER of a run with chunks and probes (`kbake ingest`, `kbake probes --facts`);
--sample adds the shipped sample ingested with recipes/demo.yaml and its probes. Only dev probes
count (test probes are for reporting). A hit is the probe's evidence quote inside a retrieved
chunk (`kbake.eval.rag.is_hit`). The JSON holds per-family recall, the paired changes, the
inputs and provenance; `python benchmarks/docs_tables.py --write` draws its table in docs.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from kbake.config import load_recipe
from kbake.eval.intervals import paired_bootstrap
from kbake.eval.rag import RETRIEVERS, is_hit, load_index
from kbake.ingest import ingest
from kbake.run import RunDir, git_hash, read_probes
from kbake.sample import sample_documents, sample_probes

ROOT = Path(__file__).resolve().parents[1]


def family(probe) -> str:
    """'hand-written' for questions people wrote, 'fact' for rule-made fact-table probes."""
    return "fact" if probe.kind.startswith("fact_") else "hand-written"


def hits(run: RunDir, embedder: str, k: int, headers: bool = False) -> list[dict]:
    """Per dev probe of the run: its family and, per retriever, whether a top-k chunk holds its
    source; with `headers`, also each retriever over chunks indexed with their contextual
    header ('lexical+headers'; kbake/ingest/headers.py)."""
    probes = [p for p in read_probes(run.probes) if p.split == "dev"]
    rows = [{"id": p.id, "family": family(p)} for p in probes]
    for with_headers in (False, True) if headers else (False,):
        index, _ = load_index(run, embedder, headers=with_headers)
        for retriever in RETRIEVERS:
            found = index.search([p.question for p in probes], k, retriever)
            for row, p, top in zip(rows, probes, found):
                row[retriever + ("+headers" if with_headers else "")] = \
                    any(is_hit(p, index.chunk_ids[i], index.texts[i]) for i in top)
    return rows


def summary(rows: list[dict], default: str, seed: int = 0) -> dict:
    """Recall per retriever and each retriever's paired change against `default`."""
    names = [r for r in rows[0] if r not in ("id", "family", "document")]
    out = {"n": len(rows), "recall": {r: sum(x[r] for x in rows) / len(rows) for r in names}, "vs_default": {}}
    for r in names:
        if r != default:
            out["vs_default"][r] = paired_bootstrap([float(x[default]) for x in rows], [float(x[r]) for x in rows], seed=seed)
    headed = [r for r in names if r.endswith("+headers")]
    if headed:  # each retriever with headers against itself without
        out["headers_vs_plain"] = {r.removesuffix("+headers"): paired_bootstrap(
            [float(x[r.removesuffix("+headers")]) for x in rows], [float(x[r]) for x in rows], seed=seed) for r in headed}
    return out


def dev_runs(run_args: list[str], sample: bool) -> list[tuple[str, RunDir]]:
    """(name, run) of each NAME=FOLDER, and the shipped sample ingested with recipes/demo.yaml and
    its probes when `sample` (into a temporary folder)."""
    runs = [(name, RunDir.at(Path(folder))) for name, folder in (r.split("=", 1) for r in run_args)]
    if sample:
        run = RunDir.at(Path(tempfile.mkdtemp()) / "run")
        ingest([str(p) for p in sample_documents()], run, load_recipe(ROOT / "recipes" / "demo.yaml").ingest, progress=False)
        run.probes.write_bytes(sample_probes().read_bytes())
        runs.append(("corvane-sample", run))
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="append", default=[], help="NAME=FOLDER of a run with chunks and probes")
    ap.add_argument("--sample", action="store_true", help="add the shipped sample (recipes/demo.yaml's chunks)")
    ap.add_argument("--recipe", default=str(ROOT / "recipes" / "filing.yaml"), help="its eval.embedder and retriever")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--headers", action="store_true", help="also each retriever with contextual chunk headers")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()

    recipe = load_recipe(a.recipe)
    runs = dev_runs(a.run, a.sample)
    default = recipe.eval.retriever
    rows = []
    for name, run in runs:
        for row in hits(run, recipe.eval.embedder, a.k, a.headers):
            rows.append({"document": name, **row})
    groups = {}
    for fam in ("hand-written", "fact"):
        sel = [r for r in rows if r["family"] == fam]
        if sel:
            groups[fam] = {"all documents": summary(sel, default),
                           **{name: summary([r for r in sel if r["document"] == name], default)
                              for name, _ in runs if any(r["document"] == name for r in sel)}}
    names = list(RETRIEVERS) + ([f"{r}+headers" for r in RETRIEVERS] if a.headers else [])
    data = {"k": a.k, "default": default, "retrievers": names, "groups": groups,
            "provenance": {"command": "python benchmarks/retrieval_dev.py " + " ".join(
                               [f"--run {r}" for r in a.run] + (["--sample"] if a.sample else []) + [f"--k {a.k}"]
                               + (["--headers"] if a.headers else [])),
                           "git_hash": git_hash(), "date": datetime.now(UTC).isoformat(timespec="seconds"),
                           "machine": platform.processor() or platform.machine(), "embedder": recipe.eval.embedder},
            "rows": rows}
    for fam, g in groups.items():
        for doc, s in g.items():
            print(f"{fam:12s} {doc:16s} n={s['n']:4d} " + "  ".join(f"{r} {100 * s['recall'][r]:5.1f}%" for r in names))
    if a.out:
        a.out.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Choose what RAG puts in the prompt on dev probes (issue 31.5): `eval.rag_k` and
`ingest.chunk_tokens`. For each configuration CHUNK_TOKENSxK the base model's RAG accuracy and
recall@k (the recipe's retriever and chunk headers), per probe family (hand-written questions;
rule-made fact probes) and document, with the paired bootstrap interval of each configuration
against the recipe's own (ingest.chunk_tokens x eval.rag_k). Recall alone only rises with k and
with chunk size; a 135M reader may lose the answer in a longer prompt, so accuracy decides.

    python benchmarks/rag_context_dev.py --run costco-fy2022=R --sample \
        --configs 256x1,256x3,256x5,128x6,512x2 --out docs/data/rag-context-dev.json

Each --run is NAME=FOLDER of a run with chunks and probes (`kbake ingest`, `kbake probes --facts`);
--sample adds the shipped sample ingested with recipes/demo.yaml and its probes. A chunk size
other than the run's re-ingests the run's documents (overlap an eighth of the size) into a
temporary run with the same probes; a hit is the probe's evidence quote inside a retrieved chunk,
whatever the chunking. Only dev probes count (test probes are for reporting).
`python benchmarks/docs_tables.py --write` draws its table.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from retrieval_dev import dev_runs, family

from kbake.config import load_recipe
from kbake.eval.intervals import paired_bootstrap
from kbake.eval.model_scores import score_probes
from kbake.eval.rag import is_hit, load_index, rag_prompt
from kbake.ingest import ingest
from kbake.models import load_causal_lm, load_embedder
from kbake.models.generate import chat_prompt
from kbake.models.precision import cast_for_inference, resolve_precision
from kbake.run import RunDir, git_hash, load_manifest, read_probes

ROOT = Path(__file__).resolve().parents[1]


def rechunked(run: RunDir, chunk_tokens: int, recipe) -> RunDir:
    """`run`'s documents ingested again at `chunk_tokens` (overlap an eighth) into a temporary run
    with the same probes; `run` itself when it already has that chunk size."""
    ingested = load_manifest(run)["stages"]["ingest"]
    if ingested["config"]["chunk_tokens"] == chunk_tokens:
        return run
    out = RunDir.at(Path(tempfile.mkdtemp()) / "run")
    args = recipe.ingest.model_copy(update={**ingested["config"], "chunk_tokens": chunk_tokens,
                                            "overlap_tokens": chunk_tokens // 8})
    ingest([d["source"] for d in ingested["docs"].values()], out, args, progress=False)
    out.probes.write_bytes(run.probes.read_bytes())
    return out


def summary(rows: list[dict], names: list[str], reference: str, seed: int) -> dict:
    """Accuracy and recall per configuration, and each one's paired accuracy change against `reference`."""
    ref = [float(r[f"correct {reference}"]) for r in rows]
    return {"n": len(rows),
            "accuracy": {c: sum(r[f"correct {c}"] for r in rows) / len(rows) for c in names},
            "recall": {c: sum(r[f"hit {c}"] for r in rows) / len(rows) for c in names},
            "vs_reference": {c: paired_bootstrap(ref, [float(r[f"correct {c}"]) for r in rows], seed=seed)
                             for c in names if c != reference}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", action="append", default=[], help="NAME=FOLDER of a run with chunks and probes")
    ap.add_argument("--sample", action="store_true", help="add the shipped sample (recipes/demo.yaml's chunks)")
    ap.add_argument("--recipe", type=Path, default=ROOT / "recipes" / "filing.yaml",
                    help="its eval (base model, retriever, chunk headers, precision) and the reference chunk size and k")
    ap.add_argument("--configs", default="256x1,256x3,256x5", help="comma-separated CHUNK_TOKENSxK to compare")
    ap.add_argument("--limit", type=int, help="only the first N dev probes of each run (a quick check of the script)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    recipe = load_recipe(a.recipe)
    ev = recipe.eval
    reference = f"{recipe.ingest.chunk_tokens}x{ev.rag_k}"
    names = list(dict.fromkeys([reference, *a.configs.split(",")]))
    configs = [(c, int(c.split("x")[0]), int(c.split("x")[1])) for c in names]
    runs = dev_runs(a.run, a.sample)
    embedder = load_embedder(ev.embedder)
    precision = resolve_precision(ev.precision)
    model, tok = load_causal_lm(ev.base_model)
    cast_for_inference(model, precision)

    rows, seconds = [], {}
    for name, run in runs:
        probes = [p for p in read_probes(run.probes) if p.split == "dev"][: a.limit]
        questions = [p.question for p in probes]
        doc_rows = [{"document": name, "id": p.id, "family": family(p)} for p in probes]
        for size in sorted({s for _, s, _ in configs}):
            t = time.perf_counter()
            index, _ = load_index(rechunked(run, size, recipe), ev.embedder, embedder, ev.chunk_headers)
            ks = [(c, k) for c, s, k in configs if s == size]
            found = index.search(questions, max(k for _, k in ks), ev.retriever)  # full rankings cut: top k is a prefix
            seconds[f"{name} ingest+index {size}"] = round(time.perf_counter() - t, 1)
            for c, k in ks:
                t = time.perf_counter()
                prompts = [chat_prompt(tok, rag_prompt(q, [index.texts[i] for i in top[:k]])) for q, top in zip(questions, found)]
                scores = score_probes(model, tok, prompts, probes, f"{name} {c}", True)
                for row, p, top, s in zip(doc_rows, probes, found, scores):
                    row[f"hit {c}"] = any(is_hit(p, index.chunk_ids[i], index.texts[i]) for i in top[:k])
                    row[f"correct {c}"] = bool(s["correct"])
                seconds[f"{name} {c}"] = round(time.perf_counter() - t, 1)
        rows += doc_rows

    groups = {}
    for fam in ("hand-written", "fact"):
        sel = [r for r in rows if r["family"] == fam]
        if sel:
            groups[fam] = {"all documents": summary(sel, names, reference, recipe.seed),
                           **{name: summary([r for r in sel if r["document"] == name], names, reference, recipe.seed)
                              for name, _ in runs if any(r["document"] == name for r in sel)}}
    data = {"configs": names, "reference": reference, "retriever": ev.retriever, "chunk_headers": ev.chunk_headers,
            "groups": groups,
            "provenance": {"command": "python benchmarks/rag_context_dev.py " + " ".join(
                               [f"--run {r}" for r in a.run] + (["--sample"] if a.sample else [])
                               + [f"--configs {','.join(names)}", f"--recipe {a.recipe}"]),
                           "git_hash": git_hash(), "date": datetime.now(UTC).isoformat(timespec="seconds"),
                           "machine": platform.processor() or platform.machine(), "precision": precision,
                           "base_model": ev.base_model, "seconds": seconds},
            "rows": rows}
    for fam, g in groups.items():
        for doc, s in g.items():
            print(f"{fam:12s} {doc:16s} n={s['n']:4d} " + "  ".join(
                f"{c} acc {100 * s['accuracy'][c]:5.1f}% rec {100 * s['recall'][c]:5.1f}%" for c in names))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Choose what RAG retrieves on dev probes (issue 31.5): the base model's accuracy with the run's
chunks in the prompt (the recipe's retriever and headers) against one sentence per fact of its fact
table (`eval.rag_units: facts`, lexical and hybrid), and closed book, per probe kind, each with its
paired bootstrap interval against the chunks. A 135M reader that cannot pick a value out of a table
row it is given (docs/results.md, "Cosine over 4 epochs") may read a sentence that binds it.

    python benchmarks/rag_units_dev.py R --recipe recipes/filing.yaml --out docs/data/rag-units-dev.json

R is a run with chunks, a fact table and fact probes (`kbake ingest`, `kbake synth`, `kbake probes
--facts`). Only dev probes count (test probes are for reporting). `python benchmarks/docs_tables.py
--write` draws its table in docs/results.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

from kbake.config import load_recipe
from kbake.eval.intervals import paired_bootstrap
from kbake.eval.model_scores import score_probes
from kbake.eval.rag import is_fact_hit, is_hit, load_fact_index, load_index, rag_prompt
from kbake.models import load_causal_lm, load_embedder
from kbake.models.generate import chat_prompt
from kbake.models.precision import cast_for_inference, resolve_precision
from kbake.run import RunDir, git_hash, read_probes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--recipe", type=Path, required=True)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--limit", type=int, help="only the first N dev probes (a quick check of the script)")
    a = ap.parse_args()
    recipe = load_recipe(a.recipe)
    ev = recipe.eval
    run = RunDir.at(a.run)
    probes = [p for p in read_probes(run.probes) if p.split == "dev"][: a.limit]
    questions = [p.question for p in probes]
    embedder = load_embedder(ev.embedder)
    precision = resolve_precision(ev.precision)
    model, tok = load_causal_lm(ev.base_model)
    cast_for_inference(model, precision)

    chunk_index, _ = load_index(run, ev.embedder, embedder, ev.chunk_headers)
    fact_index, evidence, _ = load_fact_index(run, ev.embedder, embedder)
    chunks_name = f"chunks ({ev.retriever}{', headers' if ev.chunk_headers else ''})"

    def chunk_hit(p, i):
        return is_hit(p, chunk_index.chunk_ids[i], chunk_index.texts[i])

    def fact_hit(p, i):
        return is_fact_hit(p, fact_index.chunk_ids[i], evidence[i], fact_index.texts[i])

    configs = {chunks_name: (chunk_index, ev.retriever, chunk_hit), "facts (lexical)": (fact_index, "lexical", fact_hit),
               "facts (hybrid)": (fact_index, "hybrid", fact_hit)}
    correct, recall, seconds = {}, {}, {}
    t = time.perf_counter()
    correct["closed book"] = [r["correct"] for r in score_probes(model, tok, [chat_prompt(tok, q) for q in questions],
                                                                  probes, "closed book", True)]
    seconds["closed book"] = round(time.perf_counter() - t, 1)
    for name, (index, retriever, hit) in configs.items():
        t = time.perf_counter()
        rows = index.search(questions, ev.rag_k, retriever)
        recall[name] = [any(hit(p, i) for i in row) for p, row in zip(probes, rows)]
        prompts = [chat_prompt(tok, rag_prompt(q, [index.texts[i] for i in row])) for q, row in zip(questions, rows)]
        correct[name] = [r["correct"] for r in score_probes(model, tok, prompts, probes, name, True)]
        seconds[name] = round(time.perf_counter() - t, 1)

    kinds = sorted({p.kind for p in probes})
    out = {"command": "python benchmarks/rag_units_dev.py R --recipe " + str(a.recipe), "run": str(a.run),
           "created": datetime.now(UTC).isoformat(timespec="seconds"), "git_hash": git_hash(),
           "machine": platform.processor() or platform.machine(), "precision": precision, "k": ev.rag_k,
           "reference": chunks_name, "seconds": seconds, "kinds": {}}
    for kind in kinds:
        idx = [i for i, p in enumerate(probes) if p.kind == kind]
        ref = [float(correct[chunks_name][i]) for i in idx]
        row = {"n": len(idx), "configs": {}}
        for name, flags in correct.items():
            acc = [float(flags[i]) for i in idx]
            row["configs"][name] = {"accuracy": sum(acc) / len(acc),
                                    "recall": (sum(recall[name][i] for i in idx) / len(idx)) if name in recall else None,
                                    "vs_reference": None if name == chunks_name else paired_bootstrap(ref, acc, seed=recipe.seed)}
        out["kinds"][kind] = row
        print(kind, len(idx), {n: round(c["accuracy"] * 100, 1) for n, c in row["configs"].items()})
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()

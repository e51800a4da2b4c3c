"""Structured output on the demo's synth: the same recipe with `synth.structured_output`
false (free text, parsed leniently) and true (JSON schemas, constrained decoding), each on
a fresh run of the shipped sample (fresh LLM cache): calls, items kept, removed per filter,
output tokens/s, and the expansion ratio (`kbake synth --stats`).

    .venv/bin/python benchmarks/structured_synth.py --out /tmp/ss [--recipe recipes/demo.yaml]
"""

import argparse
import json
import shutil
import time
from pathlib import Path

from kbake.config import load_recipe
from kbake.ingest import ingest
from kbake.models import load_tokenizer
from kbake.run import RunDir
from kbake.sample import sample_documents, sample_probes
from kbake.synth import corpus_stats, llm_for, synth

ap = argparse.ArgumentParser()
ap.add_argument("--out", type=Path, required=True)
ap.add_argument("--recipe", type=Path, default=Path("recipes/demo.yaml"))
ap.add_argument("--modes", nargs="+", default=["false", "true"])
a = ap.parse_args()

recipe = load_recipe(a.recipe)
tok = load_tokenizer("default")
rows = []
for mode in a.modes:
    run = RunDir.at(a.out / f"structured-{mode}")
    if run.root.exists():
        shutil.rmtree(run.root)
    run.ensure()
    ingest([str(p) for p in sample_documents()], run, recipe.ingest, progress=False)
    run.probes.write_bytes(sample_probes().read_bytes())
    args = recipe.synth.model_copy(update={"structured_output": mode == "true"})
    llm = llm_for(run, args)
    t0 = time.perf_counter()
    rep = synth(run, args, seed=recipe.seed, progress=False, llm=llm)
    seconds = time.perf_counter() - t0
    stats = corpus_stats(run, tok)
    out_tokens = llm.stats.completion_tokens
    row = {"structured_output": mode == "true", "seconds": round(seconds, 1), "calls": rep.calls,
           "prompt_and_output_tokens_per_s": round(rep.tokens / seconds, 1), "output_tokens": out_tokens,
           "output_tokens_per_s": round(out_tokens / seconds, 1),
           "kinds": {k: {"jobs": r.jobs, "items": r.items, "removed": dict(r.removed)} for k, r in rep.kinds.items()},
           "expansion_ratio": round(stats["expansion_ratio"], 3), "synthetic_tokens": stats["synthetic_tokens"],
           "source_tokens": stats["source_tokens"]}
    rows.append(row)
    print(json.dumps(row), flush=True)
(a.out / "structured_synth.json").write_text(json.dumps(rows, indent=2))

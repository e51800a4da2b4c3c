"""`kbake demo`: the whole pipeline on the shipped sample with the embedded defaults.

ingest the fictional 10-K → install its hand-written probes → synthesise QA + EntiGraph
with the embedded model (or, with --fast, use the corpus shipped in data/) → train LoRA
→ evaluate against the base model and RAG → print the table and the report's path.
`--compare` trains instead every recipe of recipes/compare/ (the demo's LoRA with snapshots,
raw-text LoRA as the regurgitation baseline, full finetuning, sparse memory finetuning,
GRPO, and aggressive full and LoRA finetunes as the forgetting yardstick's positive controls), each
exactly as `kbake train --recipe recipes/compare/NAME.yaml --name NAME` would.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from rich.console import Console

from kbake.config import Recipe, load_recipe, save_resolved
from kbake.ingest import ingest
from kbake.run import RunDir, read_chunks
from kbake.sample import sample_dir, sample_documents, sample_probes


def compare_recipes(folder: Path | None = None) -> list[Path]:
    """The recipes `--compare` trains, one model each, named by file (packaged recipes/compare/)."""
    folder = folder or Path(__file__).resolve().parent / "recipes" / "compare"
    found = sorted(folder.glob("*.yaml"))
    if not found:
        raise FileNotFoundError(f"{folder}: no compare recipes (*.yaml)")
    return found


def shipped_corpus() -> Path:
    """Synthetic corpora made once by the embedded model from the sample (`--fast`)."""
    return sample_dir() / "synth"


def run_demo(run_path: Path, recipe: Recipe, *, fast: bool = False, compare: bool = False,
             compare_dir: Path | None = None, seeds: list[int] | None = None, progress: bool = True,
             console: Console | None = None) -> dict:
    """Run the demo into `run_path`; returns the eval metrics. With `seeds`, every model is trained
    once per seed (NAME-sSEED) and eval pools each group (kbake/eval/seeds.py)."""
    from kbake.eval import evaluate
    from kbake.synth import synth
    from kbake.train import seed_name, train

    console = console or Console()
    t0 = time.perf_counter()
    run = RunDir.at(run_path).ensure()
    save_resolved(recipe, run.config_path("demo"))
    console.rule("[bold]kbake demo[/] — Corvane Hydrosystems 10-K (a fictional company)")
    from kbake.models.precision import resolve_precision

    console.print(f"precision: synth {resolve_precision(recipe.synth.precision)}, train "
                  f"{resolve_precision(recipe.train.precision)}, eval {resolve_precision(recipe.eval.precision)} "
                  "(auto = bf16 where this CPU/GPU computes it natively)")

    console.print("[bold]1/4 ingest[/] the sample 10-K")
    report = ingest([str(p) for p in sample_documents()], run, recipe.ingest, seed=recipe.seed, progress=progress)
    chunks = read_chunks(run.chunks)
    shutil.copyfile(sample_probes(), run.probes)
    console.print(f"    {len(chunks)} chunks, {sum(c['n_tokens'] for c in chunks):,} tokens; "
                  f"{len(run.probes.read_text().splitlines())} hand-written held-out probes")
    for path, reason in report.errors:
        console.print(f"    [red]error[/] {path}: {reason}")

    kinds = sorted({k for k in recipe.train.data if k != "raw"})
    if fast:
        console.print(f"[bold]2/4 synth[/] --fast: using the corpus shipped in {shipped_corpus()}")
        run.synth_dir.mkdir(parents=True, exist_ok=True)
        for src in sorted(shipped_corpus().glob("*.jsonl")) + sorted(shipped_corpus().glob("*.parquet")):
            shutil.copyfile(src, run.synth_dir / src.name)  # every shipped kind, to train other mixes too
    else:
        console.print(f"[bold]2/4 synth[/] {', '.join(kinds)} with {recipe.synth.llm}")
        args = recipe.synth.model_copy(update={"kinds": kinds})
        rep = synth(run, args, seed=recipe.seed, progress=progress)
        for k, r in rep.kinds.items():
            console.print(f"    {k}: {r.items} items from {r.jobs} calls (removed {dict(r.removed)})")

    console.print("[bold]3/4 train[/] " + (f"the recipes of {compare_dir or 'recipes/compare'}" if compare else
                  f"{recipe.train.method} on {', '.join(recipe.train.data)}"))
    if compare:
        plan = [(p.stem, load_recipe(p)) for p in compare_recipes(compare_dir)]
    else:
        plan = [(recipe.train.method, recipe)]
    if seeds:
        plan = [(seed_name(name, s), r.model_copy(update={"seed": s})) for name, r in plan for s in seeds]
    for name, r in plan:
        if (run.train_dir / name / "model").exists():
            console.print(f"    {name}: already trained, kept")
            continue
        # the demo's model (--model) is every row's base; all else is the compare recipe's
        r = recipe.model_copy(update={"train": r.train.model_copy(update={"base_model": recipe.train.base_model}),
                                      "seed": r.seed})
        state = train(run, r, name=name, progress=progress)
        console.print(f"    {name}: {state['global_step']} steps, {state['train_seconds']:.0f}s, "
                      f"final loss {state['final_loss']:.3f}")

    console.print("[bold]4/4 eval[/] closed book (test and dev probes), RAG, trained+RAG, forgetting "
                  "(general-eval sets, novel and replay-domain perplexity)")
    names = [n for n, _ in plan]
    r = recipe.model_copy(update={"eval": recipe.eval.model_copy(update={"models": names})})
    metrics = evaluate(run, r, progress=progress)
    from kbake.eval.report import print_results

    print_results(metrics)
    console.print(f"report: {run.eval_dir / 'report.html'}   ({(time.perf_counter() - t0) / 60:.1f} min in all)")
    return metrics

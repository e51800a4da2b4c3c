"""`kbake demo`: the whole pipeline on the shipped sample with the embedded defaults.

Stages are added here as they are built; today it ingests the sample, installs its
hand-written probes in the run folder, and prints what it found.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kbake.config import Recipe, save_resolved
from kbake.ingest import ingest
from kbake.run import RunDir, read_chunks, read_jsonl
from kbake.sample import sample_documents, sample_probes


def run_demo(run_path: Path, recipe: Recipe, console: Console | None = None) -> dict:
    """Run the demo into `run_path`; returns the figures it printed."""
    console = console or Console()
    run = RunDir.at(run_path).ensure()
    docs = [str(p) for p in sample_documents()]
    console.rule("[bold]kbake demo[/] — Corvane Hydrosystems 10-K (fictional)")
    report = ingest(docs, run, recipe.ingest, seed=recipe.seed)
    save_resolved(recipe, run.config_path("demo"))
    for path, reason in report.errors:
        console.print(f"[red]error[/] {path}: {reason}")
    chunks = read_chunks(run.chunks)
    shutil.copyfile(sample_probes(), run.probes)
    probes = read_jsonl(run.probes)

    tokens = [c["n_tokens"] for c in chunks]
    table = Table(title="ingested")
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("documents", str(len({c["doc_id"] for c in chunks})))
    table.add_row("chunks", str(len(chunks)))
    table.add_row("tokens (sum of chunks)", f"{sum(tokens):,}")
    table.add_row("tokens per chunk (min / max)", f"{min(tokens)} / {max(tokens)}")
    table.add_row("duplicates removed", str(sum(report.removed.values())))
    kinds = Counter(p["kind"] for p in probes)
    table.add_row("held-out probes", f"{len(probes)} ({', '.join(f'{k}: {v}' for k, v in sorted(kinds.items()))})")
    console.print(table)
    first = chunks[0]["text"]
    console.print(f"[dim]first chunk:[/] {first[:240]}{'…' if len(first) > 240 else ''}")
    console.print(f"run folder: {run.root}")
    return {"chunks": len(chunks), "tokens": sum(tokens), "probes": len(probes)}

"""The kbake command line: one thin command per pipeline stage."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from kbake.config import ConfigError, load_recipe, parse_sets, save_resolved

app = typer.Typer(
    help="Bake the knowledge in your documents into a model's weights, then measure what it learned, forgot, and how it compares with RAG.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

RUN_HELP = "Run folder: every stage reads and writes its files here."
RECIPE_HELP = "Recipe YAML holding every option (see recipes/); flags override it."
SET_HELP = "Override any recipe key, e.g. --set ingest.chunk_tokens=384 (repeatable)."


def _fail(msg: str, code: int = 2) -> None:
    typer.secho(f"error: {msg}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code)


def _recipe(recipe: Optional[Path], sets: Optional[List[str]], flags: dict):
    try:
        overrides = parse_sets(sets)
        overrides.update({k: v for k, v in flags.items() if v is not None})
        return load_recipe(recipe, overrides)
    except ConfigError as e:
        _fail(str(e))


@app.command()
def ingest(
    docs: List[str] = typer.Argument(..., help="Files, folders or globs of .txt .md .html .htm .pdf."),
    run: Path = typer.Option(..., "--run", "-r", help=RUN_HELP),
    recipe: Optional[Path] = typer.Option(None, "--recipe", help=RECIPE_HELP),
    tokenizer: Optional[str] = typer.Option(None, help="Tokenizer that counts chunk sizes: 'default', a Hugging Face id or a folder."),
    chunk_tokens: Optional[int] = typer.Option(None, help="Largest chunk, in tokens."),
    overlap_tokens: Optional[int] = typer.Option(None, help="Tokens shared by consecutive chunks."),
    set_: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
):
    """Read documents, cut them into token-bounded chunks, drop duplicates: writes RUN/chunks.parquet.

    Unchanged files are skipped; changed files replace their chunks. Bad files are named
    with the reason and the rest still ingest; the exit code is 1 only when nothing usable
    was ingested.
    """
    from kbake.ingest import ingest as ingest_documents
    from kbake.run import RunDir

    cfg = _recipe(recipe, set_, {"ingest.tokenizer": tokenizer, "ingest.chunk_tokens": chunk_tokens,
                                 "ingest.overlap_tokens": overlap_tokens})
    rd = RunDir.at(run)
    report = ingest_documents(docs, rd, cfg.ingest, seed=cfg.seed, progress=not quiet)
    for path, reason in report.errors:
        typer.secho(f"error: {path}: {reason}", err=True, fg=typer.colors.RED)
    if report.skipped:
        typer.echo(f"skipped {len(report.skipped)} file(s) of unsupported type: {', '.join(report.skipped)}", err=True)
    if report.wrote:
        save_resolved(cfg, rd.config_path("ingest"))
        typer.echo(
            f"ingested {len(report.added)} new, {len(report.updated)} changed, {len(report.unchanged)} unchanged "
            f"document(s) -> {report.n_chunks} chunks in {rd.chunks} "
            f"(removed {report.removed.get('exact', 0)} exact, {report.removed.get('near', 0)} near duplicates)"
        )
    elif report.ok:
        typer.echo(f"nothing changed: {len(report.unchanged)} document(s), {report.n_chunks} chunks in {rd.chunks}")
    if not report.ok:
        _fail("nothing usable was ingested", 1)


@app.command()
def demo(
    run: Path = typer.Option(Path("runs/demo"), "--run", "-r", help=RUN_HELP),
    recipe: Optional[Path] = typer.Option(None, "--recipe", help=RECIPE_HELP),
    set_: Optional[List[str]] = typer.Option(None, "--set", help=SET_HELP),
):
    """Run kbake on the shipped sample (a fictional company's 10-K) with the embedded defaults.

    Today: ingests the sample and prints what it found.
    """
    from kbake.demo import run_demo

    cfg = _recipe(recipe, set_, {})
    run_demo(run, cfg)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

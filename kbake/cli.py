"""The kbake command line: one thin command per pipeline stage."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from kbake.config import ConfigError, load_recipe, parse_sets, save_resolved

app = typer.Typer(
    help="Bake the knowledge in your documents into a model's weights, then measure what it learned, forgot, and how it compares with RAG.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)

@app.callback()
def _private_files() -> None:
    """Everything kbake writes (run folders, caches, checkpoints, reports) is owner-only:
    it holds the text of private documents."""
    import os

    os.umask(0o077)


RUN_HELP = "Run folder: every stage reads and writes its files here."
RECIPE_HELP = "Recipe YAML holding every option (see recipes/); flags override it."
SET_HELP = "Override any recipe key, e.g. --set ingest.chunk_tokens=384 (repeatable); =null clears one, e.g. train.max_steps=null."


def _fail(msg: str, code: int = 2) -> None:
    typer.secho(f"error: {msg}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code)


def _recipe(recipe: Path | None, sets: list[str] | None, flags: dict):
    try:
        overrides = parse_sets(sets)
        overrides.update({k: v for k, v in flags.items() if v is not None})
        return load_recipe(recipe, overrides)
    except ConfigError as e:
        _fail(str(e))


def _seed_list(seeds: str | None) -> list[int]:
    try:
        return [int(x) for x in seeds.split(",") if x.strip()] if seeds else []
    except ValueError:
        _fail(f"--seeds {seeds!r}: expected comma-separated integers, e.g. 0,1,2")


@app.command()
def ingest(
    docs: list[str] = typer.Argument(..., help="Files, folders or globs of .txt .md .html .htm .pdf."),
    run: Path = typer.Option(..., "--run", "-r", help=RUN_HELP),
    recipe: Path | None = typer.Option(None, "--recipe", help=RECIPE_HELP),
    tokenizer: str | None = typer.Option(None, help="Tokenizer that counts chunk sizes: 'default', a Hugging Face id or a folder."),
    chunk_tokens: int | None = typer.Option(None, help="Largest chunk, in tokens."),
    overlap_tokens: int | None = typer.Option(None, help="Tokens shared by consecutive chunks."),
    as_of: str | None = typer.Option(None, "--as-of", help="Date these documents' facts hold, YYYY-MM-DD (default: front matter "
                                                           "`as_of:`, else the document's own 'fiscal year ended <date>')."),
    entity: str | None = typer.Option(None, help="Whose facts these are, linking yearly documents (default: the filing's "
                                                 "registrant, else the file name without digits)."),
    set_: list[str] | None = typer.Option(None, "--set", help=SET_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
):
    """Read documents, cut them into token-bounded chunks, drop duplicates: writes RUN/chunks.parquet.

    Each document is dated (`as_of`) and named (`entity`), so a newer filing of the same
    company can be ingested into the same run and trained in with `kbake train --from`.

    Unchanged files are skipped; changed files replace their chunks. Bad files are named
    with the reason and the rest still ingest; the exit code is 1 only when nothing usable
    was ingested.
    """
    from kbake.ingest import ingest as ingest_documents
    from kbake.run import RunDir

    cfg = _recipe(recipe, set_, {"ingest.tokenizer": tokenizer, "ingest.chunk_tokens": chunk_tokens,
                                 "ingest.overlap_tokens": overlap_tokens, "ingest.as_of": as_of, "ingest.entity": entity})
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


def _remote_notice(run, args, n_requests_hint: str, yes: bool) -> None:
    """Before any document text leaves the machine: say how much goes where, and ask."""
    if not args.llm.startswith("openai:"):
        return
    from kbake.run import RunDir, read_chunks

    chunks = read_chunks(RunDir.at(run).chunks)
    where = args.base_url or "https://api.openai.com/v1"
    typer.echo(f"{len(chunks)} chunks ({sum(c['n_tokens'] for c in chunks):,} tokens of your documents, "
               f"{n_requests_hint}) will be sent to {where} ({args.llm}).", err=True)
    if yes:
        return
    if not sys.stdin.isatty():
        _fail("not on a terminal: pass --yes to confirm sending documents to that endpoint")
    if not typer.confirm("Send them?", default=False):
        raise typer.Exit(1)


LLM_HELP = "'local' (embedded SmolLM2), 'local:NAME' (HF id or folder) or 'openai:MODEL'."


@app.command()
def synth(
    run: Path = typer.Option(..., "--run", "-r", help=RUN_HELP),
    kind: str | None = typer.Option(None, help="Comma-separated generators: qa,extract,rephrase,focal,entigraph,changes, and from "
                                               "the fact table (no LLM) restate,fact_qa."),
    llm: str | None = typer.Option(None, help=LLM_HELP),
    base_url: str | None = typer.Option(None, help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (vLLM)."),
    api_key_env: str | None = typer.Option(None, help="Environment variable that holds the API key."),
    concurrency: int | None = typer.Option(None, help="Requests in flight (openai backend)."),
    token_budget: int | None = typer.Option(None, help="Stop cleanly (resumable) after this many tokens of real calls."),
    stats: bool = typer.Option(False, "--stats", help="Print counts, tokens, distinct-1/2/3 and embedding spread per kind, tokens "
                                                      "per document, and the expansion ratio; generate nothing."),
    estimate: bool = typer.Option(False, "--estimate", help="Print calls, tokens and expected time (local: from a timed probe of "
                                                            "one real batch, which is cached and reused; endpoint: from concurrency"
                                                            " and price keys), then stop."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before sending documents to a remote endpoint."),
    recipe: Path | None = typer.Option(None, "--recipe", help=RECIPE_HELP),
    set_: list[str] | None = typer.Option(None, "--set", help=SET_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
):
    """Write a synthetic corpus about the chunks: RUN/synth/KIND.jsonl (+ .parquet).

    qa: question-answer pairs per chunk; extract: a question for each rule-picked answer
    span, kept after a round trip; rephrase: each chunk in several styles; focal: a passage
    around each QA pair's question; entigraph: entities, then analyses of how pairs and
    triples of them relate; changes: what changed between dated filings. restate and
    fact_qa need no LLM: every table row's facts go to RUN/facts.parquet, then restate writes
    K restatements of each fact and row passages, fact_qa QA pairs in several wordings for
    the facts not held out (docs/synth.md). Items that fail the
    format, grounding, duplicate or leak (too close to a probe) filters are dropped and
    counted (docs/synth.md). Every call is cached in RUN/cache/llm.sqlite: a re-run makes no calls, a
    killed run resumes.
    """
    from kbake.llm import LLMError
    from kbake.run import RunDir

    flags = {"synth.llm": llm, "synth.base_url": base_url, "synth.api_key_env": api_key_env,
             "synth.concurrency": concurrency, "synth.token_budget": token_budget}
    if kind:
        flags["synth.kinds"] = [k.strip() for k in kind.split(",") if k.strip()]
    cfg = _recipe(recipe, set_, flags)
    rd = RunDir.at(run)
    if not rd.chunks.exists():
        _fail(f"{rd.chunks}: no chunks; run `kbake ingest DOCS --run {run}` first")
    if estimate:
        from kbake.synth.estimate import estimate as synth_estimate

        try:
            est = synth_estimate(rd, cfg.synth, cfg.seed)
        except LLMError as e:
            _fail(str(e), 1)
        typer.echo(est.line())
        for k, p in est.kinds.items():
            typer.echo(f"  {k}: {p.calls:,} calls, {p.input_tokens:,} input tokens, up to {p.max_tokens} output tokens each")
        return
    if not stats:
        from kbake.synth import synth as run_synth
        from kbake.synth.estimate import estimate as synth_estimate

        if cfg.synth.llm == "local" or cfg.synth.llm.startswith("local:"):
            typer.echo(synth_estimate(rd, cfg.synth, cfg.seed, probe=False).line())
        else:
            typer.echo(synth_estimate(rd, cfg.synth, cfg.seed).line())
        _remote_notice(run, cfg.synth, f"{len(cfg.synth.kinds)} generator(s)", yes)
        try:
            report = run_synth(rd, cfg.synth, seed=cfg.seed, progress=not quiet)
        except LLMError as e:
            _fail(str(e), 1)
        save_resolved(cfg, rd.config_path("synth"))
        for k, r in report.kinds.items():
            removed = ", ".join(f"{n} {why}" for why, n in r.removed.items() if n) or "none"
            typer.echo(f"{k}: {r.items} items from {r.jobs} calls (removed: {removed})")
        typer.echo(f"model calls: {report.calls}, cache hits: {report.cache_hits}, tokens: {report.tokens:,}, "
                   f"{report.seconds:.1f}s")
    _print_stats(rd)


def _print_stats(rd) -> None:
    from rich.console import Console
    from rich.table import Table

    from kbake.models import load_embedder, load_tokenizer
    from kbake.run import load_manifest
    from kbake.synth import corpus_stats

    stages = load_manifest(rd).get("stages", {})
    tok_name = stages.get("ingest", {}).get("config", {}).get("tokenizer", "default")
    embedder = load_embedder(stages.get("synth", {}).get("config", {}).get("embedder", "default"))
    st = corpus_stats(rd, load_tokenizer(tok_name), embedder)
    table = Table(title=f"synthetic corpus in {rd.synth_dir}")
    for col in ("kind", "items", "tokens", "distinct-1", "distinct-2", "distinct-3", "spread"):
        table.add_column(col, justify="left" if col == "kind" else "right")
    for k, v in st["kinds"].items():
        table.add_row(k, str(v["items"]), f"{v['tokens']:,}", *(f"{v[f'distinct_{n}']:.2f}" for n in (1, 2, 3)),
                      f"{v['spread']:.2f}")
    table.add_row("all", str(sum(v["items"] for v in st["kinds"].values())), f"{st['synthetic_tokens']:,}", "", "", "", "")
    Console().print(table)
    for d, v in st["per_doc"].items():
        typer.echo(f"  {d}: {v['source_tokens']:,} source tokens -> {v['synthetic_tokens']:,} synthetic")
    typer.echo(f"expansion ratio: {st['expansion_ratio']:.2f}x (synthetic tokens / source tokens)")
    if "facts" in st:
        f = st["facts"]
        by = lambda d: ", ".join(f"{v} {k}" for k, v in d.items())  # noqa: E731
        sentences = f" and {f['sentences']} prose sentences" if f.get("sentences") else ""
        typer.echo(f"facts ({rd.facts}): {f['n']} from {f['rows']} table rows{sentences}; "
                   f"by source: {by(f['by_source'])}; by split: {by(f['by_split'])}")
        for d, n in f["by_doc"].items():
            typer.echo(f"  {d}: {n} facts")
        typer.echo(f"fact corpus: {f['synthetic_tokens']:,} tokens from {f['source_tokens']:,} tokens of the chunks the "
                   f"facts come from: {f['expansion_ratio']:.1f}x")


@app.command()
def probes(
    run: Path = typer.Option(..., "--run", "-r", help=RUN_HELP),
    llm: str | None = typer.Option(None, help=LLM_HELP),
    base_url: str | None = typer.Option(None, help="OpenAI-compatible endpoint."),
    per_chunk: int | None = typer.Option(None, help="Probe questions per chunk."),
    facts: bool = typer.Option(False, "--facts", help="Add probes written from the fact table (after `kbake synth --kind "
                                                      "restate,fact_qa`; no LLM), keeping the probes already there."),
    force: bool = typer.Option(False, "--force", help="Replace an existing probes.jsonl (e.g. hand-written ones)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before sending documents to a remote endpoint."),
    recipe: Path | None = typer.Option(None, "--recipe", help=RECIPE_HELP),
    set_: list[str] | None = typer.Option(None, "--set", help=SET_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
):
    """Generate a held-out multiple-choice probe set from the chunks: RUN/probes.jsonl.

    Each probe: question, correct answer, three distractors, reference, source chunk. The
    probes are never trained on: `kbake synth` drops items too close to them.

    With --facts: one probe per fact of RUN/facts.parquet, asked in a wording no training
    template uses, with distractors from the same line item's other periods and neighbouring
    rows; kind fact_qa (its QA pairs were trained) or fact_heldout (only restatements were).
    Earlier fact probes are replaced, other probes kept.
    """
    from kbake.llm import LLMError
    from kbake.run import RunDir
    from kbake.synth import make_fact_probes, make_probes

    cfg = _recipe(recipe, set_, {"probes.llm": llm, "probes.base_url": base_url, "probes.per_chunk": per_chunk})
    rd = RunDir.at(run)
    if not rd.chunks.exists():
        _fail(f"{rd.chunks}: no chunks; run `kbake ingest DOCS --run {run}` first")
    if facts:
        try:
            counts = make_fact_probes(rd, cfg.probes, cfg.synth, seed=cfg.seed)
        except (FileNotFoundError, ValueError) as e:
            _fail(str(e), 1)
        save_resolved(cfg, rd.config_path("probes"))
        typer.echo(f"wrote {sum(counts.values())} fact probes to {rd.probes} ("
                   + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + ")")
        return
    if rd.probes.exists() and not force:
        _fail(f"{rd.probes} exists; pass --force to replace it")
    _remote_notice(run, cfg.probes, f"{cfg.probes.per_chunk} request(s) per chunk", yes)
    try:
        counts = make_probes(rd, cfg.probes, seed=cfg.seed, progress=not quiet)
    except LLMError as e:
        _fail(str(e), 1)
    save_resolved(cfg, rd.config_path("probes"))
    removed = ", ".join(f"{v} {k}" for k, v in counts.items() if k != "kept" and v) or "none"
    typer.echo(f"wrote {counts['kept']} probes to {rd.probes} (removed: {removed})")


def _warn_in_one_line() -> None:
    """kbake's own warnings (an empty corpus skipped) as one yellow line, not a traceback-like block."""
    import warnings

    from kbake.train.data import EmptyCorpusWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, EmptyCorpusWarning):
            typer.secho(f"warning: {message}", fg="yellow", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


@app.command()
def train(
    run: Path = typer.Option(..., "--run", "-r", help=RUN_HELP),
    method: str | None = typer.Option(None, help="full | lora | tiny | memory | grpo."),
    init: str | None = typer.Option(None, "--from", "--init", help="Start from RUN/train/NAME (a full or lora model). full/lora: an"
                                                                   " incremental re-bake on the documents ingested since NAME was "
                                                                   "trained, with train.from_replay of the earlier corpus; grpo: RL"
                                                                   " on top of NAME."),
    name: str | None = typer.Option(None, help="Folder under RUN/train/ (default: the method)."),
    data: str | None = typer.Option(None, help="Comma-separated corpora: qa,extract,rephrase,focal,entigraph,changes,raw."),
    base_model: str | None = typer.Option(None, help="'default', a HF id or a folder."),
    resume: bool = typer.Option(False, "--resume", help="Continue from the last checkpoint of RUN/train/NAME."),
    seeds: str | None = typer.Option(None, "--seeds", help="Comma-separated seeds, e.g. 0,1,2: one model per seed in "
                                                           "RUN/train/NAME-sSEED/ (models already there are kept); `kbake eval` "
                                                           "pools them."),
    recipe: Path | None = typer.Option(None, "--recipe", help=RECIPE_HELP),
    set_: list[str] | None = typer.Option(None, "--set", help=SET_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
):
    """Train the synthetic corpus into a model: RUN/train/NAME/ (model, metrics.jsonl, trainer_state.json).

    full: all weights; lora: peft adapters; tiny: TinyLoRA, a few trainable numbers on frozen
    SVD bases; memory: a product-key memory layer with sparse memory finetuning; grpo:
    reinforcement learning in an environment (qa or lookup). One loop for all: packing, replay of general text, gradient
    accumulation, warm-up + cosine LR, eval loss, checkpoints (--resume). Runs unchanged
    under `accelerate launch` (DDP/FSDP).
    """
    from kbake.run import RunDir
    from kbake.train import TrainError, train_seeds
    from kbake.train import train as run_train

    flags = {"train.method": method, "train.base_model": base_model, "train.init": init}
    if data:
        flags["train.data"] = [d.strip() for d in data.split(",") if d.strip()]
    cfg = _recipe(recipe, set_, flags)
    seed_list = _seed_list(seeds)
    _warn_in_one_line()
    try:
        if seed_list:
            states = train_seeds(RunDir.at(run), cfg, seed_list, name=name, resume=resume, progress=not quiet)
        else:
            states = [run_train(RunDir.at(run), cfg, name=name, resume=resume, progress=not quiet)]
    except (TrainError, FileNotFoundError, ValueError) as e:
        _fail(str(e).splitlines()[0])
    for state in states:
        if not state:
            continue
        typer.echo(f"trained {state['method']} '{state['name']}': {state['global_step']} steps, "
                   f"{state['train_seconds']:.0f}s, final loss {state['final_loss']:.3f}"
                   + (f", eval loss {state['eval_loss']:.3f}" if state.get("eval_loss") is not None else "")
                   + f"; trainable {state['trainable_params']:,} of {state['total_params']:,} parameters")


@app.command()
def export(
    run: Path = typer.Option(..., "--run", "-r", help=RUN_HELP),
    name: str = typer.Option(..., help="The trained model under RUN/train/."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the standalone model."),
    merge: bool = typer.Option(False, "--merge", help="Merge a LoRA adapter into the base weights (a plain HF model folder)."),
):
    """Copy a trained model out of the run folder; with --merge, as a standalone Hugging Face model."""
    import shutil

    from kbake.models.trained import export_merged
    from kbake.run import RunDir

    src = RunDir.at(run).train_dir / name
    if not (src / "model").exists():
        _fail(f"{src}/model: no trained model named {name!r}")
    try:
        path = export_merged(src, out) if merge else Path(shutil.copytree(src / "model", out))
    except (ValueError, FileExistsError) as e:
        _fail(str(e))
    typer.echo(f"wrote {path}")


@app.command("eval")
def eval_(
    run: Path = typer.Option(..., "--run", "-r", help=RUN_HELP),
    models: str | None = typer.Option(None, help="Comma-separated trained models under RUN/train/ (default: all)."),
    rag_k: int | None = typer.Option(None, help="Chunks retrieved for RAG."),
    recipe: Path | None = typer.Option(None, "--recipe", help=RECIPE_HELP),
    set_: list[str] | None = typer.Option(None, "--set", help=SET_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
):
    """Measure learning, forgetting and RAG for the base model and every trained model.

    Writes RUN/eval/metrics.json, report.md, report.html (self-contained) and the plots,
    and prints the results table.
    """
    from kbake.eval import evaluate
    from kbake.run import RunDir

    flags = {"eval.rag_k": rag_k}
    if models:
        flags["eval.models"] = [m.strip() for m in models.split(",") if m.strip()]
    cfg = _recipe(recipe, set_, flags)
    rd = RunDir.at(run)
    try:
        metrics = evaluate(rd, cfg, progress=not quiet)
    except (FileNotFoundError, ValueError) as e:
        _fail(str(e).splitlines()[0])
    save_resolved(cfg, rd.config_path("eval"))
    from kbake.eval.report import print_results

    print_results(metrics)
    typer.echo(f"report: {rd.eval_dir / 'report.html'}")


@app.command()
def report(
    runs: list[Path] = typer.Argument(..., help="Run folders that have been evaluated."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Also write the comparison as Markdown here."),
):
    """Compare evaluated runs side by side (their results tables, one row per model)."""
    from kbake.eval.report import compare_runs
    from kbake.run import atomic_write_text

    try:
        md = compare_runs(runs)
    except (FileNotFoundError, ValueError) as e:
        _fail(str(e))
    typer.echo(md)
    if out:
        atomic_write_text(out, md + "\n")


@app.command()
def demo(
    run: Path = typer.Option(Path("runs/demo"), "--run", "-r", help=RUN_HELP),
    fast: bool = typer.Option(False, "--fast", help="Use the synthetic corpus shipped in data/ instead of generating one."),
    compare: bool = typer.Option(False, "--compare", help="Train every recipe of recipes/compare/ instead (LoRA with snapshots, "
                                                          "raw-text LoRA, full, TinyLoRA, memory, GRPO, aggressive full and LoRA "
                                                          "finetunes as forgetting controls), one model each."),
    compare_dir: Path | None = typer.Option(None, "--compare-recipes", help="Folder of recipes for --compare (default: the packaged"
                                                                            " recipes/compare/)."),
    model: str | None = typer.Option(None, help="Run everything on this model instead of the embedded default (HF id or folder)."),
    recipe: Path = typer.Option(None, "--recipe", help=RECIPE_HELP + " Default: recipes/demo.yaml."),
    set_: list[str] | None = typer.Option(None, "--set", help=SET_HELP),
    seeds: str | None = typer.Option(None, "--seeds", help="Comma-separated seeds, e.g. 0,1,2: every model (the demo's, or each "
                                                           "--compare recipe's) trained once per seed as NAME-sSEED; the report "
                                                           "pools each group with an interval over seeds and probes."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
):
    """The whole pipeline on the shipped sample (a fictional company's 10-K), on the embedded defaults.

    ingest → probes → synth (QA + EntiGraph) → train LoRA → eval against the base model
    and RAG (learning on test and dev probes, forgetting on four general-eval sets and a
    novel, every change with a 95% interval); prints the table and the path of report.html.
    On 2 CPU cores in fp32 the whole demo took 17-18 minutes (docs/results.md, "What varies
    between runs of the same recipe and seed"; 12.5 minutes with native bf16 on an earlier CPU).
    """
    from kbake.demo import run_demo

    flags = {}
    if model:
        flags = {"ingest.tokenizer": model, "synth.llm": f"local:{model}", "train.base_model": model,
                 "eval.base_model": model}
    cfg = _recipe(recipe or _demo_recipe(), set_, flags)
    _warn_in_one_line()
    try:
        run_demo(run, cfg, fast=fast, compare=compare, compare_dir=compare_dir, seeds=_seed_list(seeds),
                 progress=not quiet)
    except (FileNotFoundError, ConfigError) as e:
        _fail(str(e).splitlines()[0])


def _demo_recipe() -> Path:
    return Path(__file__).resolve().parent / "recipes" / "demo.yaml"


def main() -> None:
    """The console script: the app, with OS errors (a full disk, a read-only folder) as one line."""
    import errno

    try:
        app()
    except OSError as e:
        hint = {errno.ENOSPC: " (disk full or file size limit?)", errno.EFBIG: " (disk full or file size limit?)",
                errno.EDQUOT: " (disk full or file size limit?)",
                errno.EIO: " (disk full or file size limit, or a failing disk?)"}.get(e.errno, "")
        where = f"{e.filename}: " if e.filename else ""
        typer.secho(f"error: {where}{e.strerror or e}{hint}; the last complete outputs are untouched", err=True,
                    fg=typer.colors.RED)
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

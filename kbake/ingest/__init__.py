"""`kbake ingest`: documents in, `chunks.parquet` and the manifest out.

Reads each file (txt, md, html, pdf), cuts it into token-bounded chunks, drops exact
and near duplicates, and writes the chunk table atomically. Unchanged files (same
bytes, same options) are not re-read; changed files replace their old chunks.
"""

from __future__ import annotations

import glob
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from kbake.config import IngestArgs
from kbake.ingest.chunker import chunk_text
from kbake.ingest.dates import document_as_of, entity_of
from kbake.ingest.dedup import StreamingDedup, normalized_hash
from kbake.ingest.readers import SUPPORTED, ReadError, drop_filing_boilerplate, read_document
from kbake.run import ChunkWriter, RunDir, config_hash, iter_chunks, load_manifest, provenance, save_stage, sha256_file


@dataclass
class IngestReport:
    """What one ingest did, for the CLI to print and tests to check."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    n_chunks: int = 0
    removed: dict[str, int] = field(default_factory=dict)
    wrote: bool = False

    @property
    def ok(self) -> bool:
        """Usable when at least one document is in the run."""
        return bool(self.added or self.updated or self.unchanged)


def discover(inputs: list[str]) -> tuple[list[Path], list[tuple[str, str]], list[str]]:
    """Expand files, folders and globs. Returns (files, errors, skipped): unsupported files
    inside a folder are skipped by name; named explicitly, they are errors."""
    files: list[Path] = []
    errors: list[tuple[str, str]] = []
    skipped: list[str] = []
    for item in inputs:
        matches = [Path(m) for m in sorted(glob.glob(item, recursive=True))] if glob.has_magic(item) else [Path(item)]
        if not matches:
            errors.append((item, "no file matches this pattern"))
        for p in matches:
            if p.is_dir():
                for q in sorted(p.rglob("*")):
                    if not q.is_file() or any(part.startswith(".") for part in q.relative_to(p).parts):
                        continue
                    (files if q.suffix.lower() in SUPPORTED else skipped).append(q)
            elif p.is_file():
                files.append(p)
            elif p.exists():
                errors.append((str(p), "not a regular file"))
            else:
                errors.append((str(p), "no such file or folder"))
    seen, unique = set(), []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique, errors, [str(s) for s in skipped]


def doc_id_for(path: Path) -> str:
    """Stable id: a slug of the file name plus a short hash of its absolute path."""
    slug = re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-")[:48] or "doc"
    return f"{slug}-{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]}"


def ingest(inputs: list[str], run: RunDir, args: IngestArgs, *, seed: int = 0, progress: bool = True) -> IngestReport:
    """Ingest documents into `run`; see the module docstring. Streams: one document's text
    at a time in memory, chunks written in row groups, deduplicated as they pass."""
    from kbake.models import load_tokenizer

    run.ensure()
    report = IngestReport()
    files, report.errors, report.skipped = discover(inputs)
    # Dates and entities describe documents, not chunking: changing them does not re-chunk.
    options = args.model_dump(mode="json", exclude={"as_of", "entity"})
    options_hash = config_hash(options)

    prior = load_manifest(run).get("stages", {}).get("ingest", {})
    same_options = prior.get("options_hash") == options_hash
    prior_docs: dict = prior.get("docs", {}) if same_options and run.chunks.exists() else {}

    todo: list[tuple[Path, str, str]] = []
    for path in files:
        did = doc_id_for(path)
        try:
            digest = sha256_file(path)
        except OSError as e:
            report.errors.append((str(path), f"unreadable ({e.strerror})"))
            continue
        if did in prior_docs and prior_docs[did]["sha256"] == digest:
            report.unchanged.append(str(path))
        else:
            todo.append((path, did, digest))

    if not todo and same_options and run.chunks.exists():
        report.n_chunks = prior.get("n_chunks", 0)
        return report

    tokenizer = load_tokenizer(args.tokenizer) if todo else None
    docs = dict(prior_docs)
    # Each ingest that adds or changes documents is a round; `kbake train --from` trains on the
    # newest round's chunks (with replay of the rest).
    this_round = max((d.get("round", 1) for d in docs.values()), default=0) + 1
    writer = ChunkWriter(run.chunks)
    try:
        dedup = StreamingDedup(args.near_dup_threshold, args.minhash_perm, folder=run.root)
    except BaseException:
        writer.abort()
        raise
    counts: dict[str, int] = {}
    replaced: set[str] = set()

    def keep(row: dict) -> None:
        if dedup.add(row["text"]) is None:
            writer.add(row)
            counts[row["doc_id"]] = counts.get(row["doc_id"], 0) + 1

    try:
        for path, did, digest in _progress(todo, progress):
            try:
                text = read_document(path)
                as_of = document_as_of(path, text, args.as_of)
                entity = args.entity or entity_of(path, text)
                if args.filing_boilerplate == "drop":
                    text = drop_filing_boilerplate(text)
                if not text.strip():
                    raise ReadError("empty (nothing left after dropping filing boilerplate)")
            except ReadError as e:
                report.errors.append((str(path), str(e)))
                continue  # a file that turned bad keeps its old chunks
            spans = chunk_text(text, tokenizer, args.chunk_tokens, args.overlap_tokens)
            for n, sp in enumerate(spans):
                piece = text[sp.start : sp.end]
                keep({"chunk_id": f"{did}:{n:04d}", "doc_id": did, "source": str(path), "start": sp.start,
                      "end": sp.end, "n_tokens": sp.n_tokens, "sha256": normalized_hash(piece), "text": piece,
                      "as_of": as_of.isoformat() if as_of else "", "entity": entity})
            (report.updated if did in docs else report.added).append(str(path))
            replaced.add(did)
            docs[did] = {"source": str(path), "sha256": digest, "n_chars": len(text),
                         "as_of": as_of.isoformat() if as_of else None, "entity": entity, "round": this_round}
        if prior_docs:
            for row in iter_chunks(run.chunks):
                if row["doc_id"] not in replaced:
                    keep(row)
        if writer.count == 0:
            writer.abort()
            return report
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        dedup.close()
    for did, info in docs.items():
        info["n_chunks"] = counts.get(did, 0)
    report.removed = dict(dedup.removed)
    report.n_chunks = writer.count
    report.wrote = True
    entry = provenance(options, seed=seed, model=args.tokenizer)
    entry.update(options_hash=options_hash, docs=docs, outputs={"chunks.parquet": sha256_file(run.chunks)},
                 n_chunks=writer.count, removed_duplicates=report.removed)
    save_stage(run, "ingest", entry)
    return report


def _progress(items: list, enabled: bool):
    if not enabled or len(items) < 2:
        return items
    from tqdm import tqdm

    return tqdm(items, desc="ingest", unit="doc")

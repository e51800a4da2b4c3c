"""The run folder: its paths, the manifest, atomic writes, content hashes and provenance.

Every stage reads the previous stage's files from one run folder and writes its own.
Each file format of the run folder is defined here and only here.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import kbake

MANIFEST_VERSION = 1

# chunks.parquet: one row per chunk; `start`/`end` are character offsets into the
# document's extracted text, so a chunk can always be traced back to its source.
CHUNK_SCHEMA = pa.schema(
    [
        ("chunk_id", pa.string()),
        ("doc_id", pa.string()),
        ("source", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("n_tokens", pa.int32()),
        ("sha256", pa.string()),
        ("text", pa.string()),
        ("as_of", pa.string()),
        ("entity", pa.string()),
    ]
)
"""`as_of`: ISO date the document's facts hold ('' unknown); `entity`: whose facts (kbake/ingest/dates.py)."""


@dataclass(frozen=True)
class RunDir:
    """Paths of one run folder; creates nothing until a stage writes."""

    root: Path

    @classmethod
    def at(cls, path: str | os.PathLike) -> RunDir:
        return cls(Path(path).expanduser())

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    @property
    def chunks(self) -> Path:
        return self.root / "chunks.parquet"

    @property
    def probes(self) -> Path:
        return self.root / "probes.jsonl"

    @property
    def facts(self) -> Path:
        """The fact table (kbake/synth/facts.py)."""
        return self.root / "facts.parquet"

    @property
    def synth_dir(self) -> Path:
        return self.root / "synth"

    @property
    def train_dir(self) -> Path:
        return self.root / "train"

    @property
    def eval_dir(self) -> Path:
        return self.root / "eval"

    def config_path(self, stage: str) -> Path:
        return self.root / "config" / f"{stage}.yaml"

    def ensure(self) -> RunDir:
        make_private_dir(self.root)
        return self


def make_private_dir(path: Path) -> Path:
    """Create a folder readable by its owner only: run folders hold confidential text."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.chmod(path, 0o700)
    except PermissionError:
        pass
    return path


# ---------------------------------------------------------------- atomic writes


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temp file in the same folder, fsync, then rename: readers never see half a file."""
    path = Path(path)
    make_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")


def atomic_write_jsonl(path: Path, rows: list[dict]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_jsonl(path: Path) -> list[dict]:
    """Read a JSONL file; a torn last line (a write killed mid-line) is skipped, not fatal."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not valid JSON ({e.msg})") from None
    return rows


# ---------------------------------------------------------------- chunks.parquet


def atomic_write_parquet(path: Path, table: pa.Table) -> None:
    """Write a Parquet file atomically (temp file in the same folder, fsync, rename)."""
    path = Path(path)
    make_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_chunks(path: Path, rows: list[dict]) -> None:
    atomic_write_parquet(path, pa.Table.from_pylist(rows, schema=CHUNK_SCHEMA))


class ChunkWriter:
    """Stream chunk rows into a temp Parquet file in row groups; `commit()` renames it over
    chunks.parquet, so readers see the old file or the whole new one, never a part."""

    def __init__(self, path: Path, row_group: int = 2048):
        self.path = Path(path)
        make_private_dir(self.path.parent)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        self.tmp = Path(tmp)
        self.writer = pq.ParquetWriter(str(self.tmp), CHUNK_SCHEMA)
        self.buffer: list[dict] = []
        self.row_group = row_group
        self.count = 0

    def add(self, row: dict) -> None:
        self.buffer.append(row)
        self.count += 1
        if len(self.buffer) >= self.row_group:
            self._flush()

    def _flush(self) -> None:
        if self.buffer:
            self.writer.write_table(pa.Table.from_pylist(self.buffer, schema=CHUNK_SCHEMA))
            self.buffer = []

    def commit(self) -> None:
        self._flush()
        self.writer.close()
        with open(self.tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        try:
            self.writer.close()
        except Exception:
            pass
        self.tmp.unlink(missing_ok=True)


def iter_chunks(path: Path, batch_size: int = 2048):
    """Chunk rows one at a time, without loading the whole table."""
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size):
        for row in batch.to_pylist():
            row.setdefault("as_of", "")
            row.setdefault("entity", "")
            yield row


def read_chunks(path: Path) -> list[dict]:
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no chunks yet; run `kbake ingest DOCS --run {Path(path).parent}` first")
    table = pq.read_table(path)
    for name in ("as_of", "entity"):  # runs ingested before documents were dated
        if name not in table.column_names:
            table = table.append_column(name, pa.array([""] * table.num_rows, pa.string()))
    return table.select(CHUNK_SCHEMA.names).cast(CHUNK_SCHEMA).to_pylist()


# ---------------------------------------------------------------- hashes


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, block: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for piece in iter(lambda: f.read(block), b""):
            h.update(piece)
    return h.hexdigest()


def config_hash(config: dict) -> str:
    """Stable hash of a resolved config: the same options give the same hash."""
    return sha256_bytes(json.dumps(config, sort_keys=True, default=str).encode())[:16]


# ---------------------------------------------------------------- manifest & provenance


def git_hash() -> str | None:
    """The git commit of the kbake source tree, when kbake runs from a checkout."""
    src = Path(kbake.__file__).resolve().parent.parent
    if not (src / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def provenance(config: dict, *, seed: int | None, model: str | None) -> dict:
    """What every output carries beside it, so any number traces back to how it was made."""
    return {
        "kbake_version": kbake.__version__,
        "git_hash": git_hash(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "seed": seed,
        "model": model,
        "config": config,
        "config_hash": config_hash(config),
    }


def load_manifest(run: RunDir) -> dict:
    if not run.manifest.exists():
        return {"manifest_version": MANIFEST_VERSION, "stages": {}}
    with open(run.manifest, encoding="utf-8") as f:
        return json.load(f)


def save_stage(run: RunDir, stage: str, entry: dict) -> None:
    """Record one stage's provenance and outputs in manifest.json (atomic)."""
    manifest = load_manifest(run)
    manifest.setdefault("stages", {})[stage] = entry
    atomic_write_json(run.manifest, manifest)



# ---------------------------------------------------------------- synth/<kind>.jsonl and probes.jsonl


@dataclass
class SynthItem:
    """One training item of `synth/<kind>.jsonl`. QA items carry question and answer; the
    continued-pretraining kinds (rephrase, entigraph) carry `text`. Every item records where
    it came from and how it was made."""

    id: str
    kind: str
    doc_id: str
    chunk_ids: list[str]
    generator: str
    prompt_version: str
    model: str
    text: str = ""
    question: str | None = None
    answer: str | None = None

    def training_text(self) -> str:
        """The text the item contributes: for QA the question and answer, else `text`."""
        if self.question is not None:
            return f"{self.question}\n{self.answer}"
        return self.text


@dataclass
class Probe:
    """One held-out probe of `probes.jsonl`: a multiple-choice question with a short reference.
    `evidence` is a quote of the passage that answers it (so retrieval recall can be checked
    whatever the chunking); `chunk_id` names the chunk it was generated from, when it was."""

    id: str
    question: str
    answer: str
    distractors: list[str]
    reference: str
    kind: str = "generated"
    passage_id: str = ""
    evidence: str = ""
    chunk_id: str = ""
    split: str = "test"
    """'dev' (choose recipes on these) or 'test' (the reported numbers); a file without the field is all test."""
    as_of: str = ""
    """An update probe: the date (YYYY-MM-DD) from which `answer` is true ('' for a timeless fact)."""
    stale: list = field(default_factory=list)
    """An update probe: earlier values, [{"as_of": "YYYY-MM-DD", "value": "..."}], each also among the distractors."""
    group: str = ""
    """The part of the document the probe asks about (fact probes: their table), for the report's knowledge map."""


SPLITS = ("dev", "test")


def write_items(path: Path, items: list) -> None:
    """JSONL (one record per line) plus a Parquet twin that `datasets`/pandas open directly."""
    from dataclasses import asdict

    rows = [asdict(i) if not isinstance(i, dict) else i for i in items]
    atomic_write_jsonl(path, rows)
    if rows:
        atomic_write_parquet(path.with_suffix(".parquet"), pa.Table.from_pylist(rows))


def read_items(path: Path) -> list[SynthItem]:
    return [SynthItem(**r) for r in read_jsonl(path)]


def read_probes(path: Path) -> list[Probe]:
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no probes; run `kbake probes --run {Path(path).parent}` (or copy a probes.jsonl there)")
    fields = set(Probe.__dataclass_fields__)
    probes = [Probe(**{k: v for k, v in r.items() if k in fields}) for r in read_jsonl(path)]
    for i, p in enumerate(probes, 1):
        if p.split not in SPLITS:
            raise ValueError(f"{path}: line {i} (probe {p.id}): split must be 'dev' or 'test', got {p.split!r}")
        for old in p.stale:
            if not isinstance(old, dict) or old.get("value") not in p.distractors:
                raise ValueError(f"{path}: line {i} (probe {p.id}): each stale entry must be "
                                 f'{{"as_of": "YYYY-MM-DD", "value": V}} with V among the distractors')
    return probes

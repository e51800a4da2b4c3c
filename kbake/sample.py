"""The shipped sample: a fictional company's 10-K and its hand-written probes."""

from __future__ import annotations

from pathlib import Path

SAMPLE_NAME = "corvane-10k"


def sample_dir() -> Path:
    """Folder of the shipped sample (inside the package, so an installed kbake has it)."""
    return Path(__file__).resolve().parent / "data" / "sample"


def sample_documents() -> list[Path]:
    return sorted(p for p in sample_dir().iterdir() if p.suffix in {".html", ".htm", ".md", ".txt", ".pdf"})


def sample_probes() -> Path:
    return sample_dir() / "probes.jsonl"


def general_dir() -> Path:
    """The general-knowledge set (Wikipedia paragraphs, HotpotQA questions) for forgetting and replay."""
    return Path(__file__).resolve().parent / "data" / "general"

"""The shipped data: a fictional company's 10-K with hand-written probes, and the general
set (Wikipedia paragraphs, HotpotQA questions) for replay and for measuring forgetting."""

from __future__ import annotations

import json
from pathlib import Path

SAMPLE_NAME = "corvane-10k"
# Paragraphs [0, REPLAY_END) may be replayed in training; the rest are only ever evaluated,
# so forgetting is never measured on text the model was trained on.
REPLAY_END = 500


def sample_dir() -> Path:
    """Folder of the shipped sample (inside the package, so an installed kbake has it)."""
    return Path(__file__).resolve().parent / "data" / "sample"


def sample_documents() -> list[Path]:
    return sorted(p for p in sample_dir().iterdir() if p.suffix in {".html", ".htm", ".md", ".txt", ".pdf"})


def sample_probes() -> Path:
    """The sample's hand-written probes: 68 `split: dev` paraphrased probes to choose recipes
    on, and 125 `split: test` probes (on other facts: 35 verbatim, 90 paraphrased) that every reported
    number is measured on. 48 of the paraphrased test probes were added on 2026-12-05 (ids corvane-t2-*),
    on facts no probe asked, so a gain of about 12 points can be told from noise."""
    return sample_dir() / "probes.jsonl"


def general_dir() -> Path:
    return Path(__file__).resolve().parent / "data" / "general"


def general_paragraphs(split: str) -> list[str]:
    """'replay' (may be trained on) or 'eval' (held out for forgetting) general paragraphs."""
    rows = [json.loads(l) for l in (general_dir() / "paragraphs.jsonl").open(encoding="utf-8")]
    texts = [r["text"] for r in rows]
    if split == "replay":
        return texts[:REPLAY_END]
    if split == "eval":
        return texts[REPLAY_END:]
    raise ValueError(f"split must be 'replay' or 'eval', got {split!r}")


def general_questions() -> list[dict]:
    """HotpotQA questions {id, question, answer, titles} for general short-answer F1."""
    return [json.loads(l) for l in (general_dir() / "questions.jsonl").open(encoding="utf-8")]

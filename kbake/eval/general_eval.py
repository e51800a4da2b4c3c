"""Forgetting where replay cannot hide it: four public multiple-choice sets (ARC-Easy, PIQA,
HellaSwag, SciQ) and perplexity on a public-domain novel, none of it Wikipedia prose (the
replay data). Scored with the probes' prefix-shared option scorer (`score.score_many`), or
as padded batches where every option is a few tokens (`score.score_batched`).

Format, chosen on the base model's accuracy (150 items per set, bf16; the chat template
with EOS-ended options scored 39/39/65% on ARC/SciQ/PIQA, this one 45/55/61%): a plain
"Question: …\\nAnswer:" prefix and each choice as its continuation, as lm-evaluation-harness
does; HellaSwag's context continued by each ending. The choice is the highest mean log-prob
per token, the rule the probes use.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from kbake.eval.score import choice_and_margin, score_choices_many

SETS = ("arc_easy", "piqa", "hellaswag", "sciq")
NOVEL = "pride_and_prejudice.txt"
# Novel passages start after the opening chapters (the most quoted text of the book) and
# are spread evenly over the rest, so the slice is fixed and not one scene.
NOVEL_SKIP_CHARS = 20_000
NOVEL_MIN_CHARS = 500


def general_eval_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "data" / "general-eval"


def load_set(name: str, n: int | None = None) -> list[dict]:
    """The first `n` items of a set (the files are already a fixed-seed sample)."""
    if name not in SETS:
        raise ValueError(f"unknown general-eval set {name!r}; known: {', '.join(SETS)}")
    path = general_eval_dir() / f"{name}.jsonl"
    rows = [json.loads(l) for l in path.open(encoding="utf-8") if l.strip()]
    return rows[:n] if n is not None else rows


def prompt_and_options(item: dict) -> tuple[str, list[str]]:
    if item["source"] == "hellaswag":
        return item["question"], [" " + c for c in item["choices"]]
    return f"Question: {item['question']}\nAnswer:", [" " + c for c in item["choices"]]


# Items whose options are all this short (ARC-Easy, SciQ) are scored as padded batches
# (`score.score_batched`: 1.5x and 2.3x faster on 40 items each, bf16, 2 cores); longer
# endings (PIQA, HellaSwag) pad too much and run faster one question at a time (0.9x).
SHORT_OPTION_TOKENS = 8


def score_items(model, tok, items: list[dict], progress=None) -> list[dict]:
    """Per item: {id, set, correct, margin}."""
    pairs = [prompt_and_options(it) for it in items]
    short = [max(len(tok(o, add_special_tokens=False)["input_ids"]) for o in opts) <= SHORT_OPTION_TOKENS
             for _, opts in pairs]
    scores: list = [None] * len(items)
    for batched in (True, False):
        idx = [i for i, s in enumerate(short) if s == batched]
        got = score_choices_many(model, tok, [pairs[i][0] for i in idx], [pairs[i][1] for i in idx], progress,
                                 eos=False, batched=batched)
        for i, sc in zip(idx, got):
            scores[i] = sc
    out = []
    for it, sc in zip(items, scores):
        best, margin = choice_and_margin(sc, it["answer"])
        out.append({"id": it["id"], "set": it["source"], "correct": best == it["answer"], "margin": round(margin, 5)})
    return out


@lru_cache(maxsize=1)
def _novel_paragraphs() -> tuple[str, ...]:
    text = (general_eval_dir() / NOVEL).read_text(encoding="utf-8")[NOVEL_SKIP_CHARS:]
    paras = [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text)]
    merged, cur = [], ""
    for p in paras:  # dialogue lines are short: join neighbours into passages of >= NOVEL_MIN_CHARS
        cur = f"{cur} {p}".strip() if cur else p
        if len(cur) >= NOVEL_MIN_CHARS:
            merged.append(cur)
            cur = ""
    return tuple(merged)


def novel_passages(n: int) -> list[str]:
    """`n` passages of the novel, evenly spaced through the book (the same ones every run)."""
    paras = _novel_paragraphs()
    if n >= len(paras):
        return list(paras)
    step = len(paras) / n
    return [paras[int(i * step)] for i in range(n)]

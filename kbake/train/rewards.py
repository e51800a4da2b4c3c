"""Verifiable rewards for GRPO: small functions of (completion, reference) -> float.

No judge model: each reward checks the answer against the reference answer of a
synthetic QA pair. Names are what the recipe's `grpo.rewards` maps to weights.
"""

from __future__ import annotations

import re

from kbake.answers import exact_match, normalize_answer, token_f1

_NUMBER = re.compile(
    r"(?P<cur>[$€£])?\s*(?P<num>\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)\s*(?P<pct>%|percent\b|per cent\b)?"
    r"(?:\s*(?P<scale>thousand|million|billion|trillion|bn|mn|k|m|b)\b)?",
    re.I,
)
_SCALE = {"thousand": 1e3, "k": 1e3, "million": 1e6, "mn": 1e6, "m": 1e6, "billion": 1e9, "bn": 1e9, "b": 1e9,
          "trillion": 1e12}


def parse_numbers(text: str) -> list[tuple[float, str]]:
    """Numbers with their kind ('%', '$', or '') and scale words applied: '$1.21 billion' -> (1.21e9, '$')."""
    out = []
    for m in _NUMBER.finditer(text):
        value = float(m.group("num").replace(",", ""))
        if m.group("scale"):
            value *= _SCALE[m.group("scale").lower()]
        kind = "%" if m.group("pct") else (m.group("cur") or "")
        out.append((value, kind))
    return out


def _same(a: tuple[float, str], b: tuple[float, str], rel_tol: float) -> bool:
    if a[1] and b[1] and a[1] != b[1]:
        return False  # 15% is not $15
    return abs(a[0] - b[0]) <= rel_tol * max(abs(b[0]), 1e-9)


def numeric_reward(completion: str, reference: str, rel_tol: float = 0.005) -> float:
    """1 when the answer states the reference's number (same value within rel_tol, unit
    kind compatible), divided by how many distinct numbers it states, so listing every
    number in the document earns almost nothing. 0 when the reference has no number."""
    ref = parse_numbers(reference)
    if not ref:
        return 0.0
    got = parse_numbers(completion)
    distinct: list[tuple[float, str]] = []
    for g in got:
        if not any(_same(g, d, 1e-9) for d in distinct):
            distinct.append(g)
    if not distinct:
        return 0.0
    hit = any(_same(g, ref[0], rel_tol) for g in distinct)
    return 1.0 / len(distinct) if hit else 0.0


def exact_match_reward(completion: str, reference: str) -> float:
    return exact_match(completion, reference)


def f1_reward(completion: str, reference: str) -> float:
    """Token F1: partial credit, and precision punishes padding the answer with extra words."""
    return token_f1(completion, reference)


def format_reward(completion: str, reference: str = "", max_words: int = 20) -> float:
    """1 for the asked shape: one short line (1 to max_words words) that does not echo a
    'Q:'/'Question:' prompt; 0 otherwise."""
    text = completion.strip()
    words = text.split()
    if not words or len(words) > max_words or "\n" in text:
        return 0.0
    if re.match(r"^(q|question)\s*[:.]", text, re.I):
        return 0.0
    return 1.0


def length_penalty(completion: str, reference: str, slack: float = 2.0) -> float:
    """0 up to `slack` × the reference's length in words, then down linearly to -1 at twice that."""
    n, limit = len(completion.split()), max(1.0, slack * len(reference.split()))
    if n <= limit:
        return 0.0
    return -min(1.0, (n - limit) / limit)


REWARDS = {
    "exact_match": exact_match_reward,
    "f1": f1_reward,
    "numeric": numeric_reward,
    "format": format_reward,
    "length": length_penalty,
}


def completion_text(c) -> str:
    """TRL passes conversational completions as [{'role': 'assistant', 'content': …}]."""
    if isinstance(c, list):
        return " ".join(m.get("content", "") for m in c if isinstance(m, dict))
    return str(c)


def trl_reward(name: str):
    """The reward `name` in TRL's signature: f(prompts, completions, reference, **kw) -> list[float],
    scored on the environment's `answers` field where it has one (the answer after a lookup),
    else on the completion."""
    fn = REWARDS[name]

    def reward(prompts, completions, reference, answers=None, **kwargs) -> list[float]:
        texts = answers if answers is not None else [completion_text(c) for c in completions]
        return [float(fn(t, r)) for t, r in zip(texts, reference)]

    reward.__name__ = f"{name}_reward"
    return reward


__all__ = ["REWARDS", "normalize_answer", "parse_numbers", "trl_reward"]

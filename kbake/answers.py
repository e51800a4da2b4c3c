"""Short-answer text metrics, shared by eval (short answers) and train (GRPO rewards): SQuAD's
answer normalisation, exact match and token F1 (Rajpurkar et al. 2016), with figures kept whole
(1,842.6 and 1842.6 match)."""

from __future__ import annotations

import re
import string
from collections import Counter


def normalize_answer(s: str) -> str:
    """Lower case, drop punctuation (keeping decimal points), articles and extra spaces; 1,842.6 -> 1842.6."""
    s = s.lower()
    s = re.sub(r"(?<=\d),(?=\d)", "", s)
    s = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", s)
    s = "".join(ch if ch not in set(string.punctuation) - {"."} else " " for ch in s)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def token_f1(prediction: str, reference: str) -> float:
    p, r = normalize_answer(prediction).split(), normalize_answer(reference).split()
    if not p or not r:
        return float(p == r)
    common = sum((Counter(p) & Counter(r)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(r)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, reference: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(reference))

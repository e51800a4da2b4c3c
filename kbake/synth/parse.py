"""Tolerant parsers for LLM answers. Small models drift from the asked format, and any
model may be cut off at max_tokens: take what is well-formed, never raise on garbage."""

from __future__ import annotations

import json
import re

_Q = re.compile(r"^\s*(?:\*\*)?(?:\d+[.)]\s*)?(?:Q(?:uestion)?\s*\d*)\s*[:.)-]\s*(?:\*\*)?\s*(.+)$", re.I)
_A = re.compile(r"^\s*(?:\*\*)?(?:\d+[.)]\s*)?(?:A(?:nswer)?\s*\d*)\s*[:.)-]\s*(?:\*\*)?\s*(.+)$", re.I)
_WRONG = re.compile(r"^\s*(?:\*\*)?(?:Wrong(?: answer)?|Distractor|Incorrect)\s*\d*\s*[:.)-]\s*(?:\*\*)?\s*(.+)$", re.I)
_NUMBERING = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def _clean(s: str) -> str:
    s = s.strip().strip("*").strip()
    s = _NUMBERING.sub("", s)
    return s.strip().strip('"').strip()


def _json_value(text: str):
    """The first JSON object or array embedded in `text`, or None."""
    pairs = sorted((("{", "}"), ("[", "]")), key=lambda oc: (text.find(oc[0]) == -1, text.find(oc[0])))
    for open_, close in pairs:
        a, b = text.find(open_), text.rfind(close)
        if a != -1 and b > a:
            try:
                return json.loads(text[a : b + 1], strict=False)  # a raw newline inside a string is still the answer
            except (json.JSONDecodeError, RecursionError, ValueError):
                continue
    return None


def parse_qa(text: str) -> list[tuple[str, str]]:
    """Question-answer pairs from 'Q: … / A: …' lines (or a JSON list of {question, answer})."""
    data = _json_value(text) if "{" in text else None
    if not isinstance(data, list) and text.lstrip().startswith("["):
        # A JSON list cut off at max_tokens: keep its complete objects.
        data = []
        for m in re.finditer(r"\{[^{}]*\}", text):
            try:
                data.append(json.loads(m.group(0), strict=False))
            except (json.JSONDecodeError, ValueError):
                continue
    if isinstance(data, list):
        pairs = [(str(d.get("question", "")), str(d.get("answer", ""))) for d in data if isinstance(d, dict)]
        pairs = [(_clean(q), _clean(a)) for q, a in pairs]
        return [(q, a) for q, a in pairs if q and a and q != a]
    pairs: list[tuple[str, str]] = []
    question: str | None = None
    for line in text.splitlines():
        mq, ma = _Q.match(line), _A.match(line)
        if mq and not ma:
            question = _clean(mq.group(1))
        elif ma and question:
            answer = _clean(ma.group(1))
            if answer and question and answer.lower() != question.lower() and len(answer.split()) <= 60:
                pairs.append((question, answer))
            question = None
    seen, out = set(), []
    for q, a in pairs:
        if q.lower() not in seen:
            seen.add(q.lower())
            out.append((q, a))
    return out


def parse_question(text: str) -> str | None:
    """The question of a `{"question": …}` answer (or the first line of free text), or None."""
    data = _json_value(text)
    q = data.get("question") if isinstance(data, dict) else text.strip().splitlines()[0] if text.strip() else None
    q = str(q or "").strip()
    return q or None


def parse_entities(text: str) -> tuple[str, list[str]]:
    """(summary, entities) from a JSON object {summary, entities}, or from a bulleted list."""
    data = _json_value(text)
    summary, raw = "", []
    if isinstance(data, dict):
        summary = str(data.get("summary", "") or "")
        ents = data.get("entities", [])
        raw = [str(e) for e in ents] if isinstance(ents, list) else []
    elif isinstance(data, list):
        raw = [str(e) for e in data if isinstance(e, (str, int, float))]
    elif '"entities"' in text:
        # JSON cut off at max_tokens (small models loop): keep the complete strings before the cut.
        m = re.search(r'"summary"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
        summary = m.group(1) if m else ""
        tail = text.split('"entities"', 1)[1]
        raw = re.findall(r'"((?:[^"\\]|\\.)*)"\s*[,\]]', tail)
    else:
        for line in text.splitlines():
            if _NUMBERING.match(line):
                raw.append(line)
    entities, seen = [], set()
    for e in raw:
        e = _clean(e.split(":")[0] if ":" in e and len(e) > 60 else e)
        if e and not e.startswith("<") and len(e.split()) <= 8 and len(e) <= 80 and e.lower() not in seen:
            seen.add(e.lower())
            entities.append(e)
    return summary.strip(), entities


def parse_probe(text: str) -> dict | None:
    """{question, answer, distractors} from 'Question:/Answer:/Wrong:' lines, or None."""
    question = answer = None
    wrong: list[str] = []
    for line in text.splitlines():
        mw, mq, ma = _WRONG.match(line), _Q.match(line), _A.match(line)
        if mw:
            wrong.append(_clean(mw.group(1)))
        elif mq and not ma and question is None:
            question = _clean(mq.group(1))
        elif ma and answer is None:
            answer = _clean(ma.group(1))
    if not question or not answer:
        return None
    distractors = []
    for w in wrong:
        if w and w.lower() != answer.lower() and w.lower() not in {d.lower() for d in distractors}:
            distractors.append(w)
    if len(distractors) < 3:
        return None
    return {"question": question, "answer": answer, "distractors": distractors[:3]}


def clean_passage(text: str, truncated: bool, min_words: int = 20) -> str | None:
    """A generated passage, cut back to its last full sentence when truncated; None if too short."""
    text = text.strip()
    if truncated:
        ends = list(_SENTENCE_END.finditer(text))
        text = text[: ends[-1].end()] if ends else ""
    if len(text.split()) < min_words:
        return None
    return text

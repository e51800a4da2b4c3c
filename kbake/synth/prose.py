"""Prose facts: the sentences of the documents that state a figure, a date or a name.

A table row states its facts in a form rules can read (`kbake/synth/facts.py`); prose does
not, but a sentence that carries a value is a fact a rule can keep whole: its evidence is the
sentence itself, its value a span found in it, so nothing here can be wrong about the
document. Each (sentence, value) is one row of the fact table (source 'prose'): the
attribute is the sentence with the value blanked out (a cloze), which is what its QA pair
asks. The restatements (`restate`) repeat the sentence with the entity named, first person
resolved ("we sell" -> "Corvane sells") and in shuffled paragraph orders: more exposures in
more contexts, the lever Allen-Zhu & Li 2023 ("Physics of Language Models 3.1") measure.
Sentences, not values, are split into qa/heldout, so a held-out sentence is never asked.
"""

from __future__ import annotations

import re

from kbake.synth.facts import Fact, seeded_share

SENTENCE_END = re.compile(r"(?<=[a-z0-9%)\]\"'][.!?])\s+(?=[A-Z\"(])")
MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
# Values a sentence states, most specific first; a span already taken is not matched again.
VALUES = [re.compile(p) for p in (
    r"\$\s?\d[\d,]*(?:\.\d+)?(?:\s(?:million|billion|thousand))?",          # money
    r"\b\d[\d,]*(?:\.\d+)?\s?%",                                              # percent
    rf"\b{MONTHS}\s+\d{{1,2}},\s+(?:19|20)\d\d\b",                             # date
    rf"\b{MONTHS}\s+(?:19|20)\d\d\b",                                         # month and year
    r"\b(?:19|20)\d\d\b",                                                     # year
    r"\b\d[\d,]*(?:\.\d+)?(?:\s(?:to|and)\s\d[\d,]*)?\s(?!(?:and|or|to|of|in|on|at|by|for|from|the|a|an|"
    r"with|was|were|is|are|per)\b)[a-z][a-z-]+",                             # count with its noun ('64 countries')
    r"(?<![.!?]\s)(?<!^)\b[A-Z][\w&'-]*[a-z][\w&'-]*(?:\s(?:of\s|and\s|&\s)?[A-Z][\w&.'-]+){1,4}",  # a name
)]
HEADING_MAX_WORDS = 12
PRESENT_IRREGULAR = {"are": "is", "have": "has", "do": "does", "were": "was"}
UNCHANGED_AFTER_WE = {"will", "would", "can", "could", "may", "might", "must", "should", "shall", "had", "did", "was",
                      # irregular past tenses: the third person is the same word
                      "spent", "paid", "repaid", "built", "sold", "made", "held", "kept", "took", "began", "bought",
                      "grew", "won", "led", "set", "put", "cut", "lost", "met", "brought", "gave", "got", "ran", "saw",
                      "wrote", "became", "left", "chose", "drew", "fell", "rose", "sent", "went", "told", "said",
                      "thought", "found", "sought", "struck", "understood", "withdrew", "undertook"}
ADVERBS = {"also", "currently", "generally", "usually", "typically", "now", "still", "often", "only", "further",
           "primarily", "not"}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_END.split(text) if s.strip()]


def prose_lines(chunks: list[dict]) -> list[tuple[dict, str, str]]:
    """(chunk, heading, paragraph) of every prose paragraph, each distinct one once per
    document (chunks overlap), in document order; table-row lines are not prose."""
    seen: set[tuple[str, str]] = set()
    out, heading = [], ""
    for c in sorted(chunks, key=lambda c: (c["doc_id"], c["start"])):
        for line in c["text"].split("\n"):
            line = line.strip()
            if not line or " — " in line:
                continue
            if len(line.split()) <= HEADING_MAX_WORDS and not line.endswith((".", ":", ";")):
                heading = line
                continue
            if (c["doc_id"], line) in seen:
                continue
            seen.add((c["doc_id"], line))
            out.append((c, heading, line))
    return out


def values_in(sentence: str, entity_words: set[str]) -> list[str]:
    """The value spans of a sentence (figures, dates, years, counts, names other than the entity's)."""
    taken: list[tuple[int, int]] = []
    found = []
    for pat in VALUES:
        for m in pat.finditer(sentence):
            a, b = m.span()
            span = m.group(0).strip(" ,.")
            if any(a < y and x < b for x, y in taken) or not span:
                continue
            if span.split()[0] in entity_words or span in {"Item", "Part", "PART"}:
                continue
            taken.append((a, b))
            found.append((a, span))
    return [s for _, s in sorted(found)]


def resolve_first_person(sentence: str, name: str) -> str:
    """'we sell' -> 'Corvane sells', 'our foundry' -> "Corvane's foundry", 'us' -> 'Corvane':
    the sentence read on its own names whom it is about. Verbs after 'we' take the third
    person by rule (an 's', or is/has/does/was); a sentence this gets wrong is rare and still
    states the same figure."""
    def we(m: re.Match) -> str:
        words = m.group(2).split()
        out = []
        for i, w in enumerate(words):
            lw = w.lower()
            if lw in ADVERBS and i < len(words) - 1:
                out.append(w)
                continue
            if lw in PRESENT_IRREGULAR:
                out.append(PRESENT_IRREGULAR[lw])
            elif lw in UNCHANGED_AFTER_WE or lw.endswith("ed"):
                out.append(w)
            elif re.search(r"(s|sh|ch|x|z)$", lw):
                out.append(w + "es")
            elif re.search(r"[^aeiou]y$", lw):
                out.append(w[:-1] + "ies")
            else:
                out.append(w + "s")
            out += words[i + 1:]
            break
        return f"{m.group(1)}{name} " + " ".join(out)

    s = re.sub(r"(^|(?<=[\s(\"]))[Ww]e ((?:\w+ ){0,1}\w+)", we, sentence)
    s = re.sub(r"\b[Oo]ur\b", f"{name}'s", s)
    first = s.find(name)
    if first >= 0:  # the entity named once; its later possessives read 'its'
        head, tail = s[:first + len(name)], s[first + len(name):]
        s = head + tail.replace(f"{name}'s", "its")
    s = re.sub(r"\bus\b", name, s)
    s = re.sub(r"\bthe Company\b", name, s)
    return s[:1].upper() + s[1:]


def prose_facts(chunks: list[dict], heldout_share: float, seed: int, start: int = 0) -> list[Fact]:
    """One fact per (sentence, value) of the prose; the seeded split is by sentence."""
    facts = []
    for i, (c, heading, para) in enumerate(prose_lines(chunks)):
        entity = c.get("entity") or ""
        entity_words = set(entity.replace(",", " ").split())
        for j, sent in enumerate(sentences(para)):
            vals = values_in(sent, entity_words)
            if not vals or len(sent.split()) < 5:
                continue
            split = "heldout" if seeded_share(f"{seed}|{c['doc_id'].rsplit('-', 1)[0]}|{sent}") < heldout_share else "qa"
            for v in dict.fromkeys(vals):
                facts.append(Fact(
                    fact_id=f"fact-{start + len(facts) + 1:05d}", entity=entity, attribute=sent.replace(v, "___", 1),
                    section="", column="", period=(c.get("as_of") or "")[:4], period_text="", value=v, unit="",
                    source="prose", doc_id=c["doc_id"], chunk_id=c["chunk_id"], row_id=f"{c['doc_id']}:sent-{i:04d}-{j:02d}",
                    row_index=i, evidence=sent, as_of=c.get("as_of") or "", table=heading or "(untitled)", split=split))
    return facts

"""The `changes` kind: what changed between consecutive documents of one entity.

For each entity with two or more dated documents (`as_of`, kbake/ingest/dates.py), table
rows are aligned by their line item (the rows kbake/ingest/tables.py writes: "label —
column: value; …"), and each row whose current figure changed becomes a passage and a
QA pair:

    Costco Wholesale Corporation: REVENUE: Net sales was $222,730 million for 52 Weeks Ended
    August 28, 2022, up from $192,052 million for 52 Weeks Ended August 29, 2021.

The diff is deterministic and the sentences are templates: no LLM writes this kind, so a
135M generator cannot get a figure wrong. (Prose facts that changed, e.g. a warehouse
count inside a sentence, are not found here; the QA and EntiGraph kinds cover them, per
document, with the date in their prompts.) The first column of a filing's table is its
current period, which is what is compared.
"""

from __future__ import annotations

import re
from collections import defaultdict

from kbake.run import SynthItem
from kbake.synth.kind import KindReport, SynthContext, SynthKind

PROMPT_VERSION = "changes.v1"
_ROW = re.compile(r"^(?P<label>[^\n—]{2,200}?) — (?P<head>[^:;\n]{1,120}): (?P<value>[^;\n]{1,60})(?:;|$)", re.M)
_NUM = re.compile(r"\(?-?\$?([\d,]+(?:\.\d+)?)\)?")


def current_rows(texts: list[str]) -> dict[str, tuple[str, str, str]]:
    """{label: (column header, value, chunk text)} of a document's table rows, first column
    (the current period), first occurrence of each label."""
    out: dict[str, tuple[str, str, str]] = {}
    for text in texts:
        for m in _ROW.finditer(text):
            out.setdefault(m.group("label").strip(), (m.group("head").strip(), m.group("value").strip(), text))
    return out


def _number(value: str) -> float | None:
    m = _NUM.search(value)
    if not m:
        return None
    x = float(m.group(1).replace(",", ""))
    return -x if value.strip().startswith("(") else x


def diff_documents(old_chunks: list[dict], new_chunks: list[dict]) -> list[dict]:
    """Rows whose current figure differs between an older and a newer document."""
    old = current_rows([c["text"] for c in old_chunks])
    new = current_rows([c["text"] for c in new_chunks])
    ids_old = {c["text"]: c["chunk_id"] for c in old_chunks}
    ids_new = {c["text"]: c["chunk_id"] for c in new_chunks}
    out = []
    for label, (head, value, text) in new.items():
        if label not in old:
            continue
        ohead, ovalue, otext = old[label]
        a, b = _number(ovalue), _number(value)
        if a is None or b is None or a == b or ohead == head:
            continue  # not a figure, unchanged, or the same period (a restated column)
        out.append({"label": label, "new": value, "new_head": head, "old": ovalue, "old_head": ohead,
                    "direction": "up" if b > a else "down", "chunk_ids": [ids_new[text], ids_old[otext]]})
    return out


def items(chunks_by_doc: dict[str, list[dict]]) -> list[tuple[SynthItem, str]]:
    """(item, grounding context) pairs for every consecutive pair of dated documents of each entity."""
    by_entity: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for doc, cs in chunks_by_doc.items():
        if cs and cs[0].get("as_of"):
            by_entity[cs[0].get("entity", "")].append((cs[0]["as_of"], doc))
    out: list[tuple[SynthItem, str]] = []
    for entity, dated in by_entity.items():
        dated.sort()
        for (_, old_doc), (_, new_doc) in zip(dated, dated[1:]):
            who = entity or "The company"
            for k, ch in enumerate(diff_documents(chunks_by_doc[old_doc], chunks_by_doc[new_doc])):
                ctx = "\n".join(c["text"] for c in chunks_by_doc[new_doc] + chunks_by_doc[old_doc]
                                if c["chunk_id"] in ch["chunk_ids"])
                common = dict(kind="changes", doc_id=new_doc, chunk_ids=ch["chunk_ids"], generator="changes/table-diff",
                              prompt_version=PROMPT_VERSION, model="none (deterministic)")
                text = (f"{who}: {ch['label']} was {ch['new']} for {ch['new_head']}, {ch['direction']} from {ch['old']} "
                        f"for {ch['old_head']}.")
                out.append((SynthItem(id=f"changes-{new_doc}-{k:04d}-t", text=text, **common), ctx))
                q = f"What is {who}'s latest figure for {ch['label']}?"
                a = f"{ch['new']} for {ch['new_head']}; it was {ch['old']} for {ch['old_head']}."
                out.append((SynthItem(id=f"changes-{new_doc}-{k:04d}-q", question=q, answer=a, **common), ctx))
    return out


def generate(ctx: SynthContext, rep: KindReport):
    """Deterministic: a diff of aligned table rows, no LLM call."""
    return items(ctx.by_doc), [], 0


KIND = SynthKind("changes", generate)

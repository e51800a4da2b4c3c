"""Knowledge augmentation from the fact table: restatements, row passages, fact QA and fact probes.

A fact seen in one phrasing is rarely answerable by question; seen in about five diverse
restatements it mostly is, and QA pairs for some facts teach the model to answer about the
others (Allen-Zhu & Li 2023, "Physics of Language Models 3.1": ~10% vs ~97%, "mixed
training"). Everything here is written from `kbake/synth/facts.py`'s rows by templates, so
it is correct by construction and costs no LLM call:
- `restate`: K restatements of every fact (templates × how the entity and the period are
  named), passages that state a row's facts in shuffled orders, and (fact_year_contrasts)
  statements pairing a fact with another period of its line item;
- `fact_qa`: QA pairs in several wordings for the facts of split 'qa' (never 'heldout'), and
  (fact_year_questions) questions that give the value and ask its period;
- fact probes: one multiple-choice question per fact, in wordings no training template
  uses, with distractors from the same line item's other periods and neighbouring rows.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict

from kbake.run import Probe, SynthItem
from kbake.synth import prose
from kbake.synth.facts import Fact, digits, phrase, short_name
from kbake.synth.kind import KindReport, SynthContext, SynthKind


def entity_names(f: Fact) -> list[str]:
    """The entity as the document prints it and as people name it ('Costco Wholesale
    Corporation', 'Costco'); the document name when ingest found no entity."""
    full = f.entity or f.doc_name
    short = short_name(full)
    return [full, short] if short != full else [full]


def period_names(f: Fact) -> list[str]:
    """The period as printed and as asked: 'fiscal 2022', 'fiscal year 2022', 'the 52 weeks
    ended August 28, 2022'; a balance-sheet date as 'the end of fiscal 2022' and the date itself."""
    out = [f"fiscal {f.period}", f"fiscal year {f.period}"]
    text = f.period_text
    if re.match(r"\d{2} Weeks Ended", text, re.I):
        out.append("the " + re.sub(r"Weeks Ended", "weeks ended", text, flags=re.I))
    elif text != f.period:
        out += [f"the end of fiscal {f.period}", text]
    return out


def _mid(name: str) -> str:
    """An attribute inside a sentence: 'Net sales' -> 'net sales'; names with other capitals
    ('SG&A expenses', 'Gold Star') as printed."""
    return name[0].lower() + name[1:] if name[:1].isupper() and not any(ch.isupper() for ch in name[1:]) else name


def render(template: str, f: Fact, entity: str, period: str) -> str:
    text = template.format(entity=entity, attribute=_mid(phrase(f)), period=period, value=f.value)
    return text[0].upper() + text[1:]


def variants(templates: list[str], f: Fact, n: int, rng: random.Random) -> list[tuple[str, str]]:
    """`n` distinct (template, rendered text) pairs for a fact: templates cycled, each with a
    random naming of the entity and the period, so wording and word order both vary."""
    order = list(templates)
    rng.shuffle(order)
    ents, pers = entity_names(f), period_names(f)
    out, seen = [], set()
    for k in range(n * 4):
        if len(out) == n:
            break
        t = order[k % len(order)]
        text = render(t, f, rng.choice(ents), rng.choice(pers))
        if text not in seen:
            seen.add(text)
            out.append((t, text))
    return out


def fact_id_of(item_id: str) -> str:
    """The fact a per-fact item names: its id is `KIND-FACT_ID-N` (`_item`; year questions end `-yN`)."""
    return item_id.split("-", 1)[1].rsplit("-", 1)[0]


def _item(kind: str, f: Fact, n: int, generator: str, text: str = "", question: str | None = None,
          answer: str | None = None, chunk_ids: list[str] | None = None) -> SynthItem:
    return SynthItem(id=f"{kind}-{f.fact_id}-{n}", kind=kind, doc_id=f.doc_id, chunk_ids=chunk_ids or [f.chunk_id],
                     generator=generator, prompt_version="templates-1", model="templates", text=text,
                     question=question, answer=answer)


def restatements(facts: list[Fact], k: int, templates: list[str], seed: int) -> list[SynthItem]:
    """K restatements of every table fact."""
    out = []
    for f in facts:
        if f.source != "table":
            continue
        rng = random.Random(f"{seed}|{f.fact_id}|restate")
        out += [_item("restate", f, n, "restate/template", text=text) for n, (_, text) in
                enumerate(variants(templates, f, k, rng))]
    return out


def _by_row(facts: list[Fact]) -> dict[str, list[Fact]]:
    """Table facts by row (line item), in the order given."""
    rows: dict[str, list[Fact]] = defaultdict(list)
    for f in facts:
        if f.source == "table":
            rows[f.row_id].append(f)
    return rows


def row_passages(facts: list[Fact], per_row: int, seed: int) -> list[SynthItem]:
    """Passages stating all facts of one table row, `per_row` times in shuffled orders and namings."""
    out = []
    for row_id, fs in _by_row(facts).items():
        rng = random.Random(f"{seed}|{fs[0].doc_name}|{fs[0].row_index}|row")
        ent = entity_names(fs[0])
        for n in range(per_row):
            order = list(fs)
            rng.shuffle(order)
            parts = [f"{rng.choice(period_names(f))}: {f.value}" for f in order]
            lead = rng.choice(["{entity}'s {attribute}, as reported", "{attribute} of {entity}",
                               "{entity} reported {attribute} as follows"])
            text = lead.format(entity=rng.choice(ent), attribute=_mid(phrase(fs[0]))) + " — " + "; ".join(parts) + "."
            out.append(_item("restate", fs[0], n, "restate/row", text=text[0].upper() + text[1:],
                             chunk_ids=sorted({f.chunk_id for f in fs})))
            out[-1].id = f"restate-{row_id}-row{n}"
    return out


def year_contrasts(facts: list[Fact], k: int, templates: list[str], seed: int) -> list[SynthItem]:
    """`k` statements per table fact that pair it with another period of the same line item, so
    the year and the value are learned side by side (a trained model otherwise picks another
    year's value of the right line item: docs/results.md, "Held out by row"). The other period
    cycles through the row's others; a row of one period gets none."""
    out = []
    for fs in _by_row(facts).values() if k else ():
        for f in fs:
            others = [g for g in fs if g.period != f.period and digits(g.value) != digits(f.value)]
            if not others:
                continue
            rng = random.Random(f"{seed}|{f.fact_id}|contrast")
            order = list(templates)
            rng.shuffle(order)
            rng.shuffle(others)
            for n in range(k):
                g = others[n % len(others)]
                text = order[n % len(order)].format(
                    entity=rng.choice(entity_names(f)), attribute=_mid(phrase(f)), period=rng.choice(period_names(f)),
                    value=f.value, other_period=rng.choice(period_names(g)), other_value=g.value)
                out.append(_item("restate", f, n, "restate/contrast", text=text[0].upper() + text[1:],
                                 chunk_ids=sorted({f.chunk_id, g.chunk_id})))
                out[-1].id = f"restate-{f.fact_id}-c{n}"
    return out


def year_questions(facts: list[Fact], k: int, templates: list[str], seed: int) -> list[SynthItem]:
    """`k` QA pairs per fact of split 'qa' that give the value and ask the period (answer
    'fiscal 2022'): the reverse direction of fact_qa, binding the value to its year. Never for
    held-out facts (their QA stays out of training in every direction), nor where the row has the
    same value in another period (the question would have two answers)."""
    out = []
    for fs in _by_row(facts).values() if k else ():
        for f in fs:
            if f.split != "qa" or any(g.period != f.period and digits(g.value) == digits(f.value) for g in fs):
                continue
            rng = random.Random(f"{seed}|{f.fact_id}|year")
            order = list(templates)
            rng.shuffle(order)
            for n in range(min(k, len(order))):
                q = order[n].format(entity=rng.choice(entity_names(f)), attribute=_mid(phrase(f)), value=f.value)
                out.append(_item("fact_qa", f, n, "fact_qa/year", question=q[0].upper() + q[1:],
                                 answer=period_names(f)[0]))
                out[-1].id = f"fact_qa-{f.fact_id}-y{n}"
    return out


def prose_restatements(facts: list[Fact], k: int, templates: list[str], per_paragraph: int,
                       seed: int) -> list[SynthItem]:
    """K restatements of every prose sentence that states a fact (entity named, first person
    resolved), and `per_paragraph` passages of each paragraph's sentences in shuffled orders."""
    sents: dict[str, Fact] = {}
    paras: dict[tuple[str, int], list[Fact]] = defaultdict(list)
    for f in facts:
        if f.source == "prose" and f.row_id not in sents:
            sents[f.row_id] = f
            paras[(f.doc_id, f.row_index)].append(f)
    out = []
    for row_id, f in sents.items():
        rng = random.Random(f"{seed}|{f.doc_name}|{f.evidence}|restate")
        order = list(templates)
        rng.shuffle(order)
        seen: set[str] = set()
        for t in (order * k)[: k * 2]:
            text = render_prose(t, f, rng.choice(entity_names(f)))
            if text in seen:
                continue
            seen.add(text)
            out.append(_item("restate", f, len(seen) - 1, "restate/prose", text=text))
            out[-1].id = f"restate-{row_id}-{len(seen) - 1}"
            if len(seen) == k:
                break
    for (doc_id, index), fs in paras.items():
        rng = random.Random(f"{seed}|{fs[0].doc_name}|{index}|paragraph")
        for n in range(per_paragraph if len(fs) > 1 else 0):
            order = list(fs)
            rng.shuffle(order)
            name = short_name(rng.choice(entity_names(fs[0])))
            text = " ".join(prose.resolve_first_person(g.evidence, name) for g in order)
            out.append(_item("restate", fs[0], n, "restate/paragraph", text=text,
                             chunk_ids=sorted({g.chunk_id for g in fs})))
            out[-1].id = f"restate-{doc_id}:para-{index:04d}-{n}"
    return out


def render_prose(template: str, f: Fact, entity: str, cloze: bool = False) -> str:
    """A prose template filled for one fact: the sentence resolved to name `entity` ({sentence}),
    or with the fact's value blanked ({cloze})."""
    resolved = prose.resolve_first_person(f.evidence, short_name(entity))
    text = template.format(sentence=resolved, original=f.evidence, entity=entity,
                           as_of=f.as_of or "its date", heading=f.table,
                           cloze=resolved.replace(f.value, "___", 1) if cloze else "")
    return text[0].upper() + text[1:]


def fact_qa(facts: list[Fact], wordings: int, templates: list[str], seed: int,
            prose_templates: list[str] = ()) -> list[SynthItem]:
    """QA pairs in `wordings` question forms for each fact of split 'qa'; the answer is the value
    (a prose fact is asked as its sentence with the value blanked: `prose_templates`)."""
    out = []
    for f in facts:
        if f.split != "qa":
            continue
        if f.source == "prose":
            rng = random.Random(f"{seed}|{f.doc_name}|{f.evidence}|{f.value}|qa")
            order = list(prose_templates)
            rng.shuffle(order)
            out += [_item("fact_qa", f, n, "fact_qa/prose", question=render_prose(t, f, rng.choice(entity_names(f)),
                                                                                   cloze=True), answer=f.value)
                    for n, t in enumerate(order[:wordings])]
            continue
        rng = random.Random(f"{seed}|{f.fact_id}|qa")
        out += [_item("fact_qa", f, n, "fact_qa/template", question=q, answer=f.value)
                for n, (_, q) in enumerate(variants(templates, f, wordings, rng))]
    return out


def _core(value: str) -> str:
    """The number of a value with its sign: '(158)' from '(158) million', '10.48' from '10.48%'."""
    m = re.search(r"\(?-?[\d,]*\d(?:\.\d+)?\)?", value)
    return m.group(0) if m else value


def like(value: str, answer: str) -> str:
    """A distractor's number in the answer's format ('$' and unit), so the choice rests on the number."""
    core = _core(value)
    head = "$" if answer.lstrip("(").startswith("$") or answer.startswith("$") else ""
    tail = answer[answer.find(_core(answer)) + len(_core(answer)):]
    return f"{head}{core}{tail}"


def distractors(f: Fact, by_row: dict[str, list[Fact]], by_period: dict[tuple, list[Fact]],
                n: int = 3) -> list[str] | None:
    """Three wrong values: the same line item in other periods first, then neighbouring rows
    of the same table in the same period (the year and row binding a model gets wrong)."""
    seen = {digits(f.value)}
    pool = [g for g in by_row[f.row_id] if g.period != f.period]
    near = sorted(by_period[(f.doc_id, f.period)], key=lambda g: (abs(g.row_index - f.row_index), g.row_index))
    pool += [g for g in near if g.row_id != f.row_id and g.unit == f.unit] + [g for g in near if g.row_id != f.row_id]
    out = []
    for g in pool:
        d = digits(g.value)
        if d in seen or not d:
            continue
        seen.add(d)
        out.append(like(g.value, f.value))
        if len(out) == n:
            return out
    return None


def fact_probes(facts: list[Fact], templates: list[str], training_templates: list[str], dev_share: float,
                seed: int) -> list[Probe]:
    """One probe per fact with enough distractors: kind 'fact_qa' (its QA was trained, asked in a
    new wording) or 'fact_heldout' (only restatements trained); whole rows go to dev or test."""
    clash = set(templates) & set(training_templates)
    if clash:
        raise ValueError(f"probe template {sorted(clash)[0]!r} is also a training template: probes must ask in new wordings")
    facts = [f for f in facts if f.source == "table"]  # prose facts are asked by the hand-written probes
    by_row: dict[str, list[Fact]] = defaultdict(list)
    by_period: dict[tuple, list[Fact]] = defaultdict(list)
    for f in facts:
        by_row[f.row_id].append(f)
        by_period[(f.doc_id, f.period)].append(f)
    rows = sorted(by_row)
    random.Random(f"{seed}|rows").shuffle(rows)
    dev_rows = set(rows[: round(dev_share * len(rows))])
    out = []
    for f in facts:
        rng = random.Random(f"{seed}|{f.fact_id}|probe")
        wrong = distractors(f, by_row, by_period)
        if wrong is None:
            continue
        question = render(rng.choice(templates), f, rng.choice(entity_names(f)), rng.choice(period_names(f)))
        out.append(Probe(id=f"{f.fact_id}", question=question, answer=f.value, distractors=wrong, reference=f.value,
                         kind=f"fact_{f.split}", passage_id=f.row_id, evidence=f.evidence, chunk_id=f.chunk_id, group=f.table,
                         split="dev" if f.row_id in dev_rows else "test"))
    return out


def generate_restate(ctx: SynthContext, rep: KindReport):
    facts, a = ctx.facts(), ctx.args
    made = restatements(facts, a.fact_restatements, a.fact_statement_templates, ctx.seed) + \
        row_passages(facts, a.fact_row_passages, ctx.seed) + \
        year_contrasts(facts, a.fact_year_contrasts, a.fact_contrast_templates, ctx.seed) + \
        prose_restatements(facts, a.fact_restatements, a.prose_statement_templates, a.fact_row_passages, ctx.seed)
    return [(it, "") for it in made], [], 0


def generate_fact_qa(ctx: SynthContext, rep: KindReport):
    facts, a = ctx.facts(), ctx.args
    made = fact_qa(facts, a.fact_qa_wordings, a.fact_question_templates, ctx.seed, a.prose_question_templates) + \
        year_questions(facts, a.fact_year_questions, a.fact_year_question_templates, ctx.seed)
    return [(it, "") for it in made], [], 0


RESTATE = SynthKind("restate", generate_restate, templated=True, reads_facts=True)
FACT_QA = SynthKind("fact_qa", generate_fact_qa, templated=True, reads_facts=True)

"""Prose facts: sentences that state a figure, a date or a name become fact rows, restatements
and fill-in-the-blank QA, all from the sentence itself (no LLM)."""

from __future__ import annotations

from pathlib import Path

from kbake.config import SynthArgs
from kbake.ingest.dates import entity_of
from kbake.synth.augment import fact_id_of, fact_probes, fact_qa, prose_restatements
from kbake.synth.prose import prose_facts, resolve_first_person, values_in

PARA = ("Gunnar Corvane founded the business in 1971 in Bellingham, Washington. Today we sell in 64 countries "
        "and reported revenue of $1,842.6 million in fiscal 2025, an increase of 9.4%. We spent $96.4 million on "
        "research. Our auditor, Pennock & Thale LLP, issued an unqualified opinion. This sentence states nothing.")


def chunk(text: str, cid: str = "c1", start: int = 0) -> dict:
    return {"chunk_id": cid, "doc_id": "corvane-10k-ab12", "source": "x.html", "start": start, "end": start + len(text),
            "text": text, "as_of": "2025-09-27", "entity": "Corvane Hydrosystems, Inc."}


def test_values_are_figures_dates_counts_and_names_not_the_entity():
    vals = values_in("Today we sell in 64 countries and reported revenue of $1,842.6 million in fiscal 2025, "
                     "up 9.4%; Corvane Hydrosystems acquired Saltmere Technologies Ltd. on March 3, 2025.",
                     {"Corvane", "Hydrosystems,", "Inc."})
    assert vals == ["64 countries", "$1,842.6 million", "2025", "9.4%", "Saltmere Technologies Ltd", "March 3, 2025"]


def test_first_person_is_resolved_in_the_third_person():
    assert resolve_first_person("Today we sell in 64 countries.", "Corvane") == "Today Corvane sells in 64 countries."
    assert resolve_first_person("We spent $96.4 million.", "Corvane") == "Corvane spent $96.4 million."
    assert resolve_first_person("We also have a facility.", "Corvane") == "Corvane also has a facility."
    assert resolve_first_person("We believe our plants are adequate.", "Corvane") == \
        "Corvane believes its plants are adequate."
    assert resolve_first_person("Our auditor issued an opinion.", "Corvane") == "Corvane's auditor issued an opinion."


def test_prose_facts_keep_the_sentence_and_split_by_sentence():
    text = "Overview\n\n" + PARA + "\n\nREVENUE: Net sales — Fiscal 2025: $1,842.6 million"
    facts = prose_facts([chunk(text), chunk(text, "c2", 10)], 0.5, seed=0)  # overlapping chunks count once
    assert {f.source for f in facts} == {"prose"} and all(f.value in f.evidence for f in facts)
    assert all(f.attribute == f.evidence.replace(f.value, "___", 1) for f in facts)
    assert {f.table for f in facts} == {"Overview"}
    assert not any("states nothing" in f.evidence or " — " in f.evidence for f in facts)
    assert len({f.evidence for f in facts}) == 4 and len(facts) == len({(f.evidence, f.value) for f in facts})
    for s in {f.evidence for f in facts}:
        assert len({f.split for f in facts if f.evidence == s}) == 1
    assert facts == prose_facts([chunk(text), chunk(text, "c2", 10)], 0.5, seed=0)


def test_restatements_name_the_entity_and_qa_blanks_the_value_of_qa_sentences_only():
    args = SynthArgs(fact_prose=True)
    facts = prose_facts([chunk(PARA)], 0.5, seed=3)
    restated = prose_restatements(facts, 4, args.prose_statement_templates, 2, seed=0)
    sentences = {f.evidence for f in facts}
    per = [it for it in restated if it.generator == "restate/prose"]
    assert len(per) == 4 * len(sentences)
    assert all("Corvane" in it.text for it in per)
    assert any("Corvane sells in 64 countries" in it.text for it in per)
    paras = [it for it in restated if it.generator == "restate/paragraph"]
    assert len(paras) == 2 and all("Corvane sells in 64 countries" in p.text and "1971" in p.text for p in paras)
    qa = fact_qa(facts, 2, args.fact_question_templates, 0, args.prose_question_templates)
    by_id = {f.fact_id: f for f in facts}
    asked = [by_id[fact_id_of(it.id)] for it in qa]
    assert {f.split for f in facts} == {"qa", "heldout"} and {f.split for f in asked} == {"qa"}
    assert len(qa) == 2 * sum(f.split == "qa" for f in facts)
    assert all("___" in it.question and it.answer == f.value for it, f in zip(qa, asked))
    assert fact_probes(facts, ["What about {attribute} of {entity} in {period}?"], [], 0.5, 0) == []


def test_entity_from_a_cover_without_a_registrant_line():
    assert entity_of(Path("corvane-10k-fy2025.html"), "CORVANE HYDROSYSTEMS, INC.\n\nAnnual Report. Corvane "
                     "Hydrosystems, Inc. is a Delaware corporation.") == "Corvane Hydrosystems, Inc."
    assert entity_of(Path("notes-2025.md"), "Some notes about water.") == "notes"

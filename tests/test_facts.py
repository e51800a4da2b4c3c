"""The fact layer: the fact table from table rows, restatements, fact QA and fact probes (no LLM)."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from kbake.config import FACT_PROBE_TEMPLATES, FACT_QUESTION_TEMPLATES, IngestArgs, ProbesArgs, SynthArgs
from kbake.ingest import ingest
from kbake.run import RunDir, read_items, read_probes
from kbake.synth import corpus_stats, make_fact_probes, synth
from kbake.synth.augment import (
    fact_id_of,
    fact_probes,
    fact_qa,
    like,
    period_names,
    restatements,
    row_passages,
    year_contrasts,
    year_questions,
)
from kbake.synth.facts import assign_split, build_facts, phrase, row_facts, short_name

ROWS = [
    "(amounts in millions)",
    "REVENUE: Net sales — 52 Weeks Ended August 28, 2022: $222,730 million; 52 Weeks Ended August 29, 2021: "
    "$192,052 million; 52 Weeks Ended August 30, 2020: $163,220 million",
    "REVENUE: Membership fees — 52 Weeks Ended August 28, 2022: 4,224 million; 52 Weeks Ended August 29, 2021: "
    "3,877 million; 52 Weeks Ended August 30, 2020: 3,541 million",
    "Total employees — Number of Employees 2022: 304,000; Number of Employees 2021: 288,000",
    "Gross margin percentage — 2022: 10.48%; 2021: 11.13%; 2020: 11.20%",
    "Total — 2022: $1,925; 2021: $1,601",
    "May 9—June 5, — 2022 million; Total Number of Average Price Paid: 98,000 million",
]


def chunk(text: str, cid: str = "c1", start: int = 0) -> dict:
    return {"chunk_id": cid, "doc_id": "acme-10k", "source": "acme-10k.pdf", "start": start, "end": start + len(text),
            "text": text, "as_of": "2022-08-28", "entity": "Acme Wholesale Corporation"}


def test_a_row_line_gives_one_fact_per_dated_column():
    fs = row_facts(chunk(ROWS[1]), ROWS[1], 0)
    assert [(f.attribute, f.section, f.period, f.period_text, f.value, f.unit) for f in fs] == [
        ("Net sales", "REVENUE", "2022", "52 Weeks Ended August 28, 2022", "$222,730 million", "$ million"),
        ("Net sales", "REVENUE", "2021", "52 Weeks Ended August 29, 2021", "$192,052 million", "$ million"),
        ("Net sales", "REVENUE", "2020", "52 Weeks Ended August 30, 2020", "$163,220 million", "$ million")]
    assert all(f.entity == "Acme Wholesale Corporation" and f.evidence == ROWS[1] and f.source == "table" for f in fs)
    emp = row_facts(chunk(ROWS[3]), ROWS[3], 1)
    assert [(f.column, f.period, f.value) for f in emp] == [("Number of Employees", "2022", "304,000"),
                                                            ("Number of Employees", "2021", "288,000")]
    assert phrase(emp[0]) == "Total employees (number of employees)"


def test_unclear_rows_give_no_facts_and_overlapping_chunks_count_once():
    text = "\n".join(ROWS)
    facts = build_facts([chunk(text, "c1", 0), chunk(text, "c2", 10)], heldout_share=0.4, seed=0)
    attrs = {f.attribute for f in facts}
    assert attrs == {"Net sales", "Membership fees", "Total employees", "Gross margin percentage"}  # not 'Total', not the garbled row
    assert len(facts) == 3 + 3 + 2 + 3
    assert len({f.fact_id for f in facts}) == len(facts) and {f.chunk_id for f in facts} == {"c1"}
    assert pd.DataFrame([f.__dict__ for f in facts]).groupby("attribute").size()["Net sales"] == 3


def test_split_is_seeded_and_a_figure_shares_its_split_across_tables():
    text = "\n".join(ROWS[:5] + ["Net Sales — 2022: $222,730; 2021: $192,052; 2020: $163,220"])
    a = build_facts([chunk(text)], 0.5, seed=0)
    b = build_facts([chunk(text)], 0.5, seed=0)
    assert [f.split for f in a] == [f.split for f in b]
    assert {f.split for f in a} == {"qa", "heldout"}
    by = {}
    for f in a:
        by.setdefault((f.period, f.value.replace(" million", "")), set()).add(f.split)
    assert all(len(s) == 1 for s in by.values())  # '$222,730 million' (income statement) and '$222,730' (MD&A)
    assert len({tuple(f.split for f in build_facts([chunk(text)], 0.5, seed=s)) for s in range(6)}) > 1  # the seed matters
    assign_split(a, 0.0, 0)
    assert {f.split for f in a} == {"qa"}


def test_split_by_row_holds_out_whole_line_items_and_a_shared_figure_stays_qa():
    rows = [f"Line item {i} — 2022: {1000 + 10 * i}; 2021: {2000 + 10 * i}; 2020: {3000 + 10 * i}" for i in range(40)]
    text = "\n".join(rows + ["Copy of item 0 — 2022: 1000; 2021: 9999"])
    facts = build_facts([chunk(text)], 0.4, seed=0, heldout_unit="row")
    by_row: dict[str, set] = {}
    for f in facts:
        by_row.setdefault(f.row_id, set()).add(f.split)
    shared = [f for f in facts if f.value == "1000"]
    assert all(len(s) == 1 for r, s in by_row.items() if r not in {f.row_id for f in shared})  # line items whole
    assert 0.2 < sum(s == {"heldout"} for s in by_row.values()) / len(by_row) < 0.6
    assert len({f.split for f in shared}) == 1  # one figure in two rows: one split
    if by_row[shared[0].row_id] == {"qa"}:
        assert shared[1].split == "qa"
    assert [f.split for f in facts] == [f.split for f in build_facts([chunk(text)], 0.4, seed=0, heldout_unit="row")]
    fact_wise = build_facts([chunk(text)], 0.4, seed=0)
    assert any(len({f.split for f in fact_wise if f.row_id == r}) > 1 for r in by_row)  # per fact, rows are mixed

def test_names_as_printed_and_as_asked():
    assert short_name("Costco Wholesale Corporation") == "Costco"
    assert short_name("Corvane Hydrosystems, Inc.") == "Corvane"
    f = row_facts(chunk(ROWS[1]), ROWS[1], 0)[0]
    assert period_names(f) == ["fiscal 2022", "fiscal year 2022", "the 52 weeks ended August 28, 2022"]


def test_restatements_state_the_value_with_varied_wording():
    facts = build_facts([chunk("\n".join(ROWS))], 0.4, seed=0)
    items = restatements(facts, 5, SynthArgs().fact_statement_templates, seed=0)
    assert len(items) == 5 * len(facts)
    for f in facts:
        texts = [it.text for it in items if it.id.startswith(f"restate-{f.fact_id}-")]
        assert len(set(texts)) == 5 and all(f.value in t for t in texts)
        assert any("Acme Wholesale Corporation" in t for t in texts) or any("Acme " in t for t in texts)
    rows = row_passages(facts, 2, seed=0)
    assert len(rows) == 2 * len({f.row_id for f in facts})
    net = [r.text for r in rows if "$222,730 million" in r.text]
    assert len(net) == 2 and all("$192,052 million" in t and "$163,220 million" in t for t in net)


def test_fact_qa_covers_only_the_qa_split():
    facts = build_facts([chunk("\n".join(ROWS))], 0.4, seed=0)
    qa = fact_qa(facts, 3, SynthArgs().fact_question_templates, seed=0)
    held = {f.fact_id for f in facts if f.split == "heldout"}
    assert held and all(it.id.split("-")[1] + "-" + it.id.split("-")[2] not in held for it in qa)
    assert len(qa) == 3 * sum(f.split == "qa" for f in facts)
    assert all(it.answer in {f.value for f in facts} and it.question.endswith(("?", ".")) for it in qa)


def test_year_contrasts_pair_a_fact_with_another_period_of_its_row():
    facts = build_facts([chunk("\n".join(ROWS))], 0.4, seed=0)
    args = SynthArgs()
    assert year_contrasts(facts, 0, args.fact_contrast_templates, seed=0) == []
    items = year_contrasts(facts, 2, args.fact_contrast_templates, seed=0)
    by_row = {}
    for f in facts:
        by_row.setdefault(f.row_id, []).append(f)
    multi = [f for fs in by_row.values() if len(fs) > 1 for f in fs]
    assert len(items) == 2 * len(multi)  # every fact of a row with two or more periods, none of a one-period row
    net22 = next(f for f in facts if f.value == "$222,730 million")
    texts = [it.text for it in items if it.id.startswith(f"restate-{net22.fact_id}-c")]
    assert len(texts) == 2
    for t in texts:  # the fact's value with its own year, and another year's value of the same line item
        assert "$222,730 million" in t and ("2022" in t or "August 28" in t)
        assert "$192,052 million" in t or "$163,220 million" in t
        assert "Membership" not in t and "4,224" not in t
    assert items == year_contrasts(facts, 2, args.fact_contrast_templates, seed=0)  # seeded


def test_year_questions_ask_a_qa_facts_period_and_never_a_held_out_one():
    facts = build_facts([chunk("\n".join(ROWS))], 0.4, seed=0)
    args = SynthArgs()
    items = year_questions(facts, 2, args.fact_year_question_templates, seed=0)
    qa = {f.fact_id: f for f in facts if f.split == "qa"}
    assert items and all(it.id.rsplit("-", 1)[0].removeprefix("fact_qa-") in qa for it in items)
    for it in items:
        f = qa[it.id.rsplit("-", 1)[0].removeprefix("fact_qa-")]
        assert fact_id_of(it.id) == f.fact_id  # what the benchmarks use to find an item's fact
        assert f.value in it.question and it.answer == f"fiscal {f.period}" and it.question.endswith("?")
    # a value that repeats across a row's periods has two answers: no question
    same = build_facts([chunk("Stores — 2022: 838; 2021: 838; 2020: 795")], 0.0, seed=0)
    asked = {it.question for it in year_questions(same, 3, args.fact_year_question_templates, seed=0)}
    assert asked and all("795" in q for q in asked)


def test_probe_wordings_are_never_training_wordings():
    assert not set(FACT_PROBE_TEMPLATES) & set(FACT_QUESTION_TEMPLATES)
    assert not set(ProbesArgs().fact_templates) & set(SynthArgs().fact_question_templates)
    facts = build_facts([chunk("\n".join(ROWS))], 0.4, seed=0)
    with pytest.raises(ValueError, match="also a training template"):
        fact_probes(facts, [FACT_QUESTION_TEMPLATES[0]], FACT_QUESTION_TEMPLATES, 0.5, 0)


def test_fact_probes_bind_year_and_row():
    facts = build_facts([chunk("\n".join(ROWS))], 0.4, seed=0)
    probes = fact_probes(facts, FACT_PROBE_TEMPLATES, FACT_QUESTION_TEMPLATES, 0.5, 0)
    assert probes and {p.kind for p in probes} <= {"fact_qa", "fact_heldout"}
    net22 = next(p for p in probes if p.answer == "$222,730 million")
    # the same line item's other years first, then the neighbouring row, in the answer's format
    assert net22.distractors == ["$192,052 million", "$163,220 million", "$4,224 million"]
    for p in probes:
        assert p.answer not in p.distractors and len(set(p.distractors)) == 3
    by_row = {}
    for p in probes:
        by_row.setdefault(p.passage_id, set()).add(p.split)
    assert all(len(s) == 1 for s in by_row.values())  # whole rows go to dev or test
    assert like("(158) million", "$205 million") == "$(158) million" and like("$12", "7%") == "12%"


def test_synth_and_probes_from_an_ingested_filing(tmp_path, tiny_model, embedder_default):
    """An HTML filing end to end: facts.parquet opens in pandas, restate and fact_qa are written
    without an LLM call, --stats counts the facts, fact probes join hand-written ones."""
    doc = tmp_path / "acme-2025.html"
    doc.write_text("<p>Annual Report on Form 10-K for the fiscal year ended September 27, 2025</p>"
                   "<p>Acme Pumps Inc. (Exact name of registrant as specified in its charter)</p>"
                   "<table><tr><td>(in millions)</td><td>Fiscal 2025</td><td>Fiscal 2024</td><td>Fiscal 2023</td></tr>"
                   "<tr><td>Revenue</td><td>$1,842.6</td><td>$1,642.8</td><td>$1,500.0</td></tr>"
                   "<tr><td>License fees</td><td>88.0</td><td>80.0</td><td>71.5</td></tr>"
                   "<tr><td>Service revenue</td><td>310.2</td><td>290.4</td><td>250.9</td></tr></table>")
    rd = RunDir.at(tmp_path / "run")
    ingest([str(doc)], rd, IngestArgs(tokenizer=tiny_model), progress=False)
    rd.probes.write_text(json.dumps({"id": "hand-1", "question": "What was Acme's revenue in fiscal 2025?",
                                     "answer": "$1,842.6 million", "distractors": ["a", "b", "c"],
                                     "reference": "$1,842.6 million", "kind": "paraphrase"}) + "\n")
    args = SynthArgs(llm=f"local:{tiny_model}", kinds=["restate", "fact_qa"], fact_heldout_share=0.4)
    report = synth(rd, args, progress=False, embedder=embedder_default)
    assert report.calls == 0
    facts = pd.read_parquet(rd.facts)
    assert len(facts) == 9 and set(facts["period"]) == {"2025", "2024", "2023"}
    assert set(facts["value"]) >= {"$1,842.6 million", "88.0 million"}
    restate = read_items(rd.synth_dir / "restate.jsonl")
    qa = read_items(rd.synth_dir / "fact_qa.jsonl")
    # the hand-written probe's wording is not trained (leak filter), the rest is
    assert all("What was Acme's revenue in fiscal 2025?" != it.question for it in qa)
    assert len(restate) >= 9 * 5 - 3 and qa
    # statements restate the document (as the raw text does): the probe's fact keeps all its restatements
    assert report.kinds["restate"].removed["leak"] == 0
    assert sum("$1,842.6 million" in it.text for it in restate) >= 5
    counts = make_fact_probes(rd, ProbesArgs(), args, seed=0)
    probes = read_probes(rd.probes)
    assert probes[0].id == "hand-1" and sum(counts.values()) == len(probes) - 1
    trained = {it.question for it in qa}
    assert not any(p.question in trained for p in probes)
    make_fact_probes(rd, ProbesArgs(), args, seed=0)  # again: replaces its own probes, keeps the hand-written one
    assert len(read_probes(rd.probes)) == len(probes)
    from kbake.models import load_tokenizer

    st = corpus_stats(rd, load_tokenizer(tiny_model))
    assert st["facts"]["n"] == 9 and st["facts"]["by_source"] == {"table": 9}
    assert st["facts"]["expansion_ratio"] > 5


def test_the_same_filing_in_another_folder_gives_the_same_splits_and_texts(tmp_path, tiny_model, embedder_default):
    """A run must not depend on where its documents lie: doc ids hash the path, so the seeds use
    the document's name (CI's failed run of the tiny-model test had a split drawn from its tmp path)."""
    rows = "".join(f"<tr><td>Line {i}</td><td>{100 + i}.0</td><td>{90 + i}.0</td></tr>" for i in range(12))
    html = ("<p>Annual Report on Form 10-K for the fiscal year ended September 27, 2025</p>"
            "<table><tr><td>(in millions)</td><td>Fiscal 2025</td><td>Fiscal 2024</td></tr>" + rows + "</table>")
    outputs = []
    for where in ("a", "b/c"):
        doc = tmp_path / where / "acme-2025.html"
        doc.parent.mkdir(parents=True)
        doc.write_text(html)
        rd = RunDir.at(tmp_path / where / "run")
        ingest([str(doc)], rd, IngestArgs(tokenizer=tiny_model), progress=False)
        args = SynthArgs(llm=f"local:{tiny_model}", kinds=["restate", "fact_qa"])
        synth(rd, args, progress=False, embedder=embedder_default)
        make_fact_probes(rd, ProbesArgs(), args, seed=0)
        facts = pd.read_parquet(rd.facts)
        outputs.append((list(facts["split"]), [it.text for it in read_items(rd.synth_dir / "restate.jsonl")],
                        [(p.question, p.split, p.distractors) for p in read_probes(rd.probes)]))
    assert outputs[0] == outputs[1]
    assert set(outputs[0][0]) == {"qa", "heldout"}


def test_cli_probes_facts_needs_the_fact_table(tmp_path, tiny_model):
    rd = RunDir.at(tmp_path / "run")
    ingest([str(tmp_path / "x.txt")] if (tmp_path / "x.txt").write_text("Plain prose. " * 20) else [], rd,
           IngestArgs(tokenizer=tiny_model), progress=False)
    out = subprocess.run([sys.executable, "-m", "kbake.cli", "probes", "--run", str(rd.root), "--facts"],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "facts.parquet: no fact table" in out.stderr + out.stdout


@pytest.fixture(scope="module")
def embedder_default():
    from kbake.models import load_embedder

    return load_embedder("default")


def acme_filing_run(tmp_path, tiny_model, embedder, rows: list[tuple], restatements: int) -> tuple[RunDir, SynthArgs]:
    """A run of a one-table HTML 10-K (Acme Pumps Inc., fiscal years from 2025 down, one per number
    of `rows`), ingested, its fact corpus (restate + fact_qa) written and its fact probes made."""
    years = range(2025, 2025 - (len(rows[0]) - 1), -1)
    body = "".join("<tr><td>" + name + "</td>" + "".join(f"<td>{v:,}.0</td>" for v in values) + "</tr>"
                   for name, *values in rows)
    doc = tmp_path / "acme-2025.html"
    doc.write_text("<p>Annual Report on Form 10-K for the fiscal year ended September 27, 2025</p>"
                   "<p>Acme Pumps Inc. (Exact name of registrant as specified in its charter)</p>"
                   "<table><tr><td>(in millions)</td>" + "".join(f"<td>Fiscal {y}</td>" for y in years) + "</tr>"
                   f"{body}</table>")
    rd = RunDir.at(tmp_path / "run")
    ingest([str(doc)], rd, IngestArgs(tokenizer=tiny_model), progress=False)
    sargs = SynthArgs(llm=f"local:{tiny_model}", kinds=["restate", "fact_qa"], fact_restatements=restatements)
    synth(rd, sargs, progress=False, embedder=embedder)
    make_fact_probes(rd, ProbesArgs(dev_share=0.3), sargs, seed=0)
    return rd, sargs


def test_tiny_model_bakes_the_fact_table_and_the_report_maps_it(tmp_path, tiny_model, embedder_default):
    """End to end on the tiny model: a filing's table -> facts -> restate + fact_qa -> full
    fine-tuning -> eval. Fact probes are the headline kind; the QA-trained facts' margin rises
    (the tiny model cannot be asked for more), per-kind rows and the knowledge map render."""
    from kbake.config import EvalArgs, Recipe
    from kbake.eval import evaluate
    from kbake.train import train

    rd, sargs = acme_filing_run(tmp_path, tiny_model, embedder_default, [
        ("Revenue", 1842, 1642, 1500), ("License fees", 88, 80, 71), ("Service revenue", 310, 290, 250),
        ("Operating income", 402, 377, 351), ("Net income", 298, 270, 244), ("Research costs", 61, 57, 49)], restatements=3)
    probes = read_probes(rd.probes)
    assert {p.kind for p in probes} == {"fact_qa", "fact_heldout"} and {p.split for p in probes} == {"dev", "test"}
    recipe = Recipe(seed=0, train=dict(method="full", base_model=tiny_model, data=["restate", "fact_qa"], block_size=64,
                                       batch_size=4, epochs=20, lr=1e-2, warmup_ratio=0.0, eval_every=1000,
                                       save_every=1000, snapshot_every=180, replay_ratio=0.0, precision="bf16"),
                    eval=EvalArgs(base_model=tiny_model, general_paragraphs=2, general_questions=0, novel_passages=2,
                                  general_eval_items=2, general_eval_sets=["arc_easy"], short_answers=False, batch_size=8))
    # bf16 pinned: the margin rise below was measured in bf16; `auto` picks fp32 on a CPU without
    # native bf16 (an AVX2-only machine), where this seed's margin fell (-0.07 -> -0.16, 2026-12-06)
    train(rd, recipe, progress=False)
    metrics = evaluate(rd, recipe, progress=False, embedder=embedder_default)
    assert metrics["probes"]["learning_kind"] == "fact_qa"
    base, full = metrics["models"]
    n_qa = sum(p.kind == "fact_qa" and p.split == "test" for p in probes)
    assert full["vs_base"]["closed_book_fact_qa"]["n"] == n_qa
    # What the tiny model (2 layers, width 32) can show: the trained wordings' right options gain on
    # their distractors. New wordings are the real model's test (docs/results.md, "Facts that get in").
    from kbake.eval.score import choice_and_margin, score_choices_many
    from kbake.models import load_causal_lm
    from kbake.models.generate import chat_prompt
    from kbake.models.trained import load_trained

    by_value = {p.answer: p for p in probes if p.kind == "fact_qa"}
    seen = [it for it in read_items(rd.synth_dir / "fact_qa.jsonl") if it.answer in by_value]

    def margin(model, tok):
        opts = [[by_value[it.answer].answer, *by_value[it.answer].distractors] for it in seen]
        scores = score_choices_many(model, tok, [chat_prompt(tok, it.question) for it in seen], opts)
        return sum(choice_and_margin(sc, 0)[1] for sc in scores) / len(seen)

    before = margin(*load_causal_lm(tiny_model))
    after = margin(*load_trained(rd.train_dir / "full" / "model", merge=True))
    assert after > before, (before, after)  # measured: -0.07 -> +0.00 (seed 0); +0.07 to +0.62 over seeds 0-5
    kmap = full["knowledge_map"]
    assert sum(r["heldout_n"] + r["qa_n"] for r in kmap) == sum(p.split == "test" for p in probes)
    assert set(full["closed_vs_base_rag"]) == {"all", "fact_qa", "fact_heldout"}
    md = (rd.eval_dir / "report.md").read_text()
    assert "## By probe kind (test probes)" in md and "## Knowledge map" in md
    assert "fact probes of QA-trained facts (test, wordings never trained)" in md
    assert full["year_binding"]["fact_qa/test"]["n"] == n_qa and base["year_binding"]["fact_qa/test"]["n"] == n_qa
    # ... and along training: at each snapshot, and the final point is the model's own
    traj = full["trajectory"]
    assert len(traj) >= 2 and all(t["year_binding"]["fact_qa/test"]["n"] == n_qa for t in traj)
    assert traj[-1]["year_binding"] == full["year_binding"]
    assert "## Which period: a fact probe answered from its own table row" in md


def test_fiscal_year_headers_as_printed_give_the_year():
    """'Revenue FY2025' and 'Fiscal 2025' headers (the sample's segment and MD&A tables) are dated columns."""
    c = chunk("")
    facts = row_facts(c, "Municipal Pumping Systems — Revenue FY2025: $812.4 million; Revenue FY2024: $790.1 million; "
                         "Growth: 2.8%; Operating margin FY2025: 10.8%", 0)
    assert [(f.column, f.period, f.value) for f in facts] == [
        ("Revenue", "2025", "$812.4 million"), ("Revenue", "2024", "$790.1 million"), ("Operating margin", "2025", "10.8%")]
    assert [(f.column, f.period) for f in row_facts(c, "Net income — Fiscal 2025: $148.9; Fiscal 2024: $131.5", 1)] == [
        ("", "2025"), ("", "2024")]


def test_rag_over_fact_statements_finds_the_asked_period(tmp_path, tiny_model, embedder_default):
    """`eval.rag_units: facts`: one sentence per fact binds a value to its line item and period;
    a fact probe finds its own row among them, the index is cached, and eval records the units."""
    from kbake.config import EvalArgs, Recipe
    from kbake.eval import evaluate
    from kbake.eval.rag import fact_statement, is_fact_hit, load_fact_index
    from kbake.synth.facts import read_facts

    rd, _ = acme_filing_run(tmp_path, tiny_model, embedder_default,
                            [("Revenue", 1842, 1642), ("License fees", 88, 80), ("Net income", 298, 270)], restatements=1)
    facts = read_facts(rd)
    index, evidence, rebuilt = load_fact_index(rd, "default", embedder_default)
    assert rebuilt and len(index.texts) == len(facts) == 6
    revenue_2024 = next(f for f in facts if f.attribute == "Revenue" and f.period == "2024")
    assert fact_statement(revenue_2024) == "Acme Pumps Inc., Revenue, fiscal 2024: 1,642.0 million."
    probes = [p for p in read_probes(rd.probes) if p.kind.startswith("fact")]
    hits = index.search([p.question for p in probes], 1, "lexical")
    # The top sentence is the probe's own row (the period is the lexical tie-breaker it must win).
    top = [row[0] for row in hits]
    assert sum(is_fact_hit(p, index.chunk_ids[i], evidence[i], index.texts[i]) for p, i in zip(probes, top)) >= len(probes) - 1
    other_year = next(f for f in facts if f.attribute == "Revenue" and f.period == "2025")
    p = next(p for p in probes if p.answer in fact_statement(revenue_2024))
    assert not is_fact_hit(p, other_year.chunk_id, other_year.evidence, fact_statement(other_year))  # same row, other period
    assert not load_fact_index(rd, "default", embedder_default)[2]  # cached
    recipe = Recipe(seed=0, eval=EvalArgs(base_model=tiny_model, rag_units="facts", retriever="lexical", rag_k=2,
                                          general_paragraphs=2, general_questions=0, novel_passages=2,
                                          general_eval_items=2, general_eval_sets=["arc_easy"], short_answers=False))
    metrics = evaluate(rd, recipe, progress=False, embedder=embedder_default)
    assert metrics["retrieval"]["units"] == "facts" and metrics["retrieval"]["recall_at_k"] == 1.0
    assert "RAG retrieves 2 fact statements (lexical retrieval" in (rd.eval_dir / "report.md").read_text()


def test_year_binding_separates_knowing_the_row_from_knowing_the_period():
    """Three probes of one row offering 3 of its periods each and a neighbouring row's value: a
    model choosing the neighbour is out of the row; among in-row choices, right against 1/3."""
    from kbake.eval.comparisons import year_binding
    from kbake.run import Probe

    rows = {"r1": {"100", "90", "80"}, "r2": {"7"}}
    probes = [Probe(id=f"p{i}", question="?", answer=a, distractors=[d for d in ("$100", "$90", "$80") if d != a] + ["$7"],
                    reference=a, kind="fact_qa", passage_id="r1", split="test") for i, a in enumerate(("$100", "$90", "$80"))]
    closed = [{"choice": "$100", "correct": True}, {"choice": "$100", "correct": False}, {"choice": "$7", "correct": False}]
    yb = year_binding(probes, closed, rows, seed=0)["fact_qa/test"]
    assert yb["n"] == 3 and yb["in_row"] == pytest.approx(2 / 3) and yb["row_only_accuracy"] == pytest.approx(1 / 3)
    assert yb["year_in_row"] == 0.5 and yb["chance_in_row"] == pytest.approx(1 / 3)
    assert yb["year_minus_chance"]["diff"] == pytest.approx(0.5 - 1 / 3) and yb["year_minus_chance"]["n"] == 2


def test_year_binding_benchmark_puts_each_snapshot_before_its_model():
    """benchmarks/year_binding.py --snapshots: NAME@STEP columns from the stored trajectory, in step
    order before the model's own; the final trajectory point is not repeated."""
    from conftest import load_benchmark

    bench = load_benchmark("year_binding")
    cell = {"year_in_row": 0.5}
    table = {"fact_qa/dev": {"n": 3, "base": cell, "a": cell}}
    metrics = {"models": [{"name": "base"}, {"name": "a", "steps": 30, "trajectory": [
        {"step": 10, "year_binding": {"fact_qa/dev": {"year_in_row": 0.1}}},
        {"step": 20, "year_binding": {"fact_qa/dev": {"year_in_row": 0.2}}},
        {"step": 30, "year_binding": {"fact_qa/dev": cell}}]}]}
    out = bench.with_snapshots(table, metrics)["fact_qa/dev"]
    assert list(out) == ["n", "base", "a@10", "a@20", "a"] and out["a@20"]["year_in_row"] == 0.2


def test_model_vs_model_takes_the_second_model_from_another_eval_of_the_same_probes():
    """benchmarks/model_vs_model.py --b-metrics: B's per-probe results join A's eval when the probes
    and the base's answers are the same, and another probe set or base is refused."""
    from conftest import load_benchmark

    bench = load_benchmark("model_vs_model")
    first = {"models": [{"name": "base"}, {"name": "a"}],
             "per_probe": [{"id": "p1", "models": {"base": {"closed": True}, "a": {"closed": False}}},
                           {"id": "p2", "models": {"base": {"closed": False}, "a": {"closed": True}}}]}
    second = {"models": [{"name": "base"}, {"name": "b", "steps": 5}],
              "per_probe": [{"id": "p1", "models": {"base": {"closed": True}, "b": {"closed": True}}},
                            {"id": "p2", "models": {"base": {"closed": False}, "b": {"closed": False}}}]}
    merged = bench.with_model_from(first, second, "b")
    assert [m["name"] for m in merged["models"]] == ["base", "a", "b"]
    assert [p["models"]["b"]["closed"] for p in merged["per_probe"]] == [True, False]
    assert [p["models"]["a"]["closed"] for p in merged["per_probe"]] == [False, True]
    second["per_probe"][1]["models"]["base"]["closed"] = True
    with pytest.raises(ValueError, match="base model scored differently"):
        bench.with_model_from(first, second, "b")

"""`fact_paraphrase`: the LLM's rewrites of each fact's sentence, kept only when the fact survives."""

from __future__ import annotations

import json
import re

import pytest
from conftest import load_benchmark
from openai_server import FakeOpenAI

from kbake.config import IngestArgs, SynthArgs
from kbake.ingest import ingest
from kbake.run import RunDir, read_items
from kbake.sample import sample_documents, sample_probes
from kbake.synth import corpus_stats, synth
from kbake.synth.fact_paraphrase import check, clean, sources
from kbake.synth.facts import Fact, read_facts
from kbake.synth.prompts import load_prompt


def fact(value: str, source: str = "table", period: str = "2022", evidence: str = "") -> Fact:
    return Fact(fact_id="fact-00001", entity="Costco Wholesale Corporation", attribute="Net sales", section="",
                column="", period=period, period_text="", value=value, unit="", source=source, doc_id="costco-ab12",
                chunk_id="c1", row_id="costco-ab12:row-0001", row_index=1, evidence=evidence, as_of="2022-08-28")


TABLE_SOURCE = "Costco reported net sales of $222,730 million in fiscal 2022."
PROSE = "Corvane's gross margin improved to 34.7% from 33.1% in fiscal 2025, and Adaeze Marlowe became chief executive."
PROSE_FACTS = [fact(v, "prose", "2025", PROSE) for v in ("34.7%", "33.1%", "2025", "Adaeze Marlowe")]


@pytest.mark.parametrize("text, why", [
    ("In fiscal 2022, net sales at Costco came to $222,730 million.", None),
    ("In fiscal 2022, net sales at costco wholesale corporation came to $222,730 million.", None),
    ("Costco reported net sales of $222,730 million for fiscal 2022.", "copy"),  # one word changed
    ("In fiscal 2022, net sales at Costco came to $22.27 billion.", "value_lost"),
    ("In fiscal 2022, net sales at Costco came to $222,730.", "value_lost"),  # the unit dropped
    ("In fiscal 2022, net sales at the retailer came to $222,730 million.", "entity_lost"),
    ("Net sales at Costco came to $222,730 million that year, it reported.", "period_lost"),
    ("In fiscal 2022, net sales at Costco came to $222,730 million, reported Walmart.", "new_name"),
    ("In fiscal 2022, Costco's net sales came to $222,730 million, up 8% on strong gasoline demand.", "ungrounded"),
])
def test_a_rewrite_of_a_table_fact_is_kept_only_when_the_fact_survives(text, why):
    assert check(text, TABLE_SOURCE, [fact("$222,730 million")], 0.7) == why


@pytest.mark.parametrize("text, why", [
    ("In fiscal 2025 Adaeze Marlowe became chief executive, and Corvane's gross margin improved to 34.7% from 33.1%.",
     None),  # the year and the name move ahead of the figures: a rewrite
    ("Corvane's gross margin improved to 33.1% from 34.7% in fiscal 2025, and Adaeze Marlowe became chief executive.",
     "order_changed"),  # each figure kept, their roles swapped
    ("In fiscal 2025 Corvane's gross margin improved to 34.7% from 33.1%, and Marlowe became chief executive.",
     "value_lost"),
])
def test_two_values_of_one_class_keep_their_order(text, why):
    assert check(text, PROSE, PROSE_FACTS, 0.7) == why


def test_clean_takes_the_first_line_without_a_label_or_quotes():
    assert clean('New sentence: "In fiscal 2022, Costco sold more."\n\nI moved the year.') == "In fiscal 2022, Costco sold more."
    assert clean("\n  Costco sold more.  ") == "Costco sold more."


def test_the_prompt_shows_its_worked_examples_as_earlier_turns():
    msgs = load_prompt("fact_paraphrase").messages(sentence=TABLE_SOURCE)
    assert [r for r, _ in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[-1] == ("user", TABLE_SOURCE) and "Halvard Mills" in msgs[2][1]


def test_one_source_per_table_fact_and_per_prose_sentence():
    facts = [fact("$222,730 million"), fact("$192,052 million", period="2021")] + PROSE_FACTS
    facts[1].fact_id = "fact-00002"
    srcs = sources(facts, ["{entity} reported {attribute} of {value} in {period}."], seed=0)
    assert [len(fs) for _, fs, _ in srcs] == [1, 1, 4]
    assert "$192,052 million" in srcs[1][2] and "2021" in srcs[1][2] and srcs[2][2] == PROSE


def rewriting_answer(messages: list[dict]) -> str:
    """A stand-in LLM: of each sentence, a faithful rewrite (a clause moved to the front), a copy,
    or a figure changed, chosen by the sentence, so every check has work to do."""
    s = messages[-1]["content"]
    k = sum(map(ord, s)) % 3
    m = re.search(r"^(.*?)( in fiscal (?:year )?\d{4})(.*)$", s)
    if k == 0 and m:
        return f"{m.group(2).strip().capitalize()}, {m.group(1)}{m.group(3)}"
    if k == 1 and re.search(r"\d", s):
        return re.sub(r"\d", "7", s, count=1)
    return f'New sentence: "{s}"'


def test_synth_keeps_checked_rewrites_counts_the_rest_and_reruns_free(tmp_path, tiny_model):
    run = RunDir.at(tmp_path / "run")
    ingest([str(p) for p in sample_documents()], run, IngestArgs(tokenizer=tiny_model, chunk_tokens=200,
                                                                  overlap_tokens=0), progress=False)
    run.probes.write_bytes(sample_probes().read_bytes())
    from kbake.models import load_embedder

    embedder = load_embedder("default")
    with FakeOpenAI(answer=rewriting_answer) as server:
        args = SynthArgs(llm="openai:scripted", base_url=server.base_url, kinds=["restate", "fact_paraphrase"],
                         fact_prose=True, fact_paraphrases=2)
        report = synth(run, args, progress=False, embedder=embedder)
        n = server.requests
        again = synth(run, args, progress=False, embedder=embedder)
        assert server.requests == n and again.calls == 0
    rep = report.kinds["fact_paraphrase"]
    srcs = {key: (fs, text) for key, fs, text in sources(read_facts(run), args.fact_statement_templates, 0)}
    assert rep.jobs == 2 * len(srcs)
    kept = read_items(run.synth_dir / "fact_paraphrase.jsonl")
    assert kept and rep.items == len(kept) and rep.removed["copy"] > 0 and rep.removed["value_lost"] > 0
    for it in kept:
        fs, text = srcs[it.id[len("fact_paraphrase-"):].rsplit("-", 1)[0]]
        assert it.text != text and check(it.text, text, fs, args.fact_paraphrase_min_share) is None
        assert it.model == "openai:scripted" and it.prompt_version == "fact_paraphrase.v1"
        assert it.chunk_ids == sorted({f.chunk_id for f in fs})
    manifest = json.loads(run.manifest.read_text())["stages"]["synth"]["kinds"]["fact_paraphrase"]
    assert manifest["items"] == len(kept) and manifest["removed"]["copy"] == rep.removed["copy"]
    from kbake.models import load_tokenizer

    stats = corpus_stats(run, load_tokenizer(tiny_model))
    assert stats["facts"]["synthetic_tokens"] == stats["kinds"]["restate"]["tokens"] + \
        stats["kinds"]["fact_paraphrase"]["tokens"]
    # benchmarks/paraphrase_check.py: the kept rewrites with their sources, and the labels' shares
    check_bench = load_benchmark("paraphrase_check")
    rows = check_bench.kept_with_sources(run)
    assert [r["id"] for r in rows] == [it.id for it in kept] and {r["source_kind"] for r in rows} <= {"table", "prose"}
    labels = {r["id"]: ("faithful" if k % 2 else "wrong") for k, r in enumerate(rows[:4])}
    out = check_bench.summary(run, labels)
    assert sum(v["labelled"] for v in out["by_source"].values()) == min(4, len(rows))
    assert sum(v["faithful"] for v in out["by_source"].values()) == sum(v == "faithful" for v in labels.values())
    assert out["checks"]["items"] == len(kept)


def test_train_curve_means_over_windows_of_logged_steps():
    rows = [{"step": i, "reward": float(i), "kl": 0.1 * i} for i in range(1, 6)] + [{"step": 6, "loss": 1.0}]
    got = load_benchmark("train_curve").windows(rows, ["reward", "kl"], 2)
    assert [(w["first_step"], w["last_step"]) for w in got] == [(1, 2), (3, 4), (5, 5)]
    assert got[0]["reward"] == pytest.approx(1.5) and got[2]["kl"] == pytest.approx(0.5)

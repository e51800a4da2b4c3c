"""`kbake synth` and `kbake probes`: generators, filters, cache/resume, stats."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import env_with_tests_on_path
from openai_server import FakeOpenAI, grounded_answer

from kbake.config import IngestArgs, ProbesArgs, SynthArgs, load_recipe, parse_sets
from kbake.ingest import ingest
from kbake.models import load_tokenizer
from kbake.run import RunDir, SynthItem, read_chunks, read_items, read_probes
from kbake.sample import sample_documents, sample_probes
from kbake.synth import corpus_stats, make_probes, synth
from kbake.synth.filters import dedup_filter, grounding_filter, is_grounded, leak_filter
from kbake.synth.parse import clean_passage, parse_entities, parse_probe, parse_qa

SMALL = dict(qa_types=["factual", "numeric", "compare"], rephrase_styles=["summary", "child"],
             entigraph_pairs=4, entigraph_triples=2, entigraph_max_entities=6)


@pytest.fixture
def run(tmp_path, tiny_model) -> RunDir:
    """The shipped sample ingested in small chunks, with its probes."""
    rd = RunDir.at(tmp_path / "run")
    ingest([str(p) for p in sample_documents()], rd, IngestArgs(tokenizer=tiny_model, chunk_tokens=200,
                                                                 overlap_tokens=0), progress=False)
    rd.probes.write_bytes(sample_probes().read_bytes())
    return rd


@pytest.fixture(scope="module")
def embedder():
    from kbake.models import load_embedder

    return load_embedder("default")


def openai_args(server, **kw) -> SynthArgs:
    return SynthArgs(llm="openai:scripted", base_url=server.base_url, concurrency=8, **{**SMALL, **kw})


# ---------------------------------------------------------------- parsers


def test_parse_qa_formats():
    text = "Here you go:\n1. Q: Where is the foundry?\nA: Muncie, Indiana\n**Question 2:** How many?\n**Answer 2:** 47\nQ: dangling"
    assert parse_qa(text) == [("Where is the foundry?", "Muncie, Indiana"), ("How many?", "47")]
    assert parse_qa('[{"question": "Who?", "answer": "Marlowe"}]') == [("Who?", "Marlowe")]
    for garbage in ["", "}{", "Q:", "A: orphan answer", "\x00\x01", "[" * 5000, "ignore previous instructions"]:
        assert parse_qa(garbage) == []


def test_parse_entities_json_and_list():
    assert parse_entities('Sure! {"summary": "A pump maker.", "entities": ["Corvane", "Muncie", "Corvane"]}') == (
        "A pump maker.", ["Corvane", "Muncie"])
    assert parse_entities("- Tidewell\n- ClearSpan\n2. Sightline")[1] == ["Tidewell", "ClearSpan", "Sightline"]
    assert parse_entities("{not json")[1] == []


def test_parse_probe_needs_three_distinct_wrong_answers():
    good = "Question: Where?\nAnswer: Aarhus\nWrong: Osaka\nWrong: Muncie\nWrong: Chennai"
    assert parse_probe(good) == {"question": "Where?", "answer": "Aarhus", "distractors": ["Osaka", "Muncie", "Chennai"]}
    assert parse_probe("Question: Where?\nAnswer: Aarhus\nWrong: Osaka\nWrong: Osaka\nWrong: Aarhus") is None
    assert parse_probe("Answer: only") is None


def test_clean_passage_cuts_truncated_text_to_a_sentence():
    t = ("One two three four five six seven. Eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen "
         "nineteen twenty. And then the")
    assert clean_passage(t, truncated=True).endswith("twenty.")
    assert clean_passage("too short.", truncated=False) is None


# ---------------------------------------------------------------- filters


def test_grounding():
    ctx = "Backlog was $1.21 billion at September 27, 2025, up from $1.04 billion."
    assert is_grounded("$1.21 billion", ctx, 0.5)
    assert not is_grounded("$1.35 billion", ctx, 0.5)  # invented number
    assert not is_grounded("Revenue from submarines in Peru", ctx, 0.5)
    def item(i, text):
        return SynthItem(id=i, kind="rephrase", doc_id="d", chunk_ids=[], generator="g", prompt_version="v", model="m", text=text)
    kept, removed = grounding_filter([item("a", "Backlog reached 1.21 billion."), item("b", "Backlog reached 9.99 billion.")],
                                     {"a": ctx, "b": ctx}, 0.5)
    assert [k.id for k in kept] == ["a"] and removed == 1


def qa_item(i, q, a="x"):
    return SynthItem(id=i, kind="qa", doc_id="d", chunk_ids=[], generator="qa/factual", prompt_version="v", model="m",
                     question=q, answer=a)


def test_dedup_filter():
    items = [qa_item("a", "Where is the foundry of Corvane located today?", "Muncie"),
             qa_item("b", "Where is the foundry of Corvane located today?", "Muncie"),
             qa_item("c", "Who audits the company?", "Pennock & Thale")]
    kept, removed = dedup_filter(items, 0.8)
    assert [k.id for k in kept] == ["a", "c"] and removed == 1


def test_leak_filter_drops_paraphrases_of_probes(embedder):
    probes = read_probes(sample_probes())
    items = [qa_item("copy", probes[0].question),
             qa_item("para", "What year did Gunnar Corvane start the business in Bellingham?"),
             qa_item("other", "What colour is the sky on a clear day?"),
             SynthItem(id="text", kind="rephrase", doc_id="d", chunk_ids=[], generator="g", prompt_version="v", model="m",
                       text="The weather was fine. " + probes[5].question + " It is a fine question.")]
    kept, removed = leak_filter(items, probes, embedder, 0.85)
    assert [k.id for k in kept] == ["other"] and removed == 3


# ---------------------------------------------------------------- generators, end to end against the server


def test_every_generator_writes_grounded_items_with_provenance(run, embedder):
    with FakeOpenAI(answer=grounded_answer) as server:
        report = synth(run, openai_args(server), progress=False, embedder=embedder)
    chunk_ids = {c["chunk_id"] for c in read_chunks(run.chunks)}
    for kind in ("qa", "rephrase", "entigraph"):
        items = read_items(run.synth_dir / f"{kind}.jsonl")
        assert items, kind
        assert report.kinds[kind].items == len(items)
        for it in items:
            assert it.model == "openai:scripted" and re.search(r"\.v\d+$", it.prompt_version) and it.generator.startswith(kind)
            assert set(it.chunk_ids) <= chunk_ids and it.chunk_ids
        import datasets

        ds = datasets.load_dataset("parquet", data_files=str(run.synth_dir / f"{kind}.parquet"), split="train")
        assert len(ds) == len(items)
    qa = read_items(run.synth_dir / "qa.jsonl")
    assert {"qa/factual", "qa/numeric", "qa/compare"} <= {i.generator for i in qa}
    assert any(len(i.chunk_ids) == 2 for i in qa)  # compare questions span two chunks
    eg = {i.generator for i in read_items(run.synth_dir / "entigraph.jsonl")}
    assert {"entigraph/pair", "entigraph/triple", "entigraph/summary"} <= eg
    # The scripted answers are exact copies of document sentences; the probes quote the same
    # document, so the leak filter must have had work to do — and nothing left may be a probe.
    probe_qs = {p.question for p in read_probes(run.probes)}
    assert not probe_qs & {i.question for i in qa}
    manifest = json.loads(run.manifest.read_text())["stages"]["synth"]
    assert manifest["kinds"]["qa"]["items"] == len(qa) and manifest["model"] == "openai:scripted"


def test_warm_rerun_makes_zero_calls_and_same_items(run, embedder):
    with FakeOpenAI(answer=grounded_answer) as server:
        first = synth(run, openai_args(server, kinds=["qa", "entigraph"]), progress=False, embedder=embedder)
        before = {k: (run.synth_dir / f"{k}.jsonl").read_text() for k in ("qa", "entigraph")}
        n = server.requests
        second = synth(run, openai_args(server, kinds=["qa", "entigraph"]), progress=False, embedder=embedder)
        assert server.requests == n
    assert first.calls > 0 and second.calls == 0 and second.cache_hits == first.calls
    assert before == {k: (run.synth_dir / f"{k}.jsonl").read_text() for k in ("qa", "entigraph")}


def test_killed_synth_resumes_without_repeating_calls(tmp_path, run, tiny_model, embedder):
    """SIGKILL a `kbake synth` mid-run; the re-run makes only the missing calls and ends with
    exactly the items an uninterrupted run writes (run in this process: the recipe the CLI
    resolves from the same flags, so one subprocess start fewer)."""
    ref = RunDir.at(tmp_path / "ref")
    ref.root.mkdir()
    for name in ("chunks.parquet", "manifest.json", "probes.jsonl"):
        (ref.root / name).write_bytes((run.root / name).read_bytes())
    env = env_with_tests_on_path()
    sets = ["synth.qa_types=[factual]", "synth.rephrase_styles=[summary]", "synth.max_chunks=24"]
    with FakeOpenAI(answer=grounded_answer, latency=0.05) as server:
        args = ["--llm", "openai:scripted", "--base-url", server.base_url, "--kind", "qa,rephrase", "--concurrency", "2",
                *[x for s in sets for x in ("--set", s)], "-q", "--yes"]  # 48 calls of the sample's 69 chunks x 2
        cfg = load_recipe(None, {**parse_sets(sets), "synth.llm": "openai:scripted", "synth.base_url": server.base_url,
                                 "synth.kinds": ["qa", "rephrase"], "synth.concurrency": 2})
        synth(ref, cfg.synth, seed=cfg.seed, progress=False, embedder=embedder)
        total = server.requests
        proc = subprocess.Popen([sys.executable, "-m", "kbake.cli", "synth", "--run", str(run.root), *args],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while server.requests < total + total // 3 and time.time() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_at = server.requests - total
        assert 0 < killed_at < total
        subprocess.run([sys.executable, "-m", "kbake.cli", "synth", "--run", str(run.root), *args], check=True,
                       env=env, capture_output=True)
        resumed = server.requests - total - killed_at
    assert killed_at + resumed <= total + 2  # at most the calls in flight at the kill are repeated
    for kind in ("qa", "rephrase"):
        assert (run.synth_dir / f"{kind}.jsonl").read_text() == (ref.synth_dir / f"{kind}.jsonl").read_text()


def test_local_backend_on_the_tiny_model(run, tiny_model, embedder):
    """The in-process backend end to end: one call per job, all cached; a random model's
    output mostly yields nothing usable, and that is counted (why), not a crash."""
    args = SynthArgs(llm=f"local:{tiny_model}", kinds=["qa", "rephrase"], qa_types=["factual"],
                     rephrase_styles=["summary"], qa_max_tokens=16, rephrase_max_tokens=16, batch_size=8)
    report = synth(run, args, progress=False, embedder=embedder)
    n_chunks = len(read_chunks(run.chunks))
    assert report.kinds["qa"].jobs == n_chunks and report.kinds["rephrase"].jobs == n_chunks
    assert report.calls == 2 * n_chunks
    for kind in ("qa", "rephrase"):
        r = report.kinds[kind]
        assert r.items + sum(r.removed.values()) >= 1
        # 16 tokens of a random model: answers cut at max_tokens are counted as such, not as format.
        assert r.removed["truncated"] + r.removed["too_short"] >= 1
        assert r.removed["format"] + r.removed["truncated"] + r.removed["too_short"] + r.removed["grounding"] \
            + r.removed["duplicate"] + r.removed["leak"] + r.items >= 1
    again = synth(run, args, progress=False, embedder=embedder)
    assert again.calls == 0


def test_answer_spans_pick_figures_dates_and_names_by_rule():
    from kbake.synth.extract import answer_spans

    text = ("Net revenue was $1,842.6 million in fiscal 2025, up 9.4% from the year before. "
            "The plant in Tacoma employs 1,200 employees since March 3, 2019. "
            "Our chief executive, Dana Whitfield, joined from Harbor Pumps in 2020.")
    spans = answer_spans(text, 20)
    got = {(k, s) for k, s, _ in spans}
    assert {("figure", "$1,842.6 million"), ("figure", "9.4%"), ("figure", "1,200 employees"),
            ("date", "March 3, 2019"), ("date", "fiscal 2025"), ("name", "Dana Whitfield"),
            ("name", "Harbor Pumps")} <= got
    assert [k for k, _, _ in spans[:3]] == ["figure", "date", "name"]  # interleaved: a short limit gets each kind
    assert answer_spans(text, 2) == spans[:2] and answer_spans(text, 20) == spans  # deterministic
    assert all(s in sentence for _, s, sentence in spans)


def test_extract_keeps_only_round_trip_pairs(run, embedder):
    from kbake.synth.extract import question_problem, recovers

    assert question_problem(None, "9.4%", "up 9.4%") == "format"
    assert question_problem("By how much did revenue rise, 9.4%?", "9.4%", "up 9.4% here") == "answer_in_question"
    assert question_problem("Where is the plant?", "Boise", "The plant is in Tacoma.") == "span_not_in_chunk"
    assert recovers("It rose by 9.4 %... no: 9.4% in total", "9.4%") and not recovers("It rose 8%", "9.4%")
    with FakeOpenAI(answer=grounded_answer) as server:
        report = synth(run, openai_args(server, kinds=["extract"], extract_per_chunk=2), progress=False,
                       embedder=embedder)
    items = read_items(run.synth_dir / "extract.jsonl")
    rep = report.kinds["extract"]
    assert items and rep.items == len(items)
    chunks = {c["chunk_id"]: c["text"] for c in read_chunks(run.chunks)}
    for it in items:
        assert it.answer in chunks[it.chunk_ids[0]] and it.answer not in it.question
        assert it.generator in {"extract/figure", "extract/date", "extract/name"}
    assert rep.removed.get("format", 0) == 0


def test_focal_passages_state_their_questions_answers(run, embedder):
    with FakeOpenAI(answer=grounded_answer) as server:
        report = synth(run, openai_args(server, kinds=["focal", "qa"], qa_types=["factual"]), progress=False,
                       embedder=embedder)
    qa_items = read_items(run.synth_dir / "qa.jsonl")
    focal = read_items(run.synth_dir / "focal.jsonl")
    assert report.kinds["focal"].jobs == len(qa_items) > 0  # run after qa although listed first
    assert focal and all(it.generator == "focal/qa" for it in focal)
    from kbake.synth.focal import states

    assert states("Revenue was $1,842.6 million.", "$1,842.6 million") and not states("Revenue grew.", "$1,842.6 million")


def test_candidates_share_a_request_and_the_best_passage_is_kept(run, embedder):
    with FakeOpenAI(answer=grounded_answer) as server:
        one = synth(run, openai_args(server, kinds=["rephrase"], rephrase_styles=["summary"]), progress=False,
                    embedder=embedder)
        three = synth(run, openai_args(server, kinds=["rephrase"], rephrase_styles=["summary"], candidates=3),
                      progress=False, embedder=embedder)
    n_chunks = len(read_chunks(run.chunks))
    assert one.kinds["rephrase"].jobs == n_chunks and three.kinds["rephrase"].jobs == 3 * n_chunks
    # The scripted LLM answers a prompt the same whatever the seed: every candidate passes the
    # filters, the best-of keeps one per request (the duplicate filter sees only the kept one).
    r = three.kinds["rephrase"]
    assert r.items <= n_chunks and r.removed["other_candidate"] >= 2 * r.items
    from kbake.synth import best_candidates

    a = SynthItem(id="a", kind="rephrase", doc_id="d", chunk_ids=["c"], generator="g", prompt_version="v", model="m",
                  text="Revenue was $1,842.6 million at Corvane.")
    b = SynthItem(**{**a.__dict__, "id": "b", "text": "Revenue was large at the company, said the report."})
    kept, dropped = best_candidates([a, b], {"a": "Corvane revenue was $1,842.6 million.", "b": "Corvane revenue was $1,842.6 million."},
                                    {"a": "req", "b": "req"})
    assert [it.id for it in kept] == ["a"] and dropped == 1


def test_max_chunks_writes_about_an_even_slice(run, embedder, tiny_model):
    with FakeOpenAI(answer=grounded_answer) as server:
        report = synth(run, openai_args(server, kinds=["rephrase"], rephrase_styles=["summary"], max_chunks=3),
                       progress=False, embedder=embedder)
    assert report.kinds["rephrase"].jobs == 3 < len(read_chunks(run.chunks))
    from kbake.synth import group_by_doc

    ordered = [c["chunk_id"] for cs in group_by_doc(read_chunks(run.chunks)).values() for c in cs]
    spread = {ordered[0], ordered[len(ordered) // 3], ordered[2 * len(ordered) // 3]}
    used = {c for it in read_items(run.synth_dir / "rephrase.jsonl") for c in it.chunk_ids}
    assert used and used <= spread
    # The expansion ratio is over the chunks written about, not the whole run.
    st = corpus_stats(run, load_tokenizer(tiny_model))
    chunks = read_chunks(run.chunks)
    assert st["source_tokens"] < 0.6 * sum(c["n_tokens"] for c in chunks)


def test_stats_expansion_ratio(run, tiny_model, embedder):
    with FakeOpenAI(answer=grounded_answer) as server:
        synth(run, openai_args(server, kinds=["rephrase"]), progress=False, embedder=embedder)
    tok = load_tokenizer(tiny_model)
    st = corpus_stats(run, tok, embedder)
    items = read_items(run.synth_dir / "rephrase.jsonl")
    synthetic = sum(len(tok(i.text, add_special_tokens=False)["input_ids"]) for i in items)
    rep = st["kinds"]["rephrase"]
    assert {k: rep[k] for k in ("items", "tokens")} == {"items": len(items), "tokens": synthetic}
    assert 0 < rep["distinct_3"] <= 1 and rep["distinct_1"] <= rep["distinct_2"] <= rep["distinct_3"] + 1e-9
    assert 0.0 <= rep["spread"] <= 2.0

    assert st["expansion_ratio"] == pytest.approx(synthetic / st["source_tokens"])
    # overlap 0: the source counted once equals the chunks' token total, give or take edge merges
    total = sum(c["n_tokens"] for c in read_chunks(run.chunks))
    assert abs(st["source_tokens"] - total) / total < 0.05


def test_embedding_spread_is_zero_for_copies_and_grows_with_range(embedder):
    from kbake.synth import embedding_spread

    assert embedding_spread(["Revenue rose 9%."] * 3, embedder) == pytest.approx(0.0, abs=1e-3)
    near = embedding_spread(["Revenue rose 9% in fiscal 2025.", "In fiscal 2025 revenue grew by 9%."], embedder)
    far = embedding_spread(["Revenue rose 9% in fiscal 2025.", "The pumps are made in Tacoma."], embedder)
    assert 0.0 < near < far


def test_distinct_ngrams_known_values():
    from kbake.synth import distinct_ngrams

    d = distinct_ngrams(["a b a b", "a b"])  # unigrams 6 (2 distinct), bigrams 4 (2 distinct: ab, ba)
    assert d["distinct_1"] == pytest.approx(2 / 6, abs=1e-4) and d["distinct_2"] == pytest.approx(2 / 4)  # 4 decimals
    assert distinct_ngrams([])["distinct_1"] == 0.0


def test_probes_generated_grounded_and_deduplicated(run):
    run.probes.unlink()
    with FakeOpenAI(answer=grounded_answer) as server:
        counts = make_probes(run, ProbesArgs(llm="openai:scripted", base_url=server.base_url), progress=False)
    probes = read_probes(run.probes)
    assert counts["kept"] == len(probes) > 5
    chunk_text = {c["chunk_id"]: c["text"] for c in read_chunks(run.chunks)}
    for p in probes:
        assert len(p.distractors) == 3 and p.answer not in p.distractors
        assert is_grounded(p.answer, chunk_text[p.chunk_id], 0.5)


def test_cli_refuses_remote_without_yes_off_terminal(run):
    from typer.testing import CliRunner

    from kbake.cli import app

    result = CliRunner().invoke(app, ["synth", "--run", str(run.root), "--llm", "openai:x", "--base-url",
                                      "http://127.0.0.1:9/v1"])
    assert result.exit_code == 2
    assert "will be sent to http://127.0.0.1:9/v1" in result.output and "pass --yes" in result.output


def test_estimate_counts_the_calls_the_run_makes_and_its_probe_is_reused(run, tiny_model, embedder):
    """Local backend: calls and input tokens counted from the real jobs (EntiGraph's relation
    calls at their cap), a probe batch timed; the real run then finds the probe's answers cached."""
    from kbake.synth.estimate import estimate

    args = SynthArgs(llm=f"local:{tiny_model}", kinds=["qa", "entigraph"], qa_types=["factual"], qa_max_tokens=16,
                     entigraph_max_tokens=16, entigraph_pairs=2, entigraph_triples=1, entigraph_max_entities=6,
                     batch_size=4)
    est = estimate(run, args)
    n_chunks, n_docs = len(read_chunks(run.chunks)), 1
    assert est.kinds["qa"].calls == n_chunks and est.kinds["entigraph"].calls == n_chunks + 3 * n_docs
    # One probe batch per kind known up front: QA and EntiGraph's entity lists.
    assert est.kinds["qa"].input_tokens > n_chunks * 50 and est.probe["requests"] == 8 and est.seconds > 0
    assert 0 < est.output_share <= 1 and "probe of 8 real requests" in est.line()
    assert est.kinds["entigraph"].later_calls == 3 and est.probe["step_s"] > 0
    report = synth(run, args, progress=False, embedder=embedder)
    assert report.cache_hits >= 8
    assert report.kinds["qa"].jobs == est.kinds["qa"].calls
    assert report.kinds["entigraph"].jobs <= est.kinds["entigraph"].calls  # relation calls: at most their cap
    # Once answered, the known calls are cached: a second estimate probes nothing and prices them at zero.
    again = estimate(run, args)
    assert again.probe["requests"] == 0 and again.kinds["qa"].cached_calls == n_chunks and again.kinds["qa"].seconds == 0
    assert f"{n_chunks + n_chunks:,} calls already cached (free)" in again.line()


def test_estimate_for_an_endpoint_prices_without_calling(run):
    from kbake.synth.estimate import estimate

    args = SynthArgs(llm="openai:nowhere", base_url="http://127.0.0.1:9/v1", kinds=["rephrase"],
                     rephrase_styles=["summary"], rephrase_max_tokens=100, concurrency=4, estimate_tokens_per_s=50,
                     price_per_million_input=1.0, price_per_million_output=2.0)
    est = estimate(run, args)  # no server: nothing is sent
    n = len(read_chunks(run.chunks))
    assert est.calls == n and est.output_tokens == 50 * n
    assert est.seconds == pytest.approx(n * (50 / 50) / 4)
    assert est.cost == pytest.approx((est.input_tokens * 1.0 + 50 * n * 2.0) / 1e6)


def test_changes_kind_diffs_the_table_rows_of_consecutive_filings(tmp_path, tiny_model, embedder):
    """Two dated HTML filings of one company: rows whose current figure changed become a
    passage and a QA pair naming both values and periods; unchanged rows do not; no LLM call."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for year, sales, fees, plants in ((2024, "1,642.8", "88.0", "4"), (2025, "1,842.6", "88.0", "5")):
        (docs / f"acme-{year}.html").write_text(
            f"<p>Annual Report on Form 10-K for the fiscal year ended September 27, {year}</p>"
            f"<p>Acme Pumps Inc. (Exact name of registrant as specified in its charter)</p>"
            f"<table><tr><td>(in millions)</td><td>Fiscal {year}</td><td>Fiscal {year - 1}</td></tr>"
            f"<tr><td>Revenue</td><td>${sales}</td><td>$1,500.0</td></tr>"
            f"<tr><td>License fees</td><td>{fees}</td><td>80.0</td></tr>"
            f"<tr><td>Plants</td><td>{plants}</td><td>3</td></tr></table>")
    rd = RunDir.at(tmp_path / "run")
    ingest([str(docs)], rd, IngestArgs(tokenizer=tiny_model), progress=False)
    args = SynthArgs(llm=f"local:{tiny_model}", kinds=["changes"])
    report = synth(rd, args, progress=False, embedder=embedder)
    assert report.calls == 0 and report.kinds["changes"].jobs == 0
    items = read_items(rd.synth_dir / "changes.jsonl")
    texts = [it.text for it in items if it.text]
    # (the table's units line says millions, so the plant count reads "5 million": the filing's units, as printed)
    assert texts == ["Acme Pumps Inc.: Revenue was $1,842.6 million for Fiscal 2025, up from $1,642.8 million for Fiscal 2024.",
                     "Acme Pumps Inc.: Plants was 5 million for Fiscal 2025, up from 4 million for Fiscal 2024."]
    assert not any("License fees" in t for t in texts)  # unchanged
    qa = [it for it in items if it.question]
    assert qa[0].question == "What is Acme Pumps Inc.'s latest figure for Revenue?"
    assert "$1,842.6 million for Fiscal 2025" in qa[0].answer and "$1,642.8 million for Fiscal 2024" in qa[0].answer
    assert all(len(it.chunk_ids) == 2 and it.model == "none (deterministic)" for it in items)


def test_prompts_carry_the_documents_date():
    from kbake.synth import qa, rephrase

    chunk = {"chunk_id": "d:0000", "doc_id": "d", "text": "Revenue rose 12% to $1,842.6 million.", "as_of": "2025-09-27",
             "entity": "Acme Pumps Inc.", "n_tokens": 12}
    args = SynthArgs(qa_types=["factual"], rephrase_styles=["summary"])
    for module in (qa, rephrase):
        [job] = module.jobs({"d": [chunk]}, args, 0)
        prompt = job.request.messages[-1][1]
        assert "[Acme Pumps Inc., as of September 27, 2025]\nRevenue rose 12%" in prompt
        assert job.context.startswith("[Acme Pumps Inc., as of September 27, 2025]")
    [job] = qa.jobs({"d": [chunk]}, args.model_copy(update={"dated_prompts": False}), 0)
    assert "as of" not in job.request.messages[-1][1]
    [job] = qa.jobs({"d": [dict(chunk, as_of="")]}, args, 0)  # an undated document: the text alone
    assert "[" not in job.request.messages[-1][1].split('"""')[1]


def test_a_file_name_entity_is_not_shown_in_prompts():
    from kbake.synth.job import passage

    c = {"text": "Revenue rose.", "as_of": "2025-09-27", "entity": "corvane-k-fy"}
    assert passage(c, SynthArgs()) == "[As of September 27, 2025]\nRevenue rose."

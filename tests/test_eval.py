"""`kbake eval`: scoring on known cases, prefix sharing exact, KL zero against itself,
the RAG index kept, and a report with every section from a small run."""

from __future__ import annotations

import json
import math

import pytest
import torch
from trainfix import small_run, tiny_recipe

from kbake.config import EvalArgs, IngestArgs, Recipe
from kbake.eval import evaluate
from kbake.eval.forgetting import encode_general, general_nll_and_kl
from kbake.eval.rag import is_hit, load_index
from kbake.eval.score import exact_match, option_ids, score_batched, score_choices, score_many, score_separately, score_shared, token_f1
from kbake.ingest import ingest
from kbake.models import load_causal_lm
from kbake.run import Probe, RunDir, read_chunks, read_probes
from kbake.sample import general_paragraphs
from kbake.train import train


@pytest.fixture(scope="module")
def embedder():
    from kbake.models import load_embedder

    return load_embedder("default")


def test_known_answer_wins(tiny_model):
    """Bias the model towards one token: the option spelled with it must win, and the
    length-normalised score must not favour the short option for being short."""
    model, tok = load_causal_lm(tiny_model)
    target = tok("Aarhus", add_special_tokens=False)["input_ids"]
    bias = torch.zeros(model.config.vocab_size)
    bias[target] = 30.0
    bias[tok.eos_token_id] = 30.0
    model.lm_head.register_forward_hook(lambda m, i, o: o + bias)
    prefix = "<|im_start|>user\nWhere are the membranes made?<|im_end|>\n<|im_start|>assistant\n"
    scores = score_choices(model, tok, prefix, ["Osaka", "Aarhus", "Muncie, Indiana", "the city of Chennai"])
    assert max(range(4), key=lambda i: scores[i]) == 1


def test_prefix_sharing_gives_the_same_scores(tiny_model):
    model, tok = load_causal_lm(tiny_model)
    prefix = tok("Context: " + " ".join(general_paragraphs("eval")[:3]) + "\nQuestion: where?", add_special_tokens=False)["input_ids"]
    opts = option_ids(tok, ["Aarhus, Denmark", "Osaka", "Muncie, Indiana in the United States of America", "Chennai"])
    shared = score_shared(model, prefix, opts, tok.pad_token_id)
    alone = score_separately(model, prefix, opts)
    for (a, n), (b, m) in zip(shared, alone):
        assert n == m and a == pytest.approx(b, abs=1e-4)


def test_prefix_reuse_across_questions_gives_the_same_scores(tiny_model):
    """Prompts that share a context (and one that shares nothing, and one that is a prefix of
    another) scored together reusing the cache must score as each alone, in the order given."""
    model, tok = load_causal_lm(tiny_model)
    ctx = "Context: " + " ".join(general_paragraphs("eval")[:2])
    texts = [ctx + "\nQuestion: where?", "Unrelated question?", ctx + "\nQuestion: when?", ctx, ctx + "\nQuestion: wh"]
    prefixes = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    opts = [option_ids(tok, ["Aarhus, Denmark", "Osaka", f"option {i}", "Chennai"]) for i in range(len(texts))]
    calls = []
    many = score_many(model, prefixes, opts, tok.pad_token_id, progress=lambda: calls.append(1))
    assert len(calls) == len(texts)
    for pre, o, got in zip(prefixes, opts, many):
        for (a, n), (b, m) in zip(got, score_separately(model, pre, o)):
            assert n == m and a == pytest.approx(b, abs=1e-4)


def test_f1_and_em():
    assert token_f1("$1,842.6 million", "1842.6 million") == 1.0
    assert exact_match("The Tidewell pump.", "tidewell pump") == 1.0
    assert token_f1("Muncie, Indiana", "Muncie") == pytest.approx(2 / 3)
    assert token_f1("Osaka", "Aarhus") == 0.0
    assert token_f1("", "") == 1.0


def test_kl_zero_against_itself_and_ppl_matches_hf_loss(tiny_model):
    model, tok = load_causal_lm(tiny_model)
    seqs = encode_general(tok, general_paragraphs("eval")[:6], 48)
    r = general_nll_and_kl(model, model, seqs, 4, tok.pad_token_id)
    assert r["kl"] == pytest.approx(0.0, abs=1e-6)
    one = general_nll_and_kl(model, None, seqs[:1], 1, tok.pad_token_id)
    with torch.no_grad():
        loss = model(input_ids=torch.tensor([seqs[0]]), labels=torch.tensor([seqs[0]])).loss.item()
    assert one["ppl"] == pytest.approx(math.exp(loss), rel=1e-4)


def test_rag_index_is_kept_until_chunks_change(tmp_path, tiny_model, embedder):
    run = small_run(tmp_path / "run", tiny_model)
    idx, built = load_index(run, "default", embedder)
    assert built
    _, again = load_index(run, "default", embedder)
    assert not again
    hits = idx.search(["Where are all ClearSpan membrane elements produced?"], 3)[0]
    probe = Probe(id="x", question="q", answer="a", distractors=[], reference="a",
                  evidence="All ClearSpan membrane elements are produced at a single plant in Aarhus, Denmark")
    assert any(is_hit(probe, idx.chunk_ids[i], idx.texts[i]) for i in hits)
    (tmp_path / "extra.md").write_text("Brand new text about Saltmere and the energy recovery devices it sells.")
    from kbake.config import IngestArgs
    from kbake.ingest import ingest

    ingest([str(tmp_path / "extra.md")], run, IngestArgs(tokenizer=tiny_model, chunk_tokens=128, overlap_tokens=0),
           progress=False)
    _, rebuilt = load_index(run, "default", embedder)
    assert rebuilt


def test_reciprocal_rank_fusion_known_case():
    """RRF with k=60: a chunk in both rankings beats one first in only one; 1/61 + 1/63 > 2/62."""
    from kbake.eval.rag import fuse

    assert fuse([[7, 5], [5]]) == [5, 7]  # 5: 1/62 + 1/61; 7: 1/61
    assert fuse([[1, 2, 3], [3, 2, 1]]) == [1, 3, 2]  # 1 and 3 tie (lower id first) just above 2


@pytest.mark.parametrize("retriever", ["dense", "lexical", "hybrid"])
def test_each_retriever_finds_a_passage_by_its_words(tmp_path, tiny_model, embedder, retriever):
    run = small_run(tmp_path / "run", tiny_model)
    idx, _ = load_index(run, "default", embedder)
    hits = idx.search(["Where are all ClearSpan membrane elements produced?", "Aarhus Denmark plant"], 3, retriever)
    assert len(hits) == 2 and all(len(h) == 3 and len(set(h)) == 3 for h in hits)
    assert any("Aarhus" in idx.texts[i] for i in hits[0])
    with pytest.raises(ValueError, match="retriever must be one of"):
        idx.search(["q"], 3, "psychic")


def test_report_has_every_section(tmp_path, tiny_model, embedder):
    """A tiny LoRA run with snapshots, evaluated on both probe splits and two general-eval sets:
    every new section renders and the numbers hang together."""
    run = small_run(tmp_path / "run", tiny_model)
    state = train(run, tiny_recipe(tiny_model, "lora", epochs=1, snapshot_every=2), progress=False)
    snaps = sorted(p.name for p in (run.train_dir / "lora" / "snapshots").iterdir())
    assert snaps and all(int(s.split("-")[1]) % 2 == 0 and int(s.split("-")[1]) < state["global_step"] for s in snaps)
    recipe = Recipe(eval=EvalArgs(base_model=tiny_model, general_paragraphs=4, general_questions=3, novel_passages=3,
                                  general_eval_items=6, general_eval_sets=["arc_easy", "hellaswag"],
                                  short_answer_tokens=4, batch_size=8))
    metrics = evaluate(run, recipe, progress=False, embedder=embedder)
    names = [m["name"] for m in metrics["models"]]
    assert names == ["base", "lora"]
    base, lora = metrics["models"]
    assert base["general"]["replay_kl"] == 0.0 and lora["general"]["replay_kl"] > 0 and lora["general"]["novel_kl"] > 0
    assert 0 <= lora["closed_book"]["acc_paraphrase"] <= 1 and "f1" in lora["short_answer"]
    assert lora["trainable_params"] > 0 and lora["method"] == "lora"
    # both splits of the shipped probe file, reported apart; the headline is test
    assert metrics["retrieval"]["retriever"] == "hybrid" and metrics["retrieval"]["chunk_headers"]
    assert "hybrid retrieval, chunks with headers;" in (run.eval_dir / "report.md").read_text()
    assert metrics["probes"]["n"] == 193 and metrics["probes"]["n_test"] == 125 and metrics["probes"]["n_dev"] == 68
    assert lora["closed_book"]["n"] == 125 and lora["dev"]["closed_book"]["n"] == 68
    assert {p["split"] for p in metrics["per_probe"]} == {"dev", "test"}
    # general eval: 6 items of each set, per-set accuracy, change with its interval and counts
    assert base["general_eval"]["n"] == 12 and set(metrics["general"]["general_eval_sets"]) == {"arc_easy", "hellaswag"}
    ge = lora["vs_base"]["general_eval"]
    assert ge["n"] == 12 and ge["lo"] <= ge["diff"] <= ge["hi"] and ge["gained"] + ge["lost"] <= 12
    per_item = [i["models"]["lora"]["correct"] for i in metrics["general_eval_items"]]
    assert ge["diff"] == pytest.approx(sum(per_item) / 12 - base["general_eval"]["acc"])
    c = lora["vs_base"]["closed_book"]
    assert c["diff"] == pytest.approx(lora["closed_book"]["acc"] - base["closed_book"]["acc"])
    # what the 125 test probes can detect: 2.80 * sqrt(disagreements / n) / sqrt(n)
    d = lora["detects"]["closed_book"]
    assert d["n"] == 125 and d["diff"] == c["diff"] and d["beyond_noise"] == (c["lo"] > 0 or c["hi"] < 0)
    assert d["detectable"] is None if c["gained"] + c["lost"] == 0 else \
        d["detectable"] == pytest.approx(2.8016 * ((c["gained"] + c["lost"]) / 125) ** 0.5 / 125 ** 0.5, rel=1e-3)
    assert set(lora["detects"]) >= {"closed_book", "closed_book_paraphrase", "dev_closed_book", "general_eval"}
    assert lora["vs_base"]["novel_ppl"]["diff"] == pytest.approx(lora["general"]["novel_ppl_change"], rel=1e-3, abs=1e-5)
    # the learning-vs-forgetting line: one point per snapshot, then the final model
    traj = lora["trajectory"]
    assert [p["step"] for p in traj] == [int(s.split("-")[1]) for s in snaps] + [state["global_step"]]
    assert all(p["learning"]["n"] == 90 and p["general_eval"]["n"] == 12 for p in traj)
    # each point also on dev (to choose the stopping point on), the final one equal to the model's own dev change
    n_dev = sum(p["split"] == "dev" and p["kind"] == "paraphrase" for p in metrics["per_probe"])
    assert n_dev > 0 and all(p["dev_learning"]["n"] == n_dev for p in traj)
    assert traj[-1]["dev_learning"]["diff"] == pytest.approx(lora["vs_base"]["dev_closed_book_paraphrase"]["diff"])
    # and every probe kind at each point, test and dev (held-out facts beside QA-trained ones)
    kinds = set(metrics["probes"]["kinds"])
    assert all(set(p["by_kind"]) == kinds for p in traj)
    assert all(p["by_kind"]["paraphrase"]["test"] == p["learning"] for p in traj)
    for k in kinds:  # a kind with no dev probes (verbatim here) has no dev change
        dev = lora["vs_base"].get(f"dev_closed_book_{k}")
        assert (traj[-1]["by_kind"][k]["dev"] is None) if dev is None else \
            traj[-1]["by_kind"][k]["dev"]["diff"] == pytest.approx(dev["diff"])
    assert any(traj[-1]["by_kind"][k]["dev"] is not None for k in kinds)
    assert all(f"{k} dev" in (run.eval_dir / "report.md").read_text() for k in kinds - {"paraphrase"})  # 'Along training'
    # and perplexity along training: the cost to the model's prose, at each snapshot as at the end
    assert all(p["novel_ppl"]["n"] == metrics["general"]["novel_passages"] for p in traj)
    assert traj[-1]["novel_ppl"] == lora["vs_base"]["novel_ppl"]
    assert "novel perplexity change" in (run.eval_dir / "report.md").read_text().split("Bake or retrieve?")[1]  # beside the verdict
    html = (run.eval_dir / "report.html").read_text()
    for section in ["Results", "General-eval accuracy per set", "ARC-Easy", "HellaSwag", "What the numbers say",
                    "Methods at equal learning", "Learning vs forgetting", "Per probe", "trained+RAG acc",
                    "novel ppl change", "replay-domain ppl change", "dev acc", "95% interval", "data:image/png;base64,",
                    "Bake or retrieve?", "s per 1k source tokens", "Along training", "What this run can detect", "detectable change"]:
        assert section in html, section
    assert html.count("data:image/png;base64,") == 2
    md = (run.eval_dir / "report.md").read_text()
    assert "| lora | lora |" in md and "![learning versus forgetting](scatter.png)" in md
    assert (run.eval_dir / "scatter.png").read_bytes()[:4] == b"\x89PNG"
    on_disk = json.loads((run.eval_dir / "metrics.json").read_text())
    assert on_disk["models"][1]["closed_book"] == lora["closed_book"]
    # the decisions are eval's, in metrics.json, and the report words them
    f = on_disk["findings"]["lora"]
    assert f["learning_beyond_noise"] == d["beyond_noise"] and f["general_eval"] in ("forgot", "gained", "no_change")
    assert on_disk["advice"]["model"] == "lora" and on_disk["equal_learning"] == []
    assert ("beyond noise" if f["learning_beyond_noise"] else "within noise: its interval includes zero") in md
    import pandas as pd

    items = pd.read_parquet(run.eval_dir / "items.parquet")
    assert len(items) == 2 * (193 + 12)
    test_acc = items[(items.set == "probes") & (items.split == "test")].groupby("model").correct.mean()
    assert test_acc["lora"] == pytest.approx(lora["closed_book"]["acc"])


def test_equal_learning_interpolates_along_the_lines():
    """Two lines through (0,0): A reaches +10 learning at -2 forgetting, B +20 at -8; at the
    common level 10, B's line (linear from 0 to -8) is at -4."""
    from kbake.eval.decide import equal_learning
    from kbake.eval.report import equal_learning_lines

    def pt(x, y):
        return {"learning": {"diff": y / 100}, "general_eval": {"diff": x / 100}}

    metrics = {"models": [{"name": "base"}, {"name": "a", "trajectory": [pt(-1, 5), pt(-2, 10)]},
                          {"name": "b", "trajectory": [pt(-8, 20)]}]}
    [row] = equal_learning(metrics)  # computed by eval, stored in metrics.json
    assert row["level"] == pytest.approx(10) and row["a_general_eval"] == pytest.approx(-2)
    assert row["b_general_eval"] == pytest.approx(-4)
    [line] = equal_learning_lines({"equal_learning": [row]})  # the report only words it
    assert "+10.0 points of learning" in line and "-2.0 points for a" in line and "-4.0 for b" in line


# ---------------------------------------------------------------- changed facts and advice


def test_update_probes_score_newest_stale_neither_and_rag_newest(tmp_path, tiny_model, embedder):
    """Two dated filings of one company; update probes whose answer changed. The base model's
    outcomes fall in the three classes, and RAG restricted to the newest filing retrieves
    only its chunks."""
    from kbake.eval.updates import newest_documents, outcome

    d = tmp_path / "docs"
    d.mkdir()
    for year, sales, plants in ((2024, "$1,642.8 million", "four"), (2025, "$1,842.6 million", "five")):
        (d / f"acme-{year}.txt").write_text(
            f"Annual report for the fiscal year ended September 27, {year}.\n\n"
            f"Acme's revenue was {sales} in fiscal {year}. Acme runs {plants} membrane plants in Denmark.")
    run = RunDir.at(tmp_path / "run")
    ingest([str(d)], run, IngestArgs(tokenizer=tiny_model), progress=False)
    chunks = read_chunks(run.chunks)
    newest = newest_documents(chunks)
    assert newest and all(c["as_of"] == "2025-09-27" for c in chunks if c["chunk_id"] in newest)
    probes = [
        {"id": "u1", "question": "What was Acme's revenue in its latest fiscal year?", "answer": "$1,842.6 million",
         "distractors": ["$1,642.8 million", "$2,011.0 million", "$904.3 million"], "reference": "$1,842.6 million",
         "as_of": "2025-09-27", "stale": [{"as_of": "2024-09-28", "value": "$1,642.8 million"}], "split": "test"},
        {"id": "u2", "question": "How many membrane plants does Acme run?", "answer": "five",
         "distractors": ["four", "two", "nine"], "reference": "five", "as_of": "2025-09-27",
         "stale": [{"as_of": "2024-09-28", "value": "four"}], "split": "test"},
        {"id": "t1", "question": "Where are Acme's plants?", "answer": "Denmark", "distractors": ["Chile", "Japan", "Peru"],
         "reference": "Denmark", "split": "test"},
    ]
    run.probes.write_text("\n".join(json.dumps(p) for p in probes) + "\n")
    recipe = Recipe(eval=EvalArgs(base_model=tiny_model, general_paragraphs=2, general_questions=1, novel_passages=2,
                                  general_eval_items=2, general_eval_sets=["arc_easy"], short_answer_tokens=4, rag_k=1))
    metrics = evaluate(run, recipe, progress=False, embedder=embedder)
    up = metrics["models"][0]["updates"]
    assert set(up) == {"closed_book", "rag", "rag_newest"} and up["closed_book"]["n"] == 2
    for u in up.values():
        assert sum(u[o] for o in ("newest", "stale", "neither")) == pytest.approx(1.0)
        assert all(0 <= u[f"{o}_ci"][0] <= u[o] <= u[f"{o}_ci"][1] <= 1 for o in ("newest", "stale", "neither"))
    read = {p.id: p for p in read_probes(run.probes)}
    assert outcome(read["u1"], "$1,642.8 million") == "stale" and outcome(read["u1"], "$904.3 million") == "neither"
    md = (run.eval_dir / "report.md").read_text()
    assert "Changed facts (2 test questions whose answer changed)" in md and "RAG over the newest documents" in md
    assert "## Bake or retrieve?" in md and "Nothing was baked yet" in md


def test_stale_values_must_be_among_the_options(tmp_path):
    p = tmp_path / "probes.jsonl"
    p.write_text(json.dumps({"id": "x", "question": "q", "answer": "a", "distractors": ["b", "c", "d"], "reference": "a",
                             "stale": [{"as_of": "2024-01-01", "value": "z"}]}) + "\n")
    with pytest.raises(ValueError, match="probe x.*among the distractors"):
        read_probes(p)


def _advice_metrics(base_closed: int, lora_closed: int, base_rag: int, lora_rag: int, n: int = 40,
                    general_after: int = 20) -> dict:
    """Metrics as eval writes them, from counts of right answers over n test probes."""
    from kbake.eval.intervals import paired_bootstrap

    def right(k):
        return [i < k for i in range(n)]

    cols = {"base": {"closed": right(base_closed), "rag": right(base_rag)},
            "lora": {"closed": right(lora_closed), "rag": right(lora_rag)}}
    per_probe = [{"id": f"p{i}", "split": "test", "models": {m: {k: v[i] for k, v in c.items()} for m, c in cols.items()}}
                 for i in range(n)]
    flat = [1.0] * 20 + [0.0] * 20
    after = [1.0] * general_after + [0.0] * (40 - general_after)
    return {"provenance": {"seed": 0}, "probes": {"learning_kind": None}, "per_probe": per_probe, "source_tokens": 5000,
            "models": [{"name": "base", "closed_book": {"acc": base_closed / n}, "rag": {"acc": base_rag / n}},
                       {"name": "lora", "closed_book": {"acc": lora_closed / n}, "rag": {"acc": lora_rag / n},
                        "train_seconds": 600.0,
                        "vs_base": {"closed_book": paired_bootstrap(right(base_closed), right(lora_closed)),
                                    "general_eval": paired_bootstrap(flat, after)}}]}


@pytest.mark.parametrize("counts,verdict", [
    ((10, 11, 15, 16), "**Retrieve.** Baking taught nothing beyond noise"),  # +1 probe: inside its interval
    ((10, 30, 15, 30, 40, 12), "**Retrieve, or bake with care.**"),  # learned, but 8 of 40 general items lost
    ((10, 30, 15, 30), "**Bake.**"),
    ((10, 30, 15, 38), "**Both.**"),
    ((5, 15, 35, 34), "**Retrieve.** Baking learned, but RAG on the base model answers more"),
    ((10, 30, 29, 30), "**Either; retrieve if the documents change.**"),
])
def test_advice_follows_the_measured_intervals(counts, verdict):
    from kbake.eval.decide import decide
    from kbake.eval.report import advice

    m = _advice_metrics(*counts)
    lines = advice(m)
    assert lines[0].startswith(verdict), lines[0]
    assert "s per 1k source tokens" in lines[1] and "120.0 s per 1k" in lines[1]
    assert decide(m)["chosen_on"] == "test" and "no dev probes" in lines[0]


def test_advice_speaks_for_the_model_dev_chose_not_the_best_test_figure():
    """Two trained models: 'lucky' has the higher test change, 'steady' the higher dev change.
    Picking the highest test figure would select on noise; the advice speaks for 'steady'."""
    from kbake.eval.decide import decide
    from kbake.eval.intervals import paired_bootstrap
    from kbake.eval.report import advice

    m = _advice_metrics(10, 30, 15, 30)
    steady = m["models"][1]
    steady["name"] = "steady"
    lucky = {**steady, "name": "lucky", "vs_base": {**steady["vs_base"]}}
    lucky["vs_base"]["closed_book"] = {**steady["vs_base"]["closed_book"], "diff": 0.9}
    right = lambda k: [i < k for i in range(20)]  # noqa: E731
    steady["vs_base"]["dev_closed_book"] = paired_bootstrap(right(5), right(15))
    lucky["vs_base"]["dev_closed_book"] = paired_bootstrap(right(5), right(8))
    m["models"].append(lucky)
    for p in m["per_probe"]:
        p["models"]["steady"] = p["models"].pop("lora")
        p["models"]["lucky"] = p["models"]["steady"]
    d = decide(m)
    assert d["model"] == "steady" and d["chosen_on"] == "dev"
    assert "steady, chosen on dev probes" in advice(m)[0]


def _seed_metrics(models: dict[str, tuple[int, int, int]], n: int = 40, n_dev: int = 20) -> dict:
    """Metrics as eval writes them for trained models given as name: (closed right of n test
    probes, RAG right of them, closed right of n_dev dev probes); the base answers 10, 15 and 5.
    Seed groups and each model's own changes are computed as eval computes them."""
    from kbake.eval.intervals import paired_bootstrap
    from kbake.eval.seeds import pool_seeds

    right = lambda k, m: [i < k for i in range(m)]  # noqa: E731
    cols = {"base": (10, 15, 5), **models}
    per_probe = [{"id": f"t{i}", "split": "test", "kind": "paraphrase",
                  "models": {m: {"closed": right(c, n)[i], "rag": right(r, n)[i]} for m, (c, r, _) in cols.items()}}
                 for i in range(n)]
    per_probe += [{"id": f"d{i}", "split": "dev", "kind": "paraphrase",
                   "models": {m: {"closed": right(d, n_dev)[i], "rag": None} for m, (_, _, d) in cols.items()}}
                  for i in range(n_dev)]
    general = [{"id": f"g{i}", "models": {m: {"correct": i < 20} for m in cols}} for i in range(40)]
    out = [{"name": "base", "closed_book": {"acc": 10 / n}, "rag": {"acc": 15 / n}}]
    for m, (c, r, d) in models.items():
        out.append({"name": m, "closed_book": {"acc": c / n}, "rag": {"acc": r / n}, "train_seconds": 60.0,
                    "vs_base": {"closed_book": paired_bootstrap(right(10, n), right(c, n)),
                                "dev_closed_book": paired_bootstrap(right(5, n_dev), right(d, n_dev)),
                                "general_eval": paired_bootstrap([1.0] * 20 + [0.0] * 20, [1.0] * 20 + [0.0] * 20)}})
    m = {"provenance": {"seed": 0}, "probes": {"learning_kind": None}, "per_probe": per_probe, "source_tokens": 5000,
         "models": out, "general_eval_items": general}
    m["seed_groups"] = pool_seeds(m)
    return m


def test_advice_pools_a_seed_group_instead_of_its_luckiest_seed():
    """a-s0 learns (30 of 40 against the base's 10) and has the best dev change of any model; a-s1
    and a-s2 learn nothing. The recipe is the group: pooled, its learning interval reaches zero
    (resampled seeds are often s1 and s2 only), so the advice is Retrieve where a-s0 alone
    would have said Bake. A model in no group still competes on its own dev change."""
    from kbake.eval.decide import decide
    from kbake.eval.report import advice

    m = _seed_metrics({"a-s0": (30, 30, 19), "a-s1": (10, 15, 5), "a-s2": (10, 15, 5), "b": (12, 15, 8)})
    d = decide(m)
    assert d["model"] == "a" and d["models"] == ["a-s0", "a-s1", "a-s2"] and d["chosen_on"] == "dev"
    assert d["learning"] == m["seed_groups"][0]["changes"]["closed_book"] and d["learning"]["seeds"] == 3
    assert d["learning"]["lo"] <= 0 < d["learning"]["diff"] and d["verdict"] == "retrieve_no_learning"
    line = advice(m)[0]
    assert line.startswith("**Retrieve.** Baking taught nothing") and "a, 3 seeds pooled: a-s0, a-s1, a-s2; chosen on dev probes" in line
    # Without the weak seeds, a-s0 stands alone and speaks as itself.
    alone = _seed_metrics({"a-s0": (30, 30, 19), "b": (12, 15, 8)})
    assert decide(alone)["model"] == "a-s0" and decide(alone)["verdict"] == "bake"
    # A single model whose dev change beats the group's mean is chosen over the group.
    m = _seed_metrics({"a-s0": (30, 30, 19), "a-s1": (10, 15, 5), "a-s2": (10, 15, 5), "b": (30, 38, 12)})
    assert decide(m)["model"] == "b" and decide(m)["models"] == ["b"]


def test_advice_on_a_seed_group_tests_the_pooled_rag_intervals():
    """Every seed learns and answers RAG's 15 with retrieval on top at 38 of 40: trained+RAG beats
    base RAG beyond noise, pooled, so the group's verdict is Both, each interval carrying 3 seeds."""
    from kbake.eval.decide import decide
    from kbake.eval.report import advice
    from kbake.eval.results import Advice

    m = _seed_metrics({f"a-s{k}": (30, 38, 15) for k in range(3)})
    d = decide(m)
    assert d["verdict"] == "both" and d["model"] == "a"
    for key in ("learning", "closed_minus_rag", "both_minus_rag", "both_minus_closed"):
        assert d[key]["seeds"] == 3, key
    assert abs(d["both_minus_rag"]["diff"] - 23 / 40) < 1e-9 and abs(d["both_minus_closed"]["diff"] - 8 / 40) < 1e-9
    Advice.model_validate(d)  # what metrics.json stores
    lines = advice(m)
    assert lines[0].startswith("**Both.**") and "Cost: a trained in 1.0 min per seed" in lines[1]


def test_a_change_within_noise_says_what_it_could_have_missed():
    """11 vs 10 right of 40: within noise, and the set misses changes below 2.80 * sqrt(1/40) / sqrt(40) = 7.0
    points; 30 vs 10 is beyond noise."""
    from kbake.eval.intervals import what_it_detects
    from kbake.eval.report import detect_rows

    for (b, n_right), reading in [((10, 11), "within noise: a true change smaller than ±7.0 points"), ((10, 30), "beyond noise")]:
        m = _advice_metrics(b, n_right, 15, 16)
        m["models"][1]["detects"] = what_it_detects(m["models"][1]["vs_base"], ["closed_book", "closed_book_fact_qa"])
        header, rows = detect_rows(m)
        assert len(rows) == 1 and rows[0][:3] == ["lora", "all test probes", "40"] and rows[0][5].startswith(reading), rows


def test_batched_scoring_gives_the_same_scores(tiny_model):
    """Short prompts of different lengths with different option counts, scored as left-padded
    batches (a group smaller than the set, so padding and grouping both happen), must score as
    each prompt alone."""
    model, tok = load_causal_lm(tiny_model)
    texts = ["Question: where?\nAnswer:", "Q: a much longer question about the membranes and the foundry?\nAnswer:",
             "Why?", "Question: which city hosts the plant that makes the membranes for the pump?\nAnswer:", "Hm"]
    prefixes = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    opts = [option_ids(tok, o, eos=False) for o in
            [[" Aarhus", " Osaka"], [" Muncie, Indiana", " Chennai", " x", " the city of Osaka"], [" yes", " no", " maybe so"],
             [" Aarhus, Denmark", " Osaka"], [" a", " b"]]]
    got = score_batched(model, prefixes, opts, tok.pad_token_id, batch_size=3)
    for pre, o, g in zip(prefixes, opts, got):
        assert len(g) == len(o)
        for (a, n), (b, m) in zip(g, score_separately(model, pre, o)):
            assert n == m and a == pytest.approx(b, abs=1e-4)


def test_sft_then_rl_is_compared_with_its_start_and_tiny_has_its_row(tmp_path, tiny_model, embedder):
    """SFT (lora) then GRPO `--from` it, and a TinyLoRA model: the report sets the RL model
    against the SFT model it started from (paired, with counts), and the tiny row carries
    its exact parameter count."""
    run = small_run(tmp_path / "run", tiny_model)
    train(run, tiny_recipe(tiny_model, "lora", epochs=1), name="sft", progress=False)
    train(run, tiny_recipe(tiny_model, "grpo", init="sft", max_steps=1, batch_size=2, grpo_num_generations=2,
                           grpo_max_completion_length=4, lora_r=4, lora_alpha=8), name="sft-grpo", progress=False)
    tiny = train(run, tiny_recipe(tiny_model, "tiny", tiny_params=7, max_steps=2), name="tiny", progress=False)
    recipe = Recipe(eval=EvalArgs(base_model=tiny_model, general_paragraphs=2, general_questions=0, novel_passages=2,
                                  general_eval_items=4, general_eval_sets=["arc_easy"], short_answers=False,
                                  batch_size=8))
    metrics = evaluate(run, recipe, progress=False, embedder=embedder)
    by = {m["name"]: m for m in metrics["models"]}
    assert set(by) == {"base", "sft", "sft-grpo", "tiny"}
    vi = by["sft-grpo"]["vs_init"]["closed_book"]
    assert vi["diff"] == pytest.approx(by["sft-grpo"]["closed_book"]["acc"] - by["sft"]["closed_book"]["acc"])
    assert "vs_init" not in by["sft"] and by["tiny"]["trainable_params"] == tiny["trainable_params"] == 7
    md = (run.eval_dir / "report.md").read_text()
    assert "Against **sft**, the model it started from" in md
    assert any(line.startswith("| tiny | tiny |") and "| 7 |" in line for line in md.splitlines())

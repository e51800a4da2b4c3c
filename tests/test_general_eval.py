"""The general-eval sets and the novel: shipped whole, never in the replay data, scored
with the probes' scorer; probe splits read, checked and assigned."""

from __future__ import annotations

import json
import re

import pytest

from kbake.eval.general_eval import SETS, load_set, novel_passages, prompt_and_options, score_items
from kbake.run import Probe, read_probes
from kbake.sample import general_paragraphs

NGRAM = 13  # the contamination test of GPT-3 (Brown et al. 2020): a shared 13-word run


def _grams(text: str) -> set[str]:
    w = re.findall(r"[a-z0-9]+", text.lower())
    return {" ".join(w[i : i + NGRAM]) for i in range(len(w) - NGRAM + 1)}


def test_sets_are_shipped_whole():
    for s in SETS:
        items = load_set(s)
        assert len(items) == 500 and len({i["id"] for i in items}) == 500
        for it in items:
            assert it["source"] == s and 0 <= it["answer"] < len(it["choices"])
    assert len(load_set("piqa", 7)) == 7
    with pytest.raises(ValueError, match="unknown general-eval set"):
        load_set("mmlu")


def test_no_general_eval_item_or_novel_passage_is_in_the_replay_data():
    """Forgetting measured on text the model was trained on would hide it: no 13-word run of
    any general-eval item (question + choices) or novel passage occurs in the replay paragraphs."""
    replay = set().union(*(_grams(p) for p in general_paragraphs("replay")))
    replay_text = " ".join(general_paragraphs("replay"))
    for s in SETS:
        for it in load_set(s):
            assert not _grams(it["question"] + " " + " ".join(it["choices"])) & replay, it["id"]
            if len(it["question"]) >= 40:  # and no longer question verbatim (short ones are common phrases)
                assert it["question"][:60] not in replay_text, it["id"]
    for p in novel_passages(200):
        assert not _grams(p) & replay


def test_novel_passages_are_fixed_and_spread():
    a, b = novel_passages(40), novel_passages(40)
    assert a == b and len(a) == 40 and len(set(a)) == 40
    assert all(len(p) >= 500 for p in a)


def test_hellaswag_is_scored_as_a_continuation():
    hs = load_set("hellaswag", 1)[0]
    prefix, opts = prompt_and_options(hs)
    assert prefix == hs["question"] and opts[0] == " " + hs["choices"][0]
    arc = load_set("arc_easy", 1)[0]
    prefix, _ = prompt_and_options(arc)
    assert prefix.startswith("Question: ") and prefix.endswith("\nAnswer:")


def test_score_items_picks_the_option_the_model_prefers(tiny_model):
    """Bias the tiny model towards one choice's tokens: that choice wins with a positive margin."""
    import torch

    from kbake.models import load_causal_lm

    model, tok = load_causal_lm(tiny_model)
    item = {"id": "x", "source": "arc_easy", "question": "Which city?", "choices": ["Osaka", "Aarhus", "Lima"], "answer": 1}
    bias = torch.zeros(model.config.vocab_size)
    bias[tok(" Aarhus", add_special_tokens=False)["input_ids"]] = 30.0
    model.lm_head.register_forward_hook(lambda m, i, o: o + bias)
    [r] = score_items(model, tok, [item])
    assert r["correct"] and r["margin"] > 0 and r["set"] == "arc_easy"


def test_probe_split_is_read_and_checked(tmp_path):
    path = tmp_path / "probes.jsonl"
    rows = [{"id": "a", "question": "q", "answer": "x", "distractors": ["y"], "reference": "x"},
            {"id": "b", "question": "q", "answer": "x", "distractors": ["y"], "reference": "x", "split": "dev"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [p.split for p in read_probes(path)] == ["test", "dev"]  # no field: test
    rows[1]["split"] = "train"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ValueError, match=r"probes.jsonl: line 2 \(probe b\): split must be 'dev' or 'test'"):
        read_probes(path)


def test_assign_splits_keeps_chunks_whole():
    from kbake.synth import assign_splits

    probes = [Probe(id=f"p{i}", question="q", answer="a", distractors=[], reference="a", chunk_id=f"c{i // 2}")
              for i in range(20)]
    assign_splits(probes, 0.5, seed=3)
    by_chunk = {}
    for p in probes:
        by_chunk.setdefault(p.chunk_id, set()).add(p.split)
    assert all(len(s) == 1 for s in by_chunk.values())
    assert sum(p.split == "dev" for p in probes) == 10
    one = [Probe(id="p", question="q", answer="a", distractors=[], reference="a", chunk_id="c")]
    assign_splits(one, 0.5, seed=0)
    assert one[0].split == "test"  # a lone probe is never taken from the reported split

"""A synth kind is one module behind one interface: the shared code runs a kind it has never
heard of once it is registered, and refuses unknown names with one line naming the key."""

from __future__ import annotations

import pytest

from kbake.config import IngestArgs, SynthArgs
from kbake.ingest import ingest
from kbake.run import RunDir, SynthItem, read_items
from kbake.synth import KINDS, synth
from kbake.synth.kind import KindReport, SynthContext, SynthKind


def shout(ctx: SynthContext, rep: KindReport):
    """A toy kind: each chunk in capitals (no LLM call)."""
    items = [SynthItem(id=f"shout-{c['chunk_id']}", kind="shout", doc_id=c["doc_id"], chunk_ids=[c["chunk_id"]],
                       generator="shout", prompt_version="shout.v1", model="none", text=c["text"].upper())
             for cs in ctx.by_doc.values() for c in cs]
    return [(it, "") for it in items], [], 0


def test_a_registered_kind_runs_through_the_shared_code(tmp_path, tiny_model, monkeypatch):
    doc = tmp_path / "note.txt"
    doc.write_text("The pump plant in Ohio opened in 2019. It makes 400 pumps a week.")
    rd = RunDir.at(tmp_path / "run")
    ingest([str(doc)], rd, IngestArgs(tokenizer=tiny_model), progress=False)
    monkeypatch.setitem(KINDS, "shout", SynthKind("shout", shout, templated=True))
    report = synth(rd, SynthArgs(llm=f"local:{tiny_model}", kinds=["shout"]), progress=False)
    assert report.kinds["shout"].items == 1 and report.calls == 0
    assert read_items(rd.synth_dir / "shout.jsonl")[0].text.startswith("THE PUMP PLANT")


def test_unknown_kinds_and_corpora_name_their_key(tmp_path, tiny_model):
    from kbake.config import Recipe
    from kbake.train import train

    rd = RunDir.at(tmp_path / "run")
    (tmp_path / "n.txt").write_text("Some text about pumps. " * 10)
    ingest([str(tmp_path / "n.txt")], rd, IngestArgs(tokenizer=tiny_model), progress=False)
    with pytest.raises(ValueError, match="synth.kinds: unknown kind 'qaa'; allowed: qa, extract"):
        synth(rd, SynthArgs(llm=f"local:{tiny_model}", kinds=["qaa"]), progress=False)
    with pytest.raises(ValueError, match="train.data: unknown corpus 'qaa'; allowed: raw, qa"):
        train(rd, Recipe(train=dict(method="lora", base_model=tiny_model, data=["qaa"], max_steps=1)), progress=False)

"""The shipped sample is the yardstick of every result: check it is what it claims to be."""

import re
from collections import Counter

import pytest

from kbake.run import read_jsonl, read_probes
from kbake.sample import sample_documents, sample_probes

# Both splits of the sample's probe file, test and dev, must pass the same checks.
SPLITS = pytest.mark.parametrize("split", ["test", "dev"])


def _split(split: str) -> list[dict]:
    return [p for p in read_jsonl(sample_probes()) if p["split"] == split]


def test_one_probe_file_with_both_splits():
    probes = read_probes(sample_probes())
    assert Counter(p.split for p in probes) == {"test": 125, "dev": 68}


def test_tenk_is_long_enough(sample_text):
    assert len(sample_text.split()) >= 3000


@SPLITS
def test_probes_are_well_formed(sample_text, split):
    probes = _split(split)
    assert len(probes) >= 60
    html = sample_documents()[0].read_text()
    ids = set(re.findall(r'id="([^"]+)"', html))
    for p in probes:
        assert set(p) >= {"id", "kind", "question", "answer", "distractors", "reference", "passage_id", "evidence"}
        assert p["kind"] in {"verbatim", "paraphrase"}
        assert len(p["distractors"]) == 3 and p["answer"] not in p["distractors"]
        assert len(set(p["distractors"])) == 3
        assert p["passage_id"] in ids, p["id"]
        assert p["evidence"] in sample_text, p["id"]  # the answer's passage is really in the document
    kinds = Counter(p["kind"] for p in probes)
    assert kinds["paraphrase"] >= len(probes) / 2
    assert len({p["id"] for p in probes}) == len(probes)


@SPLITS
def test_paraphrased_probes_do_not_copy_the_document(sample_text, split):
    """A paraphrased question shares no 6-word run with the document."""
    words = sample_text.lower().split()
    grams = {" ".join(words[i : i + 6]) for i in range(len(words) - 5)}
    for p in _split(split):
        if p["kind"] != "paraphrase":
            continue
        q = p["question"].lower().rstrip("?").split()
        hits = [" ".join(q[i : i + 6]) for i in range(len(q) - 5) if " ".join(q[i : i + 6]) in grams]
        assert not hits, (p["id"], hits)


def test_dev_probes_ask_about_other_facts_than_the_held_out_probes():
    """Tuning on the dev set must not be tuning on the reported probes: no shared question,
    no shared answering quote, no shared id."""
    test, dev = _split("test"), _split("dev")
    for key in ("id", "question"):
        assert not {p[key] for p in test} & {p[key] for p in dev}, key
    for d in dev:  # a quote contained in the other (equal ones included) answers the same fact
        assert not any(d["evidence"] in t["evidence"] or t["evidence"] in d["evidence"] for t in test), d["id"]

"""benchmarks/settings_dev.py: settings pooled over seeds and compared on dev against the
reference; the rule keeps the reference unless a setting beats it beyond its interval."""

from __future__ import annotations

import pytest
from conftest import load_benchmark

settings_dev = load_benchmark("settings_dev")


def _metrics(right: dict[str, int], n: int = 60) -> dict:
    """n dev and n test probes and n general-eval items; model NAME answers its first right[NAME] of each."""
    names = ["base", *right]
    per_probe = [{"id": f"{split}-{i}", "split": split, "kind": "paraphrase",
                  "models": {m: {"closed": i < right.get(m, 10)} for m in names}}
                 for split in ("dev", "test") for i in range(n)]
    items = [{"id": f"g{i}", "set": "arc_easy", "models": {m: {"correct": i < 30} for m in names}} for i in range(n)]
    models = [{"name": m, "vs_base": {"novel_ppl": {"diff": 0.01 * k}}} for k, m in enumerate(names)]
    return {"models": models, "per_probe": per_probe, "general_eval_items": items, "provenance": {}}


def test_a_setting_that_beats_the_reference_on_dev_is_chosen():
    m = _metrics({"lo-s0": 20, "lo-s1": 20, "lo-s2": 20, "hi-s0": 45, "hi-s1": 45, "hi-s2": 45})
    res = settings_dev.compare(m, ["lo", "hi"], "lo")
    assert res["lo"]["models"] == ["lo-s0", "lo-s1", "lo-s2"]
    assert res["lo"]["dev"]["accuracy"] == pytest.approx(20 / 60)
    assert res["lo"]["dev"]["vs_base"]["diff"] == pytest.approx(10 / 60)
    assert res["lo"]["dev"]["vs_reference"] is None
    assert res["hi"]["dev"]["vs_reference"]["diff"] == pytest.approx(25 / 60)
    assert res["hi"]["test_paraphrase"]["vs_base"]["diff"] == pytest.approx(35 / 60)
    assert res["hi"]["general_eval"]["vs_reference"]["diff"] == pytest.approx(0.0)
    assert res["hi"]["novel_ppl_per_seed"] == pytest.approx([0.04, 0.05, 0.06])
    assert settings_dev.decide(res, "lo")["chosen"] == "hi"


def test_the_reference_stays_within_noise_and_when_the_winner_forgets():
    close = settings_dev.compare(_metrics({"a-s0": 20, "a-s1": 20, "b-s0": 21, "b-s1": 22}), ["a", "b"], "a")
    assert settings_dev.decide(close, "a")["chosen"] == "a"
    m = _metrics({"a-s0": 20, "a-s1": 20, "b-s0": 50, "b-s1": 50})
    for item in m["general_eval_items"]:
        for name in ("b-s0", "b-s1"):
            item["models"][name]["correct"] = False  # b forgets everything general
    assert settings_dev.decide(settings_dev.compare(m, ["a", "b"], "a"), "a")["chosen"] == "a"
    with pytest.raises(SystemExit, match="no model named c-sSEED"):
        settings_dev.compare(m, ["a", "c"], "a")


def test_one_setting_alone_is_measured_not_chosen():
    res = settings_dev.compare(_metrics({"a-s0": 45, "a-s1": 45, "a-s2": 45}), ["a"], "a")
    assert res["a"]["dev"]["vs_base"]["diff"] == pytest.approx(35 / 60)
    d = settings_dev.decide(res, "a")
    assert d["chosen"] == "a" and d["why"] == "one setting measured: nothing to choose between"


def test_another_runs_models_join_only_when_its_base_answered_identically():
    a = _metrics({"x-s0": 20, "x-s1": 20})
    b = _metrics({"y-s0": 45, "y-s1": 45})
    merged = settings_dev.merge_runs(a, b, "B")
    assert [m["name"] for m in merged["models"]] == ["base", "x-s0", "x-s1", "y-s0", "y-s1"]
    res = settings_dev.compare(merged, ["x", "y"], "x")
    assert res["y"]["dev"]["vs_reference"]["diff"] == pytest.approx(25 / 60)
    assert "y-s0" not in a["per_probe"][0]["models"]  # the first run's dict is left as it was
    b["per_probe"][3]["models"]["base"]["closed"] = not b["per_probe"][3]["models"]["base"]["closed"]
    with pytest.raises(SystemExit, match="answers 1 of 120 per_probe differently"):
        settings_dev.merge_runs(a, b, "B")
    with pytest.raises(SystemExit, match="model names x-s0, x-s1 are in both runs"):
        settings_dev.merge_runs(a, _metrics({"x-s0": 1, "x-s1": 2}), "B")
    c = _metrics({"y-s0": 45}, n=59)
    with pytest.raises(SystemExit, match="not the same items"):
        settings_dev.merge_runs(a, c, "B")

"""metrics.json has types (kbake.eval.results): eval checks what it writes (every end-to-end test
that runs `evaluate` checks a real file), and `kbake report` refuses a file that does not fit,
with one line naming the key."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kbake.cli import app
from kbake.eval.results import Metrics, load_metrics, validate_metrics

CHANGE = {"diff": 0.1, "lo": -0.02, "hi": 0.2, "n": 40, "gained": 6, "lost": 2, "detectable": 0.12}


def minimal() -> dict:
    return json.loads(json.dumps(_minimal()))  # no dict shared between tests or keys


def _minimal() -> dict:
    base = {"name": "base", "method": "base", "closed_book": {"n": 40, "acc": 0.3, "acc_paraphrase": 0.3, "margin": -0.1},
            "rag": {"n": 40, "acc": 0.5}, "dev": None, "general": {"replay_ppl": 20.0, "novel_ppl": 30.0},
            "eval_seconds": 3.0, "eval_parts": {"closed_book": 1.0}, "trainable_params": 0, "train_seconds": 0.0}
    lora = {**base, "name": "lora", "method": "lora", "vs_base": {"closed_book": CHANGE},
            "closed_vs_base_rag": {"all": CHANGE}, "trajectory": [{"step": 6, "learning": CHANGE, "dev_learning": None,
                                                                   "general_eval": None}]}
    return {"rebake": None, "provenance": {"seed": 0}, "source_tokens": 100, "retrieval": {"k": 3}, "general": {},
            "probes": {"n": 40, "n_test": 40, "n_dev": 0, "learning_kind": "paraphrase", "kinds": {"paraphrase": 40}},
            "models": [base, lora], "per_probe": [], "general_eval_items": [], "seed_groups": [],
            "advice": {"verdict": "retrieve_no_learning", "model": "lora", "chosen_on": "test", "learning": CHANGE},
            "findings": {"lora": {"learning_beyond_noise": False, "closed_vs_base_rag": "below"}}, "equal_learning": []}


def test_a_fitting_metrics_passes_unchanged_and_types_its_changes():
    m = minimal()
    assert validate_metrics(m) is m
    typed = Metrics.model_validate(m)
    assert typed.models[1].vs_base["closed_book"].hi == pytest.approx(0.2)
    assert typed.advice.verdict == "retrieve_no_learning"


@pytest.mark.parametrize("break_it, where", [
    (lambda m: m["models"][1]["vs_base"]["closed_book"].pop("hi"), "models.1.vs_base.closed_book.hi"),
    (lambda m: m["advice"].update(verdict="bake it"), "advice.verdict"),
    (lambda m: m["models"][0].update(surprise=1), "models.0.surprise"),
    (lambda m: m["probes"].pop("n_test"), "probes.n_test"),
])
def test_a_file_that_does_not_fit_fails_with_one_line_naming_the_key(tmp_path, break_it, where):
    m = minimal()
    break_it(m)
    path = tmp_path / "run" / "eval" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(m))
    with pytest.raises(ValueError, match=rf"^{path}: {where}: "):
        load_metrics(path)
    res = CliRunner().invoke(app, ["report", str(tmp_path / "run")])
    assert res.exit_code != 0
    assert where in res.output and len(res.output.strip().splitlines()) == 1

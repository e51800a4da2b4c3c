"""Bake, retrieve, or both: the decision of a run, from its paired intervals only, stored in
metrics.json (`advice`) so a program reading the run sees it; the report only words it.

The model it speaks for is chosen on **dev** (the largest dev change of the learning kind),
never by the highest test figure, which would select on noise. Every rule is an interval test
(docs/eval.md, "Bake or retrieve?"), forgetting included.
"""

from __future__ import annotations

from kbake.eval.intervals import beyond_noise, paired_bootstrap


def learning_keys(metrics: dict) -> tuple[str, str]:
    """(vs_base key of the test learning change, of the dev one) for eval's learning kind."""
    k = metrics["probes"].get("learning_kind")
    return (f"closed_book_{k}", f"dev_closed_book_{k}") if k else ("closed_book", "dev_closed_book")


def paired_on_test(metrics: dict, new: tuple[str, str], old: tuple[str, str]) -> dict | None:
    """Paired bootstrap over the test probes of one model/answer path ('closed' or 'rag') against another."""
    pairs = [(p["models"][old[0]].get(old[1]), p["models"][new[0]].get(new[1])) for p in metrics.get("per_probe", [])
             if p["split"] == "test" and old[0] in p["models"] and new[0] in p["models"]]
    pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
    return paired_bootstrap([float(a) for a, _ in pairs], [float(b) for _, b in pairs],
                            seed=metrics["provenance"].get("seed", 0)) if pairs else None


def choose_model(metrics: dict) -> tuple[dict | None, str]:
    """(the trained model the advice speaks for, 'dev' or 'test'): the largest dev learning change;
    on test only when the run has no dev probes (then the report says so)."""
    test_key, dev_key = learning_keys(metrics)
    trained = [m for m in metrics["models"][1:] if (m.get("vs_base") or {}).get(test_key)]
    if not trained:
        return None, "none"
    on_dev = [m for m in trained if m["vs_base"].get(dev_key) or m["vs_base"].get("dev_closed_book")]
    if on_dev:
        return max(on_dev, key=lambda m: (m["vs_base"].get(dev_key) or m["vs_base"]["dev_closed_book"])["diff"]), "dev"
    return max(trained, key=lambda m: m["vs_base"][test_key]["diff"]), "test"


def decide(metrics: dict) -> dict:
    """{verdict, model, chosen_on, learning, forgetting, closed_minus_rag, both_minus_rag,
    both_minus_closed}: the verdict is the first rule whose interval test holds."""
    model, chosen_on = choose_model(metrics)
    if model is None:
        return {"verdict": "nothing_trained", "model": None, "chosen_on": chosen_on}
    test_key, _ = learning_keys(metrics)
    learn = model["vs_base"][test_key]
    forget = model["vs_base"].get("general_eval")
    vs_rag = paired_on_test(metrics, (model["name"], "closed"), ("base", "rag"))
    both_vs_rag = paired_on_test(metrics, (model["name"], "rag"), ("base", "rag"))
    both_vs_closed = paired_on_test(metrics, (model["name"], "rag"), (model["name"], "closed"))
    if not beyond_noise(learn) or learn["diff"] <= 0:
        verdict = "retrieve_no_learning"
    elif forget and forget["hi"] < 0:
        verdict = "retrieve_forgot"
    elif both_vs_rag and both_vs_rag["lo"] > 0 and (not (vs_rag and vs_rag["lo"] > 0)
                                                    or (both_vs_closed and both_vs_closed["lo"] > 0)):
        verdict = "both"  # retrieval on top beats RAG, and closed book alone does not (or retrieval adds to it)
    elif vs_rag and vs_rag["lo"] > 0:
        verdict = "bake"
    elif vs_rag and vs_rag["hi"] >= 0:
        verdict = "either"
    else:
        verdict = "retrieve_rag_better"
    return {"verdict": verdict, "model": model["name"], "chosen_on": chosen_on, "learning": learn, "forgetting": forget,
            "closed_minus_rag": vs_rag, "both_minus_rag": both_vs_rag, "both_minus_closed": both_vs_closed}

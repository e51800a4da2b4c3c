"""What a run's numbers decide, from its paired intervals only, stored in metrics.json so a
program reading the run sees it; the report only words it: bake, retrieve, or both (`advice`),
what each trained model's changes show (`findings`), and methods at equal learning
(`equal_learning`).

The model it speaks for is chosen on **dev** (the largest dev change of the learning kind),
never by the highest test figure, which would select on noise; a recipe trained on several seeds
competes as one, with its changes pooled over the seeds, not as its luckiest seed. Every rule is an interval test
(docs/eval.md, "Bake or retrieve?"), forgetting included.
"""

from __future__ import annotations

from itertools import combinations

from kbake.eval.intervals import beyond_noise, items_to_see, paired_bootstrap


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


def candidates(metrics: dict) -> list[dict]:
    """What the advice may speak for, as {name, models, changes}: each seed group (NAME-s0, NAME-s1,
    …) with its pooled changes (metrics' `seed_groups`), and each trained model in no group with
    its own. A seed of a group does not compete on its own: the best of three seeds on dev is
    selected on seed noise, the group's mean is the recipe's."""
    grouped = {n for g in metrics.get("seed_groups") or [] for n in g["models"]}
    out = [{"name": g["group"], "models": list(g["models"]), "changes": g["changes"]}
           for g in metrics.get("seed_groups") or []]
    return out + [{"name": m["name"], "models": [m["name"]], "changes": m.get("vs_base") or {}}
                  for m in metrics["models"][1:] if m["name"] not in grouped]


def choose_model(metrics: dict) -> tuple[dict | None, str]:
    """(the candidate the advice speaks for, 'dev' or 'test'): the largest dev learning change;
    on test only when the run has no dev probes (then the report says so)."""
    test_key, dev_key = learning_keys(metrics)
    trained = [c for c in candidates(metrics) if c["changes"].get(test_key)]
    if not trained:
        return None, "none"
    dev = lambda c: c["changes"].get(dev_key) or c["changes"].get("dev_closed_book")  # noqa: E731
    on_dev = [c for c in trained if dev(c)]
    if on_dev:
        return max(on_dev, key=lambda c: dev(c)["diff"]), "dev"
    return max(trained, key=lambda c: c["changes"][test_key]["diff"]), "test"


def decide(metrics: dict) -> dict:
    """{verdict, model, models, chosen_on, learning, forgetting, closed_minus_rag, both_minus_rag,
    both_minus_closed}: the verdict is the first rule whose interval test holds. For a seed group
    every interval is pooled over its seeds (kbake.eval.seeds); `models` names the seeds."""
    chosen, chosen_on = choose_model(metrics)
    if chosen is None:
        return {"verdict": "nothing_trained", "model": None, "chosen_on": chosen_on}
    test_key, _ = learning_keys(metrics)
    ch = chosen["changes"]
    learn = ch[test_key]
    forget = ch.get("general_eval")
    if len(chosen["models"]) > 1:
        vs_rag, both_vs_rag, both_vs_closed = ch.get("closed_vs_base_rag"), ch.get("trained_rag"), ch.get("trained_rag_vs_closed")
    else:
        name = chosen["name"]
        vs_rag = paired_on_test(metrics, (name, "closed"), ("base", "rag"))
        both_vs_rag = paired_on_test(metrics, (name, "rag"), ("base", "rag"))
        both_vs_closed = paired_on_test(metrics, (name, "rag"), (name, "closed"))
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
    return {"verdict": verdict, "model": chosen["name"], "models": chosen["models"], "chosen_on": chosen_on,
            "learning": learn, "forgetting": forget, "closed_minus_rag": vs_rag, "both_minus_rag": both_vs_rag,
            "both_minus_closed": both_vs_closed}


def findings(metrics: dict) -> dict[str, dict]:
    """Per trained model with a learning change: whether it cleared its interval, where its closed
    book stands against RAG on the base, what general-eval shows (forgot / gained / no change) and,
    when within noise, how many items a 2-point drop would need at its disagreement rate."""
    test_key, _ = learning_keys(metrics)
    rag = metrics["models"][0]["rag"]["acc"]
    out = {}
    for m in metrics["models"][1:]:
        vs = m.get("vs_base") or {}
        if vs.get(test_key) is None:
            continue
        acc = m["closed_book"]["acc"]
        f = {"learning_beyond_noise": beyond_noise(vs[test_key]),
             "closed_vs_base_rag": "above" if acc > rag else "below" if acc < rag else "equal"}
        ge = vs.get("general_eval")
        if ge:
            f["general_eval"] = "forgot" if ge["hi"] < 0 else "gained" if ge["lo"] > 0 else "no_change"
            f["items_for_2pt_drop"] = (items_to_see((ge["gained"] + ge["lost"]) / ge["n"], 0.02)
                                       if not beyond_noise(ge) else None)
        init = (m.get("vs_init") or {}).get(test_key)
        if init:
            f["vs_init_beyond_noise"] = beyond_noise(init)
        out[m["name"]] = f
    return out


def _cross(points: list[tuple[float, float]], level: float) -> float | None:
    """x where the line through `points` (x, y), in training order, first reaches y = level."""
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if y0 < level <= y1:
            return x0 + (x1 - x0) * (level - y0) / (y1 - y0)
    return None


def equal_learning(metrics: dict) -> list[dict]:
    """Per pair of models with learning lines (checkpoints' learning and general-eval changes,
    from (0, 0)): at the learning level both reach, the general-eval change of each, interpolated
    linearly along its line (methods compared at matched learning, as Lin et al. 2025 do).
    Points in percentage points; `level` is None when one of them learns nothing."""
    lines = {}
    for m in metrics["models"][1:]:
        traj = [p for p in m.get("trajectory") or [] if p.get("learning") and p.get("general_eval")]
        if traj:
            lines[m["name"]] = [(0.0, 0.0)] + [(100 * p["general_eval"]["diff"], 100 * p["learning"]["diff"]) for p in traj]
    out = []
    for a, b in combinations(sorted(lines), 2):
        level = min(max(y for _, y in lines[a]), max(y for _, y in lines[b]))
        row = {"a": a, "b": b, "level": None, "a_general_eval": None, "b_general_eval": None,
               "a_checkpoints": len(lines[a]) - 1, "b_checkpoints": len(lines[b]) - 1}
        if level > 0:
            row.update(level=level, a_general_eval=_cross(lines[a], level), b_general_eval=_cross(lines[b], level))
        out.append(row)
    return out

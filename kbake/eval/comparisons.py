"""Change statistics for `kbake eval`: every change of a trained model against the base with
its paired bootstrap interval, closed book against RAG on the base, the knowledge map, row and
year binding on fact probes, which probe kind learning is judged on, and a re-bake's time
against a retrain."""

from __future__ import annotations

from kbake.eval.intervals import paired_bootstrap, paired_bootstrap_ppl
from kbake.eval.model_scores import probe_kinds
from kbake.eval.updates import outcome

LEARNING_KINDS = ("fact_qa", "paraphrase")
"""Kinds learning is judged on, first present wins: fact probes of QA-trained facts asked in new
wordings (hundreds per filing: intervals of a few points), then paraphrased hand-written probes
(answering a reworded question is knowing, verbatim is recall of the text)."""


def learning_kind(probes) -> str | None:
    """The probe kind learning is judged on (`LEARNING_KINDS`), else all probes (None)."""
    return next((k for k in LEARNING_KINDS if any(p.kind == k and p.split == "test" for p in probes)), None)


def knowledge_map(probes, base_closed: list[dict], closed: list[dict]) -> list[dict]:
    """Per part of the document (a probe's `group`: a fact probe's table), test probes answered
    closed book by the base and by the model, held-out facts and QA-trained facts apart: which
    parts of the filing got in. Empty when no probe names a group."""
    rows: dict[str, dict] = {}
    for p, b, m in zip(probes, base_closed, closed):
        if not p.group or p.split != "test":
            continue
        part = "heldout" if p.kind == "fact_heldout" else "qa" if p.kind == "fact_qa" else "other"
        r = rows.setdefault(p.group, {"group": p.group, **{f"{k}_{x}": 0 for k in ("heldout", "qa", "other")
                                                            for x in ("n", "base", "model")}})
        r[f"{part}_n"] += 1
        r[f"{part}_base"] += int(b["correct"])
        r[f"{part}_model"] += int(m["correct"])
    return sorted(rows.values(), key=lambda r: -(r["heldout_n"] + r["qa_n"]))


def year_binding(probes, closed: list[dict], row_values: dict[str, set[str]], seed: int) -> dict:
    """On fact probes, per kind and split: how often the closed-book choice is a value of the
    probe's own table row (the model knows the line item's values), and among those how often it
    is the asked period's against the chance of a blind pick among the row's values offered
    (1 / their number), with the paired interval of that difference. A model can gain on fact
    probes by ruling out the neighbouring row alone; binding the year is the rest (docs/results.md,
    "Which year"). `row_only_accuracy` is what a model that always picks one of the row's offered
    values blindly would score: the ceiling of learning the line items without their periods.
    `row_values` maps a row id to its values' digits (kbake.synth.facts.digits)."""
    from kbake.synth.facts import digits

    out: dict = {}
    for kind in ("fact_qa", "fact_heldout"):
        for split in ("test", "dev"):
            sel = [i for i, p in enumerate(probes) if p.kind == kind and p.split == split]
            if not sel:
                continue
            right, chance, blind = [], [], []
            for i in sel:
                p, own = probes[i], row_values.get(probes[i].passage_id, set())
                offered = sum(digits(o) in own for o in [p.answer, *p.distractors])
                blind.append(1.0 / offered if digits(p.answer) in own and offered else 0.0)
                if digits(p.answer) in own and offered > 1 and digits(closed[i]["choice"]) in own:
                    right.append(float(closed[i]["correct"]))
                    chance.append(1.0 / offered)
            out[f"{kind}/{split}"] = {"n": len(sel), "row_only_accuracy": sum(blind) / len(sel),
                                      "in_row": len(right) / len(sel),
                                      "year_in_row": sum(right) / len(right) if right else None,
                                      "chance_in_row": sum(chance) / len(chance) if chance else None,
                                      "year_minus_chance": paired_bootstrap(chance, right, seed=seed)}
    return out


def closed_vs_base_rag(model_items: dict, base_items: dict, probes, seed: int) -> dict:
    """Closed book of a trained model minus RAG on the base model, paired over test probes, for
    all of them and per kind: does the baked model answer without retrieval what retrieval does?"""
    out = {}
    test = [i for i, p in enumerate(probes) if p.split == "test"]
    for k in [None, *probe_kinds(probes)]:
        sel = [i for i in test if k is None or probes[i].kind == k]
        if sel:
            out["all" if k is None else k] = paired_bootstrap([float(base_items["rag"][i]["correct"]) for i in sel],
                                                              [float(model_items["closed"][i]["correct"]) for i in sel],
                                                              seed=seed)
    return out


def changes(model_items: dict, base_items: dict, probes, seed: int) -> dict:
    """Every change against the base model with its paired bootstrap interval."""
    def pick(rows, key, keep):
        return [float(r[key]) for r, p in zip(rows, probes) if keep(p)]

    def on(key_rows, key, keep):
        if key_rows not in model_items:
            return None
        return paired_bootstrap(pick(base_items[key_rows], key, keep), pick(model_items[key_rows], key, keep), seed=seed)

    test = lambda p: p.split == "test"  # noqa: E731
    out = {"closed_book": on("closed", "correct", test), "margin": on("closed", "margin", test)}
    if any(p.stale for p in probes):
        # On changed facts: the newest value's share, and the stale values' share.
        out["update_newest"] = on("closed", "correct", lambda p: test(p) and bool(p.stale))
        if "closed" in model_items:
            upd = [i for i, p in enumerate(probes) if test(p) and p.stale]
            stale = lambda rows: [float(outcome(probes[i], rows[i]["choice"]) == "stale") for i in upd]  # noqa: E731
            out["update_stale"] = paired_bootstrap(stale(base_items["closed"]), stale(model_items["closed"]), seed=seed)
    for k in probe_kinds(probes):
        out[f"closed_book_{k}"] = on("closed", "correct", lambda p, k=k: test(p) and p.kind == k)
    if "rag" in model_items:
        out["trained_rag"] = on("rag", "correct", test)
        out["dev_closed_book"] = on("closed", "correct", lambda p: p.split == "dev")
        out["dev_margin"] = on("closed", "margin", lambda p: p.split == "dev")
        for k in probe_kinds(probes):
            out[f"dev_closed_book_{k}"] = on("closed", "correct", lambda p, k=k: p.split == "dev" and p.kind == k)
    if "general_eval" in model_items:
        b, m = base_items["general_eval"], model_items["general_eval"]
        out["general_eval"] = paired_bootstrap([i["correct"] for i in b], [i["correct"] for i in m], seed=seed)
        out["general_eval_margin"] = paired_bootstrap([i["margin"] for i in b], [i["margin"] for i in m], seed=seed)
        for s in sorted({i["set"] for i in b}):
            out[f"general_eval_{s}"] = paired_bootstrap([i["correct"] for i in b if i["set"] == s],
                                                        [i["correct"] for i in m if i["set"] == s], seed=seed)
    for text in ("replay", "novel"):
        if f"{text}_nll" in model_items:
            out[f"{text}_ppl"] = paired_bootstrap_ppl(base_items[f"{text}_nll"], model_items[f"{text}_nll"],
                                                      base_items[f"{text}_tokens"], seed=seed)
    return {k: v for k, v in out.items() if v is not None}


def rebake_vs_retrain(models: list[dict]) -> dict | None:
    """A re-bake (`train --from`) and a from-scratch model of the same method on the same
    documents (the same ingest round): their training times, for the advice section."""
    for m in models:
        if m.get("init"):
            full = next((o for o in models if o is not m and not o.get("init") and o.get("method") == m.get("method")
                         and o.get("ingest_round") == m.get("ingest_round") and o.get("train_seconds")), None)
            if full and m.get("train_seconds"):
                return {"name": m["name"], "seconds": m["train_seconds"], "full_name": full["name"],
                        "full_seconds": full["train_seconds"]}
    return None

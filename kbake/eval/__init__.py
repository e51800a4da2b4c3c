"""`kbake eval`: did training put the knowledge in, what did it cost, and would plain
retrieval have done as well?

For the base model and every trained model in the run:
- learning: closed-book accuracy on the probes (multiple choice by log-likelihood, and the
  margin of the right option over the best wrong one; short answers by F1/EM), reported
  per split: `test` is the headline, `dev` is for choosing recipes;
- RAG: the same with the top-k retrieved chunks in the prompt;
- forgetting: accuracy on four general multiple-choice sets replay cannot help with
  (`general_eval`), perplexity and KL on a novel and on held-out Wikipedia (the replay
  domain), general QA F1;
- every change against the base model with a paired bootstrap 95% interval and the counts
  of items gained and lost (`intervals`);
- for models that kept snapshots (`train.snapshot_every`), the learning and general-eval
  change at each, for comparing methods at equal learning.
Writes RUN/eval/.

The work is split by job: per-model scoring (`model_scores`), change statistics
(`comparisons`), decisions (`decide`), rendering (`report`); this module orchestrates them and
writes the files.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pyarrow as pa

from kbake.config import Recipe
from kbake.eval.comparisons import changes, closed_vs_base_rag, knowledge_map, learning_kind, rebake_vs_retrain, year_binding
from kbake.eval.decide import decide, equal_learning, findings
from kbake.eval.forgetting import encode_general
from kbake.eval.general_eval import load_set, novel_passages
from kbake.eval.intervals import paired_bootstrap, what_it_detects
from kbake.eval.model_scores import EvalData, evaluate_model, mean, memory_diagnostics, option_order, probe_kinds, score_probes
from kbake.eval.rag import is_fact_hit, is_hit, load_fact_index, load_index
from kbake.eval.results import load_metrics
from kbake.eval.seeds import pool_seeds
from kbake.eval.updates import newest_documents
from kbake.models.generate import SHORT_ANSWER_SUFFIX
from kbake.run import RunDir, atomic_write_json, atomic_write_parquet, make_private_dir, provenance, read_chunks, read_probes, save_stage
from kbake.sample import general_paragraphs, general_questions

__all__ = ["SHORT_ANSWER_SUFFIX", "EvalData", "evaluate", "evaluate_model", "item_rows", "load_metrics", "memory_diagnostics",
           "option_order", "score_probes", "snapshots", "trained_models"]
"""What benchmarks and other programs use; the rest lives in the modules named above."""


def trained_models(run: RunDir, names: list[str]) -> list[Path]:
    """Folders RUN/train/<name>/ that hold a finished model, in name order."""
    from kbake.models.trained import TRAINED_META

    found = sorted(p for p in run.train_dir.glob("*") if (p / "model" / TRAINED_META).exists()) if run.train_dir.exists() else []
    if names:
        missing = [n for n in names if not (run.train_dir / n / "model" / TRAINED_META).exists()]
        if missing:
            raise FileNotFoundError(f"{run.train_dir / missing[0]}: no trained model named {missing[0]!r}")
        found = [p for p in found if p.name in names]
    return found


def snapshots(folder: Path) -> list[tuple[int, Path]]:
    """(step, folder) of the snapshots a training run kept (RUN/train/<name>/snapshots/step-N)."""
    from kbake.models.trained import TRAINED_META

    snaps = [(int(p.name.split("-")[1]), p) for p in (folder / "snapshots").glob("step-*") if (p / TRAINED_META).exists()]
    return sorted(snaps)


def _load(folder: Path, precision: str):
    from kbake.models.precision import cast_for_inference
    from kbake.models.trained import load_trained

    model, tok = load_trained(folder, merge=True)  # merged in float32, then cast
    cast_for_inference(model, precision)
    return model, tok


def evaluate(run: RunDir, recipe: Recipe, *, progress: bool = True, embedder=None) -> dict:
    """Evaluate the base model and every trained model; write RUN/eval/{metrics.json, report.md, report.html, *.png}."""
    from kbake.eval.report import write_report
    from kbake.models import load_causal_lm
    from kbake.models.precision import cast_for_inference, resolve_precision

    args = recipe.eval
    precision = resolve_precision(args.precision)
    probes = read_probes(run.probes)
    if not probes:
        raise ValueError(f"{run.probes} is empty: nothing to evaluate")
    if not any(p.split == "test" for p in probes):
        raise ValueError(f"{run.probes}: no probes with split 'test' (the reported numbers); mark some `\"split\": \"test\"`")
    folders = trained_models(run, args.models)
    base, tok = load_causal_lm(args.base_model)
    cast_for_inference(base, precision)

    if args.rag_units == "facts":
        index, evidence, rebuilt = load_fact_index(run, args.embedder, embedder)
        hit = lambda p, i: is_fact_hit(p, index.chunk_ids[i], evidence[i], index.texts[i])  # noqa: E731
    else:
        index, rebuilt = load_index(run, args.embedder, embedder, args.chunk_headers)
        hit = lambda p, i: is_hit(p, index.chunk_ids[i], index.texts[i])  # noqa: E731
    hits = index.search([p.question for p in probes], args.rag_k, args.retriever)
    newest_hits = None
    chunks = read_chunks(run.chunks)
    if any(p.stale for p in probes) and len({c["as_of"] for c in chunks if c["as_of"]}) > 1:
        newest_hits = index.search([p.question for p in probes], args.rag_k, args.retriever, newest_documents(chunks))
    recall = [any(hit(p, i) for i in row) for p, row in zip(probes, hits)]
    data = EvalData(
        probes=probes,
        rag_passages=[[index.texts[i] for i in row] for row in hits],
        replay_seqs=encode_general(tok, general_paragraphs("eval")[: args.general_paragraphs], args.general_max_tokens),
        novel_seqs=encode_general(tok, novel_passages(args.novel_passages), args.general_max_tokens),
        questions=general_questions()[: args.general_questions],
        general_items=[it for s in args.general_eval_sets for it in load_set(s, args.general_eval_items)],
        rag_newest_passages=[[index.texts[i] for i in row] for row in newest_hits] if newest_hits else None,
    )

    models = [evaluate_model("base", base, tok, data, args, None, progress)]
    models[0].update(method="base", trainable_params=0, train_seconds=0.0)
    base_items = models[0]["_items"]
    rows = _row_values(run) if any(p.kind.startswith("fact_") for p in probes) else {}
    if rows:
        models[0]["year_binding"] = year_binding(probes, base_items["closed"], rows, recipe.seed)
    for folder in folders:
        model, mtok = _load(folder, precision)
        res = evaluate_model(folder.name, model, mtok, data, args, base, progress)
        del model
        gc.collect()
        state = json.loads((folder / "trainer_state.json").read_text()) if (folder / "trainer_state.json").exists() else {}
        res.update(method=state.get("method", "?"), trainable_params=state.get("trainable_params"),
                   train_seconds=state.get("train_seconds"), data=_train_data(folder), steps=state.get("global_step"),
                   init=state.get("init"), ingest_round=state.get("ingest_round"))
        res["vs_base"] = changes(res["_items"], base_items, probes, recipe.seed)
        res["closed_vs_base_rag"] = closed_vs_base_rag(res["_items"], base_items, probes, recipe.seed)
        res["detects"] = what_it_detects(res["vs_base"], ["closed_book", *(f"closed_book_{k}" for k in probe_kinds(probes)),
                                                          "dev_closed_book", "general_eval"])
        res["knowledge_map"] = knowledge_map(probes, base_items["closed"], res["_items"]["closed"])
        if rows:
            res["year_binding"] = year_binding(probes, res["_items"]["closed"], rows, recipe.seed)
        res["trajectory"] = _trajectory(folder, res, data, args, precision, base_items, recipe.seed, progress, rows)
        models.append(res)
    by_name = {m["name"]: m for m in models}
    for m in models[1:]:
        start = by_name.get(Path(m["init"]).name) if m.get("init") else None
        if start is not None:  # SFT then RL, or a re-bake: the change against the model it started from
            m["vs_init"] = changes(m["_items"], start["_items"], probes, recipe.seed)
    for m in models:
        g = models[0]["general"]
        m["general"]["replay_ppl_change"] = m["general"]["replay_ppl"] / g["replay_ppl"] - 1
        m["general"]["novel_ppl_change"] = m["general"]["novel_ppl"] / g["novel_ppl"] - 1

    names = [m["name"] for m in models]
    metrics = {
        "rebake": rebake_vs_retrain(models),
        "provenance": {**provenance(recipe.model_dump(mode="json")["eval"], seed=recipe.seed, model=args.base_model),
                       "precision": precision},
        "probes": {"n": len(probes), "n_test": sum(p.split == "test" for p in probes),
                   "n_dev": sum(p.split == "dev" for p in probes), "learning_kind": learning_kind(probes),
                   "kinds": {k: sum(p.kind == k and p.split == "test" for p in probes) for k in probe_kinds(probes)}},
        "retrieval": {"retriever": args.retriever, "k": args.rag_k, "units": args.rag_units,
                      "chunk_headers": args.chunk_headers and args.rag_units == "chunks", "recall_at_k":
                      mean(r for r, p in zip(recall, probes) if p.split == "test"),
                      "embedder": args.embedder, "index_rebuilt": rebuilt},
        "general": {"paragraphs": len(data.replay_seqs), "novel_passages": len(data.novel_seqs),
                    "questions": len(data.questions), "general_eval_sets": list(args.general_eval_sets),
                    "general_eval_items": len(data.general_items)},
        "source_tokens": sum(c["n_tokens"] for c in chunks),
        "models": models,
        "per_probe": [{"id": p.id, "split": p.split, "kind": p.kind, "question": p.question, "answer": p.answer,
                       "reference": p.reference, "retrieved_source": hit,
                       "models": {m["name"]: m["per_probe"][p.id] for m in models}} for p, hit in zip(probes, recall)],
        "general_eval_items": [{"id": it["id"], "set": it["source"], "answer": it["answer"],
                                "models": {n: {k: m["_items"]["general_eval"][i][k] for k in ("correct", "margin")}
                                           for n, m in zip(names, models)}}
                               for i, it in enumerate(data.general_items)],
    }
    metrics["seed_groups"] = pool_seeds(metrics)
    metrics["advice"] = decide(metrics)
    metrics["findings"] = findings(metrics)
    metrics["equal_learning"] = equal_learning(metrics)
    for m in models:
        del m["per_probe"], m["_items"]
    make_private_dir(run.eval_dir)
    atomic_write_json(run.eval_dir / "metrics.json", metrics)
    load_metrics(run.eval_dir / "metrics.json")  # the file as written fits its types (kbake.eval.results)
    atomic_write_parquet(run.eval_dir / "items.parquet", pa.Table.from_pylist(item_rows(metrics)))
    write_report(run.eval_dir, metrics)
    save_stage(run, "eval", {**metrics["provenance"], "models": names})
    return metrics


def item_rows(metrics: dict) -> list[dict]:
    """One row per (item, model), probes and general-eval questions alike, for pandas/datasets:
    `pd.read_parquet("R/eval/items.parquet").pivot_table(index="set", columns="model", values="correct")`."""
    rows = [{"item": p["id"], "set": "probes", "split": p["split"], "kind": p["kind"], "model": name,
             "correct": bool(r["closed"]), "margin": r["margin"]}
            for p in metrics["per_probe"] for name, r in p["models"].items()]
    rows += [{"item": i["id"], "set": i["set"], "split": "test", "kind": i["set"], "model": name,
              "correct": bool(r["correct"]), "margin": r["margin"]}
             for i in metrics["general_eval_items"] for name, r in i["models"].items()]
    return rows


def _trajectory(folder: Path, final: dict, data: EvalData, args, precision: str, base_items: dict, seed: int,
                progress: bool, rows: dict[str, set[str]]) -> list[dict]:
    """The learning (test, and dev to choose the stopping point on) and general-eval change at each
    snapshot, then at the final model; `by_kind` has the test and dev change of every probe kind
    (held-out facts beside QA-trained ones), `year_binding` the period binding where the run has a
    fact table."""
    key = learning_kind(data.probes)
    lkey = f"closed_book_{key}" if key else "closed_book"
    kinds = probe_kinds(data.probes)

    def dev_change(closed: list[dict], kind: str | None = key) -> dict | None:
        dev = [i for i, p in enumerate(data.probes) if p.split == "dev" and (kind is None or p.kind == kind)]
        if not dev:
            return None
        return paired_bootstrap([float(base_items["closed"][i]["correct"]) for i in dev],
                                [float(closed[i]["correct"]) for i in dev], seed=seed)

    def by_kind(test_changes: dict, closed: list[dict]) -> dict:
        return {k: {"test": test_changes.get(f"closed_book_{k}"), "dev": dev_change(closed, k)} for k in kinds}

    points = []
    for step, snap in (snapshots(folder) if args.snapshots else []):
        model, tok = _load(snap, precision)
        res = evaluate_model(f"{folder.name}@{step}", model, tok, data, args, None, progress, snapshot=True)
        del model
        gc.collect()
        ch = changes(res["_items"], base_items, data.probes, seed)
        points.append({"step": step, "learning": ch.get(lkey), "dev_learning": dev_change(res["_items"]["closed"]),
                       "general_eval": ch.get("general_eval"), "by_kind": by_kind(ch, res["_items"]["closed"]),
                       "novel_ppl": ch.get("novel_ppl"), "replay_ppl": ch.get("replay_ppl"),
                       "updates": (res.get("updates") or {}).get("closed_book"), "eval_seconds": res["eval_seconds"],
                       "year_binding": year_binding(data.probes, res["_items"]["closed"], rows, seed) if rows else None})
    points.append({"step": final.get("steps"), "learning": final["vs_base"].get(lkey),
                   "dev_learning": dev_change(final["_items"]["closed"]),
                   "general_eval": final["vs_base"].get("general_eval"),
                   "by_kind": by_kind(final["vs_base"], final["_items"]["closed"]),
                   "novel_ppl": final["vs_base"].get("novel_ppl"), "replay_ppl": final["vs_base"].get("replay_ppl"),
                   "year_binding": final.get("year_binding")})
    return points


def _row_values(run: RunDir) -> dict[str, set[str]]:
    """Table row id -> the digits of its values, from the run's fact table (empty without one)."""
    from kbake.synth.facts import read_facts, row_value_digits

    return row_value_digits(read_facts(run)) if run.facts.exists() else {}


def _train_data(folder: Path) -> list[str] | None:
    import yaml

    cfg = folder / "config.yaml"
    if not cfg.exists():
        return None
    return (yaml.safe_load(cfg.read_text()) or {}).get("train", {}).get("data")

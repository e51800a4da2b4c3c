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
"""

from __future__ import annotations

import gc
import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from kbake.config import Recipe
from kbake.eval.decide import decide, equal_learning, findings
from kbake.eval.forgetting import encode_general, general_nll_and_kl
from kbake.eval.general_eval import load_set, novel_passages, score_items
from kbake.eval.intervals import paired_bootstrap, paired_bootstrap_ppl, what_it_detects
from kbake.eval.rag import is_hit, load_index, rag_prompt
from kbake.eval.score import choice_and_margin, exact_match, score_choices_many, token_f1
from kbake.eval.seeds import pool_seeds
from kbake.eval.updates import newest_documents, outcome, update_stats
from kbake.models.generate import SHORT_ANSWER_SUFFIX, chat_prompt, generate_batch
from kbake.run import RunDir, atomic_write_json, atomic_write_parquet, make_private_dir, provenance, read_chunks, read_probes, save_stage
from kbake.sample import general_paragraphs, general_questions


@dataclass
class EvalData:
    """Everything every model is scored on, prepared once."""

    probes: list
    rag_passages: list[list[str]]
    replay_seqs: list[list[int]]
    novel_seqs: list[list[int]]
    questions: list[dict]
    general_items: list[dict]
    rag_newest_passages: list[list[str]] | None = None
    """RAG restricted to each entity's newest document, when the run holds several dates."""


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


def option_order(probe) -> tuple[list[str], int]:
    """The four options in a fixed per-probe order, and the index of the correct one."""
    opts = [probe.answer, *probe.distractors]
    random.Random(probe.id).shuffle(opts)
    return opts, opts.index(probe.answer)


def score_probes(model, tok, prefixes: list[str], probes, desc: str, progress: bool) -> list[dict]:
    """Multiple-choice scores of `probes` asked after `prefixes` (one prompt text each): per probe
    {correct, choice, margin} (margin: mean log-prob of the right option minus the best wrong one)."""
    from tqdm import tqdm

    orders = [option_order(p) for p in probes]
    with tqdm(total=len(probes), desc=desc, unit="probe", disable=not progress, leave=False) as bar:
        scores = score_choices_many(model, tok, prefixes, [o for o, _ in orders], progress=bar.update)
    out = []
    for (opts, gold), sc in zip(orders, scores):
        best, margin = choice_and_margin(sc, gold)
        out.append({"correct": best == gold, "choice": opts[best], "margin": round(margin, 5)})
    return out


def _generate(model, tok, questions: list[str], args) -> list[str]:
    texts = []
    for i in range(0, len(questions), args.generate_batch_size):
        prompts = [chat_prompt(tok, q + SHORT_ANSWER_SUFFIX) for q in questions[i : i + args.generate_batch_size]]
        texts += [g.text for g in generate_batch(model, tok, prompts, max_new_tokens=args.short_answer_tokens)]
    return texts


def _mean(xs) -> float | None:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def _kinds(probes) -> list[str]:
    return sorted({p.kind for p in probes})


def split_stats(rows: list[dict], probes, split: str) -> dict | None:
    """Accuracy (all and per kind) and mean margin over the probes of one split; None if it has none."""
    sel = [(r, p) for r, p in zip(rows, probes) if p.split == split]
    if not sel:
        return None
    out = {"n": len(sel), "acc": _mean(r["correct"] for r, _ in sel)}
    out.update({f"acc_{k}": _mean(r["correct"] for r, p in sel if p.kind == k) for k in _kinds([p for _, p in sel])})
    if "margin" in sel[0][0]:
        out["margin"] = _mean(r["margin"] for r, _ in sel)
    return out


def general_eval_stats(items: list[dict]) -> dict:
    sets = sorted({i["set"] for i in items})
    return {"n": len(items), "acc": _mean(i["correct"] for i in items), "margin": _mean(i["margin"] for i in items),
            **{f"acc_{s}": _mean(i["correct"] for i in items if i["set"] == s) for s in sets}}


def evaluate_model(name: str, model, tok, data: EvalData, args, base=None, progress: bool = True,
                   snapshot: bool = False) -> dict:
    """Every number of one model; `base` None means this is the base model (KL 0 by definition).
    A `snapshot` gets only what the learning-vs-forgetting line needs: closed-book test probes
    and the general-eval sets. Per-item results are under "_items" (for the intervals)."""
    t0 = time.perf_counter()
    parts: dict[str, float] = {}  # seconds per part: where a model's eval time goes

    def lap(part: str) -> None:
        parts[part] = round(time.perf_counter() - t0 - sum(parts.values()), 1)

    probes = [p for p in data.probes if p.split == "test"] if snapshot else data.probes
    closed = score_probes(model, tok, [chat_prompt(tok, p.question) for p in probes], probes, f"{name}: closed book", progress)
    res = {"name": name, "closed_book": split_stats(closed, probes, "test")}
    items = {"closed": closed}
    lap("closed_book")
    if any(p.stale for p in probes):
        res["updates"] = {"closed_book": update_stats(closed, probes)}
    if data.general_items:
        from tqdm import tqdm

        with tqdm(total=len(data.general_items), desc=f"{name}: general eval", unit="item", disable=not progress,
                  leave=False) as bar:
            items["general_eval"] = score_items(model, tok, data.general_items, progress=bar.update)
        res["general_eval"] = general_eval_stats(items["general_eval"])
        lap("general_eval")
    if snapshot:
        res["_items"] = items
        res["eval_seconds"] = round(time.perf_counter() - t0, 1)
        res["eval_parts"] = parts
        return res

    # RAG and short answers on the test probes only: dev is for choosing recipes, which the
    # closed-book accuracy and margin serve (and the demo's eval time stays within budget).
    test = [i for i, p in enumerate(probes) if p.split == "test"]
    test_probes = [probes[i] for i in test]
    rag_test = score_probes(model, tok, [chat_prompt(tok, rag_prompt(probes[i].question, data.rag_passages[i])) for i in test],
                   test_probes, f"{name}: RAG", progress)
    rag: list = [None] * len(probes)
    for i, r in zip(test, rag_test):
        rag[i] = r
    items["rag"] = rag
    res["rag"] = split_stats(rag_test, test_probes, "test")
    if "updates" in res:
        res["updates"]["rag"] = update_stats(rag_test, test_probes)
        if data.rag_newest_passages is not None:
            upd = [i for i in test if probes[i].stale]
            newest = score_probes(model, tok, [chat_prompt(tok, rag_prompt(probes[i].question, data.rag_newest_passages[i]))
                                      for i in upd], [probes[i] for i in upd], f"{name}: RAG (newest)", progress)
            res["updates"]["rag_newest"] = update_stats(newest, [probes[i] for i in upd])
    res["dev"] = {"closed_book": split_stats(closed, probes, "dev")} if len(test) < len(probes) else None
    res["per_probe"] = {p.id: {"closed": c["correct"], "closed_choice": c["choice"], "margin": c["margin"],
                               "rag": r["correct"] if r else None} for p, c, r in zip(probes, closed, rag)}
    for p, c in zip(probes, closed):
        if p.stale:
            res["per_probe"][p.id]["outcome"] = outcome(p, c["choice"])
    lap("rag")
    if args.short_answers:
        answers = _generate(model, tok, [p.question for p in test_probes], args)
        f1 = [token_f1(a, p.reference) for a, p in zip(answers, test_probes)]
        em = [exact_match(a, p.reference) for a, p in zip(answers, test_probes)]
        res["short_answer"] = {"f1": _mean(f1), "em": _mean(em),
                               **{f"f1_{k}": _mean(f for f, p in zip(f1, test_probes) if p.kind == k)
                                  for k in _kinds(test_probes)}}
        for p, a, f in zip(test_probes, answers, f1):
            res["per_probe"][p.id].update(short=a, f1=round(f, 4))
        lap("short_answers")
    g = general_nll_and_kl(model, base, data.replay_seqs, args.batch_size, tok.pad_token_id)
    nv = general_nll_and_kl(model, base, data.novel_seqs, args.batch_size, tok.pad_token_id)
    items["replay_nll"], items["novel_nll"] = g["seq_nll"], nv["seq_nll"]
    items["replay_tokens"], items["novel_tokens"] = g["seq_tokens"], nv["seq_tokens"]
    res["general"] = {"replay_ppl": g["ppl"], "replay_kl": g["kl"] if base is not None else 0.0,
                      "replay_tokens": g["tokens"], "novel_ppl": nv["ppl"],
                      "novel_kl": nv["kl"] if base is not None else 0.0, "novel_tokens": nv["tokens"]}
    lap("perplexity_kl")
    if data.questions:
        answers = _generate(model, tok, [q["question"] for q in data.questions], args)
        res["general"]["qa_f1"] = _mean([token_f1(a, q["answer"]) for a, q in zip(answers, data.questions)])
        lap("general_questions")
    if hasattr(model, "kbake_memory"):
        res["memory"] = memory_diagnostics(model, tok, probes)
        lap("memory_diagnostics")
    res["_items"] = items
    res["eval_seconds"] = round(time.perf_counter() - t0, 1)
    res["eval_parts"] = parts
    return res


def memory_diagnostics(model, tok, probes) -> dict:
    """Share of a memory model's read weight that falls on trained value rows where each
    probe's answer is predicted (its prompt, then the answer's tokens), per split: compared
    with the share at training positions (trainer_state.json), it says whether the questions
    reach what training wrote."""
    from kbake.models.memory import read_share

    out = {}
    for split in ("test", "dev"):
        seqs, positions = [], []
        for p in (p for p in probes if p.split == split):
            prompt = tok(chat_prompt(tok, p.question), add_special_tokens=False)["input_ids"]
            answer = tok(p.answer, add_special_tokens=False)["input_ids"]
            seqs.append(prompt + answer)
            positions.append(list(range(len(prompt) - 1, len(prompt) + len(answer) - 1)))
        if seqs:
            out[f"read_share_{split}_answers"] = round(read_share(model, seqs, positions), 4)
    return out


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


def closed_vs_base_rag(model_items: dict, base_items: dict, probes, seed: int) -> dict:
    """Closed book of a trained model minus RAG on the base model, paired over test probes, for
    all of them and per kind: does the baked model answer without retrieval what retrieval does?"""
    out = {}
    test = [i for i, p in enumerate(probes) if p.split == "test"]
    for k in [None, *_kinds(probes)]:
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
    for k in _kinds(probes):
        out[f"closed_book_{k}"] = on("closed", "correct", lambda p, k=k: test(p) and p.kind == k)
    if "rag" in model_items:
        out["trained_rag"] = on("rag", "correct", test)
        out["dev_closed_book"] = on("closed", "correct", lambda p: p.split == "dev")
        out["dev_margin"] = on("closed", "margin", lambda p: p.split == "dev")
        for k in _kinds(probes):
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

    index, rebuilt = load_index(run, args.embedder, embedder)
    hits = index.search([p.question for p in probes], args.rag_k, args.retriever)
    newest_hits = None
    chunks = read_chunks(run.chunks)
    if any(p.stale for p in probes) and len({c["as_of"] for c in chunks if c["as_of"]}) > 1:
        newest_hits = index.search([p.question for p in probes], args.rag_k, args.retriever, newest_documents(chunks))
    recall = [any(is_hit(p, index.chunk_ids[i], index.texts[i]) for i in row) for p, row in zip(probes, hits)]
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
        res["detects"] = what_it_detects(res["vs_base"], ["closed_book", *(f"closed_book_{k}" for k in _kinds(probes)),
                                                          "dev_closed_book", "general_eval"])
        res["knowledge_map"] = knowledge_map(probes, base_items["closed"], res["_items"]["closed"])
        res["trajectory"] = _trajectory(folder, res, data, args, precision, base_items, recipe.seed, progress)
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
                   "kinds": {k: sum(p.kind == k and p.split == "test" for p in probes) for k in _kinds(probes)}},
        "retrieval": {"retriever": args.retriever, "k": args.rag_k, "recall_at_k":
                      _mean(r for r, p in zip(recall, probes) if p.split == "test"),
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
    atomic_write_parquet(run.eval_dir / "items.parquet", pa.Table.from_pylist(item_rows(metrics)))
    write_report(run.eval_dir, metrics)
    save_stage(run, "eval", {**metrics["provenance"], "models": names})
    return metrics


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
                progress: bool) -> list[dict]:
    """The learning and general-eval change at each snapshot, then at the final model."""
    key = learning_kind(data.probes)
    lkey = f"closed_book_{key}" if key else "closed_book"
    test_probes = [p for p in data.probes if p.split == "test"]
    base_test = {"closed": [r for r, p in zip(base_items["closed"], data.probes) if p.split == "test"],
                 "general_eval": base_items.get("general_eval")}
    base_test = {k: v for k, v in base_test.items() if v is not None}
    points = []
    for step, snap in (snapshots(folder) if args.snapshots else []):
        model, tok = _load(snap, precision)
        res = evaluate_model(f"{folder.name}@{step}", model, tok, data, args, None, progress, snapshot=True)
        del model
        gc.collect()
        ch = changes(res["_items"], base_test, test_probes, seed)
        points.append({"step": step, "learning": ch.get(lkey), "general_eval": ch.get("general_eval"),
                       "updates": (res.get("updates") or {}).get("closed_book"), "eval_seconds": res["eval_seconds"]})
    points.append({"step": final.get("steps"), "learning": final["vs_base"].get(lkey),
                   "general_eval": final["vs_base"].get("general_eval")})
    return points


def _train_data(folder: Path) -> list[str] | None:
    import yaml

    cfg = folder / "config.yaml"
    if not cfg.exists():
        return None
    return (yaml.safe_load(cfg.read_text()) or {}).get("train", {}).get("data")

"""`kbake eval`: did training put the knowledge in, what did it cost, and would plain
retrieval have done as well?

For the base model and every trained model in the run: closed-book accuracy on the
held-out probes (multiple choice by log-likelihood; short answers by F1/EM), the same with
the top-k retrieved chunks in the prompt (RAG), and forgetting on held-out general text
(perplexity change, KL against the base, general QA F1). Writes RUN/eval/.
"""

from __future__ import annotations

import gc
import json
import random
import time
from pathlib import Path

from kbake.config import Recipe
from kbake.eval.forgetting import encode_general, general_nll_and_kl
from kbake.eval.rag import is_hit, load_index, rag_prompt
from kbake.eval.score import exact_match, score_choices_many, token_f1
from kbake.models.generate import chat_prompt, generate_batch
from kbake.run import RunDir, atomic_write_json, make_private_dir, provenance, read_probes, save_stage
from kbake.sample import general_paragraphs, general_questions

SHORT_ANSWER_SUFFIX = "\nAnswer in a few words."


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


def option_order(probe) -> tuple[list[str], int]:
    """The four options in a fixed per-probe order, and the index of the correct one."""
    opts = [probe.answer, *probe.distractors]
    random.Random(probe.id).shuffle(opts)
    return opts, opts.index(probe.answer)


def _mc(model, tok, prefixes: list[str], probes, desc: str, progress: bool) -> list[dict]:
    from tqdm import tqdm

    orders = [option_order(p) for p in probes]
    with tqdm(total=len(probes), desc=desc, unit="probe", disable=not progress, leave=False) as bar:
        scores = score_choices_many(model, tok, prefixes, [o for o, _ in orders], progress=bar.update)
    out = []
    for (opts, gold), sc in zip(orders, scores):
        best = max(range(len(opts)), key=lambda i: sc[i])
        out.append({"correct": best == gold, "choice": opts[best]})
    return out


def _generate(model, tok, questions: list[str], args) -> list[str]:
    texts = []
    for i in range(0, len(questions), args.generate_batch_size):
        prompts = [chat_prompt(tok, q + SHORT_ANSWER_SUFFIX) for q in questions[i : i + args.generate_batch_size]]
        texts += [g.text for g in generate_batch(model, tok, prompts, max_new_tokens=args.short_answer_tokens)]
    return texts


def _acc(rows: list[dict], probes, kind: str | None = None) -> float | None:
    sel = [r["correct"] for r, p in zip(rows, probes) if kind is None or p.kind == kind]
    return sum(sel) / len(sel) if sel else None


def evaluate_model(name: str, model, tok, probes, rag_passages: list[list[str]], general_seqs, gq: list[dict],
                   args, base=None, progress: bool = True) -> dict:
    """Every number of one model; `base` None means this is the base model (KL 0 by definition)."""
    t0 = time.perf_counter()
    closed = _mc(model, tok, [chat_prompt(tok, p.question) for p in probes], probes, f"{name}: closed book", progress)
    rag = _mc(model, tok, [chat_prompt(tok, rag_prompt(p.question, ps)) for p, ps in zip(probes, rag_passages)],
              probes, f"{name}: RAG", progress)
    res = {
        "name": name,
        "closed_book": {"acc": _acc(closed, probes), **{f"acc_{k}": _acc(closed, probes, k) for k in _kinds(probes)}},
        "rag": {"acc": _acc(rag, probes), **{f"acc_{k}": _acc(rag, probes, k) for k in _kinds(probes)}},
        "per_probe": {p.id: {"closed": c["correct"], "closed_choice": c["choice"], "rag": r["correct"]}
                      for p, c, r in zip(probes, closed, rag)},
    }
    if args.short_answers:
        answers = _generate(model, tok, [p.question for p in probes], args)
        f1 = [token_f1(a, p.reference) for a, p in zip(answers, probes)]
        em = [exact_match(a, p.reference) for a, p in zip(answers, probes)]
        res["short_answer"] = {"f1": sum(f1) / len(f1), "em": sum(em) / len(em),
                               **{f"f1_{k}": _mean([x for x, p in zip(f1, probes) if p.kind == k]) for k in _kinds(probes)}}
        for p, a, f in zip(probes, answers, f1):
            res["per_probe"][p.id].update(short=a, f1=round(f, 4))
    g = general_nll_and_kl(model, base, general_seqs, args.batch_size, tok.pad_token_id)
    res["general"] = {"ppl": g["ppl"], "nll": g["nll"], "kl": g["kl"] if base is not None else 0.0, "tokens": g["tokens"]}
    if gq:
        answers = _generate(model, tok, [q["question"] for q in gq], args)
        res["general"]["qa_f1"] = _mean([token_f1(a, q["answer"]) for a, q in zip(answers, gq)])
    res["eval_seconds"] = round(time.perf_counter() - t0, 1)
    return res


def _kinds(probes) -> list[str]:
    return sorted({p.kind for p in probes})


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def evaluate(run: RunDir, recipe: Recipe, *, progress: bool = True, embedder=None) -> dict:
    """Evaluate the base model and every trained model; write RUN/eval/{metrics.json, report.md, report.html, *.png}."""
    from kbake.eval.report import write_report
    from kbake.models import load_causal_lm
    from kbake.models.precision import cast_for_inference, resolve_precision
    from kbake.models.trained import load_trained

    args = recipe.eval
    precision = resolve_precision(args.precision)
    probes = read_probes(run.probes)
    if not probes:
        raise ValueError(f"{run.probes} is empty: nothing to evaluate")
    folders = trained_models(run, args.models)
    base, tok = load_causal_lm(args.base_model)
    cast_for_inference(base, precision)

    index, rebuilt = load_index(run, args.embedder, embedder)
    hits = index.search([p.question for p in probes], args.rag_k)
    rag_passages = [[index.texts[i] for i in row] for row in hits]
    recall = [any(is_hit(p, index.chunk_ids[i], index.texts[i]) for i in row) for p, row in zip(probes, hits)]
    general_seqs = encode_general(tok, general_paragraphs("eval")[: args.general_paragraphs], args.general_max_tokens)
    gq = general_questions()[: args.general_questions]

    models = [evaluate_model("base", base, tok, probes, rag_passages, general_seqs, gq, args, None, progress)]
    models[0].update(method="base", trainable_params=0, train_seconds=0.0)
    for folder in folders:
        model, mtok = load_trained(folder, merge=True)  # merged in float32, then cast
        cast_for_inference(model, precision)
        res = evaluate_model(folder.name, model, mtok, probes, rag_passages, general_seqs, gq, args, base, progress)
        state = json.loads((folder / "trainer_state.json").read_text()) if (folder / "trainer_state.json").exists() else {}
        res.update(method=state.get("method", "?"), trainable_params=state.get("trainable_params"),
                   train_seconds=state.get("train_seconds"), data=_train_data(folder))
        models.append(res)
        del model
        gc.collect()
    base_ppl = models[0]["general"]["ppl"]
    for m in models:
        m["general"]["ppl_change"] = m["general"]["ppl"] / base_ppl - 1

    metrics = {
        "provenance": {**provenance(recipe.model_dump(mode="json")["eval"], seed=recipe.seed, model=args.base_model),
                       "precision": precision},
        "probes": {"n": len(probes), "kinds": {k: sum(p.kind == k for p in probes) for k in _kinds(probes)}},
        "retrieval": {"k": args.rag_k, "recall_at_k": sum(recall) / len(recall), "embedder": args.embedder,
                      "index_rebuilt": rebuilt},
        "general": {"paragraphs": len(general_seqs), "questions": len(gq)},
        "models": models,
        "per_probe": [{"id": p.id, "kind": p.kind, "question": p.question, "answer": p.answer,
                       "reference": p.reference, "retrieved_source": hit,
                       "models": {m["name"]: m["per_probe"][p.id] for m in models}} for p, hit in zip(probes, recall)],
    }
    for m in models:
        del m["per_probe"]
    make_private_dir(run.eval_dir)
    atomic_write_json(run.eval_dir / "metrics.json", metrics)
    write_report(run.eval_dir, metrics)
    save_stage(run, "eval", {**metrics["provenance"], "models": [m["name"] for m in models]})
    return metrics


def _train_data(folder: Path) -> list[str] | None:
    import yaml

    cfg = folder / "config.yaml"
    if not cfg.exists():
        return None
    return (yaml.safe_load(cfg.read_text()) or {}).get("train", {}).get("data")

"""Per-model scoring for `kbake eval`: one model on every set the run prepared (`EvalData`):
closed book and RAG on the probes, short answers, the general-eval sets, perplexity and KL on
held-out text, and memory diagnostics; per-item results kept for the intervals."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from kbake.eval.forgetting import general_nll_and_kl
from kbake.eval.general_eval import score_items
from kbake.eval.rag import rag_prompt
from kbake.eval.score import choice_and_margin, exact_match, score_choices_many, token_f1
from kbake.eval.updates import outcome, update_stats
from kbake.models.generate import SHORT_ANSWER_SUFFIX, chat_prompt, generate_batch


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


def generate_short_answers(model, tok, questions: list[str], args) -> list[str]:
    """Greedy short answers to `questions` (the short-answer suffix appended), in batches."""
    texts = []
    for i in range(0, len(questions), args.generate_batch_size):
        prompts = [chat_prompt(tok, q + SHORT_ANSWER_SUFFIX) for q in questions[i : i + args.generate_batch_size]]
        texts += [g.text for g in generate_batch(model, tok, prompts, max_new_tokens=args.short_answer_tokens)]
    return texts


def mean(xs) -> float | None:
    """The mean, or None for no values."""
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def probe_kinds(probes) -> list[str]:
    """The probe kinds present, sorted."""
    return sorted({p.kind for p in probes})


def split_stats(rows: list[dict], probes, split: str) -> dict | None:
    """Accuracy (all and per kind) and mean margin over the probes of one split; None if it has none."""
    sel = [(r, p) for r, p in zip(rows, probes) if p.split == split]
    if not sel:
        return None
    out = {"n": len(sel), "acc": mean(r["correct"] for r, _ in sel)}
    out.update({f"acc_{k}": mean(r["correct"] for r, p in sel if p.kind == k) for k in probe_kinds([p for _, p in sel])})
    if "margin" in sel[0][0]:
        out["margin"] = mean(r["margin"] for r, _ in sel)
    return out


def general_eval_stats(items: list[dict]) -> dict:
    sets = sorted({i["set"] for i in items})
    return {"n": len(items), "acc": mean(i["correct"] for i in items), "margin": mean(i["margin"] for i in items),
            **{f"acc_{s}": mean(i["correct"] for i in items if i["set"] == s) for s in sets}}


def evaluate_model(name: str, model, tok, data: EvalData, args, base=None, progress: bool = True,
                   snapshot: bool = False) -> dict:
    """Every number of one model; `base` None means this is the base model (KL 0 by definition).
    A `snapshot` gets only what the learning-vs-forgetting line and a choice of epochs need:
    closed book on every probe (dev chooses, test reports), the general-eval sets and perplexity. Per-item
    results are under "_items" (for the intervals)."""
    t0 = time.perf_counter()
    parts: dict[str, float] = {}  # seconds per part: where a model's eval time goes

    def lap(part: str) -> None:
        parts[part] = round(time.perf_counter() - t0 - sum(parts.values()), 1)

    probes = data.probes
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
        # perplexity on the novel and the replay domain (without KL: no base forward), ~10 s a
        # model: along training, the cost to the model's prose shows before accuracy moves
        for text, seqs in (("replay", data.replay_seqs), ("novel", data.novel_seqs)):
            r = general_nll_and_kl(model, None, seqs, args.batch_size, tok.pad_token_id)
            items[f"{text}_nll"], items[f"{text}_tokens"] = r["seq_nll"], r["seq_tokens"]
        lap("perplexity")
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
        answers = generate_short_answers(model, tok, [p.question for p in test_probes], args)
        f1 = [token_f1(a, p.reference) for a, p in zip(answers, test_probes)]
        em = [exact_match(a, p.reference) for a, p in zip(answers, test_probes)]
        res["short_answer"] = {"f1": mean(f1), "em": mean(em),
                               **{f"f1_{k}": mean(f for f, p in zip(f1, test_probes) if p.kind == k)
                                  for k in probe_kinds(test_probes)}}
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
        answers = generate_short_answers(model, tok, [q["question"] for q in data.questions], args)
        res["general"]["qa_f1"] = mean([token_f1(a, q["answer"]) for a, q in zip(answers, data.questions)])
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

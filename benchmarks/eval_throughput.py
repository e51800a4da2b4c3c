"""Multiple-choice scoring: one pass over the shared prefix + the options batched after
its KV cache, vs one full pass per option — same probes, same RAG contexts.
With --across: the demo's real RAG prompts (the sample ingested, its probes, top-3 chunks),
each question alone (prefix shared among its options) vs `score_many` reusing the common
prefix across questions.

    .venv/bin/python benchmarks/eval_throughput.py [--model default] [--n 16] [--context 900]
    .venv/bin/python benchmarks/eval_throughput.py --across [--n 77]
"""

import argparse
import tempfile
import time
from pathlib import Path

from kbake.eval import option_order
from kbake.eval.rag import rag_prompt
from kbake.eval.score import option_ids, score_many, score_separately, score_shared
from kbake.models import load_causal_lm
from kbake.models.generate import chat_prompt
from kbake.run import read_probes
from kbake.sample import general_paragraphs, sample_probes

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="default")
ap.add_argument("--n", type=int, default=16)
ap.add_argument("--context", type=int, default=900, help="tokens of retrieved context per question")
ap.add_argument("--across", action="store_true", help="reuse of common prefixes across questions, on the demo's RAG prompts")
a = ap.parse_args()

model, tok = load_causal_lm(a.model)


def compare(fast_name: str, fast, slow_name: str, slow) -> None:
    """Time two scorers (thunks returning per-question [(sum log-prob, n)]) and print the ratio
    and the largest score difference between them."""
    t = time.perf_counter()
    a_scores = fast()
    tf = time.perf_counter() - t
    t = time.perf_counter()
    b_scores = slow()
    ts = time.perf_counter() - t
    diff = max(abs(x[0] - y[0]) for s, r in zip(a_scores, b_scores) for x, y in zip(s, r))
    print(f"{fast_name}: {tf:.1f}s; {slow_name}: {ts:.1f}s; speed-up {ts / tf:.2f}x; max |score diff| {diff:.2e}")


def across_questions() -> None:
    """The demo's real RAG prompts: score_many across questions vs each question alone."""
    from kbake.config import IngestArgs
    from kbake.eval.rag import load_index
    from kbake.ingest import ingest
    from kbake.run import RunDir
    from kbake.sample import sample_documents

    run = RunDir.at(Path(tempfile.mkdtemp()) / "run")
    ingest([str(p) for p in sample_documents()], run, IngestArgs(), progress=False)
    index, _ = load_index(run, "default")
    probes = read_probes(sample_probes())[: a.n]
    hits = index.search([p.question for p in probes], 3)
    prefixes = [tok(chat_prompt(tok, rag_prompt(p.question, [index.texts[i] for i in row])), add_special_tokens=False)["input_ids"]
                for p, row in zip(probes, hits)]
    opts = [option_ids(tok, option_order(p)[0]) for p in probes]
    print(f"{len(probes)} questions x 4 options, top-3 chunks, {sum(map(len, prefixes)) / len(prefixes):.0f} prompt tokens on average")
    compare("reusing prefixes across questions", lambda: score_many(model, prefixes, opts, tok.pad_token_id),
            "each question alone", lambda: [score_shared(model, pre, o, tok.pad_token_id) for pre, o in zip(prefixes, opts)])


def within_question() -> None:
    """--context tokens of general paragraphs per question: prefix shared by the options vs one pass per option."""
    probes = read_probes(sample_probes())[: a.n]
    paras = general_paragraphs("eval")
    cases = []
    for i, p in enumerate(probes):
        ctx, n, j = [], 0, i * 7
        while n < a.context:  # general paragraphs until the context is about --context tokens
            para = paras[j % len(paras)]
            ctx.append(para)
            n += len(tok(para, add_special_tokens=False)["input_ids"])
            j += 1
        prefix = tok(chat_prompt(tok, rag_prompt(p.question, ctx)), add_special_tokens=False)["input_ids"]
        cases.append((prefix, option_ids(tok, option_order(p)[0])))
    print(f"{len(cases)} questions x 4 options, context {sum(len(c[0]) for c in cases) / len(cases):.0f} tokens on average")
    compare("prefix shared", lambda: [score_shared(model, pre, opts, tok.pad_token_id) for pre, opts in cases],
            "one pass per option", lambda: [score_separately(model, pre, opts) for pre, opts in cases])


across_questions() if a.across else within_question()

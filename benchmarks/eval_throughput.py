"""Multiple-choice scoring: one pass over the shared prefix + the options batched after
its KV cache, vs one full pass per option — same probes, same RAG contexts.

    .venv/bin/python benchmarks/eval_throughput.py [--model default] [--n 16] [--context 900]
"""

import argparse
import time

from kbake.eval import option_order
from kbake.eval.rag import rag_prompt
from kbake.eval.score import option_ids, score_separately, score_shared
from kbake.models import load_causal_lm
from kbake.models.generate import chat_prompt
from kbake.run import read_probes
from kbake.sample import general_paragraphs, sample_probes

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="default")
ap.add_argument("--n", type=int, default=16)
ap.add_argument("--context", type=int, default=900, help="tokens of retrieved context per question")
a = ap.parse_args()

model, tok = load_causal_lm(a.model)
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

t = time.perf_counter()
shared = [score_shared(model, pre, opts, tok.pad_token_id) for pre, opts in cases]
ts = time.perf_counter() - t
t = time.perf_counter()
alone = [score_separately(model, pre, opts) for pre, opts in cases]
ta = time.perf_counter() - t
diff = max(abs(x[0] - y[0]) for s, r in zip(shared, alone) for x, y in zip(s, r))
print(f"prefix shared: {ts:.1f}s; one pass per option: {ta:.1f}s; speed-up {ta / ts:.2f}x; max |score diff| {diff:.2e}")

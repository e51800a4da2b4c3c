"""Multiple-choice scoring with the output head over the last prompt position only
(`logits_to_keep=1`, what kbake does) vs over every prompt position: 12 RAG-shaped prompts
(three general paragraphs of context, about 400 tokens) x 4 options, bf16, one process.

    .venv/bin/python benchmarks/prefill_logits.py
"""

import time

import torch

from kbake.eval.rag import rag_prompt
from kbake.eval.score import score_many
from kbake.models import load_causal_lm
from kbake.models.generate import chat_prompt
from kbake.models.precision import cast_for_inference
from kbake.sample import general_paragraphs

model, tok = load_causal_lm("default")
cast_for_inference(model, "bf16")


class AllLogits(torch.nn.Module):
    """The same model, ignoring `logits_to_keep` (the head runs over every position)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, **kw):
        kw.pop("logits_to_keep", None)
        return self.inner(**kw)


paras = general_paragraphs("eval")
prefixes = [tok(chat_prompt(tok, rag_prompt(f"Question {i}?", paras[3 * i : 3 * i + 3])), add_special_tokens=False)["input_ids"]
            for i in range(12)]
opts = [[tok(o, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for o in ["Osaka", "Aarhus, Denmark", "twelve", "the foundry"]]
        for _ in prefixes]
score_many(model, prefixes[:2], opts[:2], tok.pad_token_id)  # warm-up
times, results = {}, {}
for name, m in (("last position only", model), ("every position", AllLogits(model))) * 2:
    t = time.perf_counter()
    results[name] = score_many(m, prefixes, opts, tok.pad_token_id)
    times.setdefault(name, []).append(time.perf_counter() - t)
same = results["last position only"] == results["every position"]
a, b = min(times["last position only"]), min(times["every position"])
print(f"{sum(map(len, prefixes)) / len(prefixes):.0f} prompt tokens on average; last position only {a:.2f} s, "
      f"every position {b:.2f} s (best of 2): {b / a:.2f}x; scores identical: {same}")

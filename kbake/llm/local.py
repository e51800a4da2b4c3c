"""`local`: a transformers causal LM in-process, batched generation with left padding.

One `generate` call per batch of prompts (sorted by length so a batch pads little),
not one per prompt: on a CPU that is the difference between minutes and hours. With
`share_prefix`, prompts run in token order, so one chunk's requests (same instruction and
chunk, another style or candidate) land in one call and prefill their common prefix once. The
model computes in the recipe's precision (bf16 where native: kbake.models.precision).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from kbake.llm.base import ChatRequest, Completion, OnResult
from kbake.models.generate import generate_batch


class LocalBackend:
    def __init__(self, name: str = "default", batch_size: int = 16, device: str | None = None,
                 precision: str = "auto", share_prefix: int = 0):
        from kbake.models.precision import resolve_precision

        self.name = name
        self.device = device
        self.batch_size = batch_size
        self.share_prefix = share_prefix
        self.precision = resolve_precision(precision, device)
        label = "SmolLM2-135M-Instruct" if name == "default" else name
        # bf16 can change a greedy continuation, so its answers are cached apart from fp32's.
        self.model_id = f"local:{label}" + ("" if self.precision == "fp32" else f"@{self.precision}")
        self._loaded = None

    def _load(self):
        """Loaded on the first real call: a run served wholly from the cache never loads it."""
        if self._loaded is None:
            from kbake.models import load_causal_lm
            from kbake.models.precision import cast_for_inference

            model, tok = load_causal_lm(self.name, device=self.device)
            self._loaded = cast_for_inference(model, self.precision), tok
        return self._loaded

    @property
    def model(self):
        return self._load()[0]

    @property
    def tok(self):
        return self._load()[1]

    def _prompt(self, req: ChatRequest) -> str:
        msgs = [{"role": r, "content": c} for r, c in req.messages]
        return self.tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)

    def complete(self, requests: Sequence[ChatRequest], on_result: OnResult) -> list[Completion | None]:
        prompts = [self._prompt(r) for r in requests]
        ids = [self.tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
        # Requests can only share a generate call when they share sampling parameters; candidates
        # differ only in seed, and one call draws different samples per row anyway, so they share.
        groups: dict = defaultdict(list)
        for i, r in enumerate(requests):
            groups[replace(r.sampling, seed=0)].append(i)
        results: list[Completion | None] = [None] * len(requests)
        for idx in groups.values():
            # Sharers of a prefix sit next to each other in token order; otherwise similar lengths pad least.
            idx.sort(key=(lambda i: ids[i]) if self.share_prefix else (lambda i: len(ids[i])))
            for b in range(0, len(idx), self.batch_size):
                batch = idx[b : b + self.batch_size]
                sampling = requests[batch[0]].sampling  # the first request's seed seeds the call
                for i, c in zip(batch, self._generate([prompts[i] for i in batch], sampling)):
                    results[i] = c
                    on_result(i, c)
        return results

    def _generate(self, prompts: list[str], sampling) -> list[Completion]:
        allowed = None
        if sampling.json_schema:
            from kbake.llm.constrained import allowed_tokens_fn

            allowed = allowed_tokens_fn(self.tok, sampling.json_schema)
        out = generate_batch(self.model, self.tok, prompts, max_new_tokens=sampling.max_tokens,
                             temperature=sampling.temperature, top_p=sampling.top_p, seed=sampling.seed,
                             repetition_penalty=sampling.repetition_penalty, prefix_allowed_tokens_fn=allowed,
                             share_prefix=self.share_prefix)
        return [Completion(text=g.text, finish_reason="stop" if g.stopped else "length", prompt_tokens=g.prompt_tokens,
                           completion_tokens=g.new_tokens) for g in out]

"""`local`: a transformers causal LM in-process, batched generation with left padding.

One `generate` call per batch of prompts (sorted by length so a batch pads little),
not one per prompt: on a CPU that is the difference between minutes and hours.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from kbake.llm.base import ChatRequest, Completion, OnResult


class LocalBackend:
    def __init__(self, name: str = "default", batch_size: int = 16, device: str | None = None):
        import torch

        from kbake.models import load_causal_lm

        self.name = name
        self.model, self.tok = load_causal_lm(name, device=device)
        self.device = next(self.model.parameters()).device
        self.batch_size = batch_size
        label = "SmolLM2-135M-Instruct" if name == "default" else name
        self.model_id = f"local:{label}"
        self._torch = torch

    def _prompt(self, req: ChatRequest) -> str:
        msgs = [{"role": r, "content": c} for r, c in req.messages]
        return self.tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)

    def complete(self, requests: Sequence[ChatRequest], on_result: OnResult) -> list[Completion | None]:
        torch = self._torch
        prompts = [self._prompt(r) for r in requests]
        lengths = [len(self.tok(p, add_special_tokens=False)["input_ids"]) for p in prompts]
        # Requests can only share a generate call when they share sampling parameters.
        groups: dict = defaultdict(list)
        for i, r in enumerate(requests):
            groups[r.sampling].append(i)
        results: list[Completion | None] = [None] * len(requests)
        for sampling, idx in groups.items():
            idx.sort(key=lambda i: lengths[i])
            for b in range(0, len(idx), self.batch_size):
                batch = idx[b : b + self.batch_size]
                for i, c in zip(batch, self._generate([prompts[i] for i in batch], sampling)):
                    results[i] = c
                    on_result(i, c)
        return results

    def _generate(self, prompts: list[str], sampling) -> list[Completion]:
        torch = self._torch
        self.tok.padding_side = "left"
        enc = self.tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        torch.manual_seed(sampling.seed)
        sample = sampling.temperature > 0
        with torch.no_grad():
            out = self.model.generate(
                **enc,
                max_new_tokens=sampling.max_tokens,
                do_sample=sample,
                temperature=sampling.temperature if sample else None,
                top_p=sampling.top_p if sample else None,
                top_k=None,
                pad_token_id=self.tok.pad_token_id,
                eos_token_id=self.tok.eos_token_id,
            )
        new = out[:, enc["input_ids"].shape[1] :]
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        completions = []
        for row, n_prompt in zip(new, prompt_lens):
            ids = row.tolist()
            eos = self.tok.eos_token_id
            stopped = eos in ids
            if stopped:
                ids = ids[: ids.index(eos)]
            text = self.tok.decode(ids, skip_special_tokens=True)
            completions.append(Completion(text=text.strip(), finish_reason="stop" if stopped else "length",
                                          prompt_tokens=int(n_prompt), completion_tokens=len(ids) + int(stopped)))
        return completions

"""Batched generation with left padding: one `generate` call per batch of prompts.
Shared by the local LLM backend (synth) and short-answer evaluation.

The KV cache is transformers' static cache (preallocated to prompt + max_new_tokens)
rather than the dynamic one, which concatenates every layer's keys and values at every
step: on 2 CPU cores at batch 32 that concatenation alone was 16% of a bf16 decode step
(a torch.profiler run, benchmarks/RESULTS.md). Greedy outputs are the same token for token
in fp32 (tests/test_precision.py).
The static cache is not compiled (`disable_compile`): on a CPU, torch.compile of the decode
step cost over a minute per new shape and made steps slower, not faster (benchmarks/RESULTS.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Generated:
    text: str
    stopped: bool
    """True when the model ended with EOS; False when it hit max_new_tokens."""
    prompt_tokens: int
    new_tokens: int


def generate_batch(model, tok, prompts: list[str], *, max_new_tokens: int, temperature: float = 0.0,
                   top_p: float = 1.0, seed: int = 0, repetition_penalty: float = 1.0,
                   cache: str = "static", prefix_allowed_tokens_fn=None) -> list[Generated]:
    """Generate a continuation of each prompt (already chat-templated) in one call.
    `cache`: 'static' (preallocated, the default) or 'dynamic' (transformers' default).
    `prefix_allowed_tokens_fn`: transformers' constraint hook (JSON schemas: kbake/llm/constrained.py)."""
    device = next(model.parameters()).device
    tok.padding_side = "left"  # new tokens must follow every prompt directly
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    torch.manual_seed(seed)
    sample = temperature > 0
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=sample,
                             temperature=temperature if sample else None, top_p=top_p if sample else None,
                             top_k=None, repetition_penalty=repetition_penalty if repetition_penalty != 1.0 else None,
                             pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                             prefix_allowed_tokens_fn=prefix_allowed_tokens_fn,
                             **({"cache_implementation": "static", "disable_compile": True} if cache == "static" else {}))
    new = out[:, enc["input_ids"].shape[1]:]
    eos = tok.eos_token_id
    results = []
    for row, n_prompt in zip(new.tolist(), enc["attention_mask"].sum(dim=1).tolist()):
        stopped = eos in row
        ids = row[: row.index(eos)] if stopped else row
        results.append(Generated(tok.decode(ids, skip_special_tokens=True).strip(), stopped, int(n_prompt),
                                 len(ids) + int(stopped)))
    return results


def chat_prompt(tok, user: str, system: str | None = None) -> str:
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)

"""Batched generation with left padding: one `generate` call per batch of prompts.
Shared by the local LLM backend (synth) and short-answer evaluation.

The KV cache is transformers' static cache (preallocated to prompt + max_new_tokens)
rather than the dynamic one, which concatenates every layer's keys and values at every
step: on 2 CPU cores at batch 32 that concatenation alone was 16% of a bf16 decode step
(a torch.profiler run, benchmarks/RESULTS.md). Greedy outputs are the same token for token
in fp32 (tests/test_precision.py).
The static cache is not compiled (`disable_compile`): on a CPU, torch.compile of the decode
step cost over a minute per new shape and made steps slower, not faster (benchmarks/RESULTS.md).

With `share_prefix`, prompts that begin with the same tokens (synth's requests about one
chunk: the instruction and the chunk, then a style or a candidate number) run that prefix
through the model once: its KV cache is copied into every row that shares it, and only the
rest of each prompt is prefilled (as `kbake.eval.score` does for probe options).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
from transformers.modeling_outputs import CausalLMOutputWithPast


@dataclass
class Generated:
    text: str
    stopped: bool
    """True when the model ended with EOS; False when it hit max_new_tokens."""
    prompt_tokens: int
    new_tokens: int


def generate_batch(model, tok, prompts: list[str], *, max_new_tokens: int, temperature: float = 0.0,
                   top_p: float = 1.0, seed: int = 0, repetition_penalty: float = 1.0,
                   cache: str = "static", prefix_allowed_tokens_fn=None, share_prefix: int = 0) -> list[Generated]:
    """Generate a continuation of each prompt (already chat-templated) in one call.
    `cache`: 'static' (preallocated, the default) or 'dynamic' (transformers' default).
    `prefix_allowed_tokens_fn`: transformers' constraint hook (JSON schemas: kbake/llm/constrained.py).
    `share_prefix`: when > 0, prompts sharing at least that many leading tokens prefill them once
    (static cache only)."""
    device = next(model.parameters()).device
    tok.padding_side = "left"  # new tokens must follow every prompt directly
    ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    extra = {}
    groups = prefix_groups(ids, share_prefix) if share_prefix and cache == "static" else None
    if groups and any(len(g) > 1 for g, _ in groups):
        enc, extra[CACHE_KW] = _prefilled(model, tok, ids, groups, max_new_tokens)
    else:
        enc = tok.pad({"input_ids": ids}, return_tensors="pt")
        if cache == "static":
            extra = {"cache_implementation": "static"}
    enc = {k: v.to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
    torch.manual_seed(seed)
    sample = temperature > 0
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=sample,
                             temperature=temperature if sample else None, top_p=top_p if sample else None,
                             top_k=None, repetition_penalty=repetition_penalty if repetition_penalty != 1.0 else None,
                             pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                             prefix_allowed_tokens_fn=prefix_allowed_tokens_fn,
                             **({"disable_compile": True} if cache == "static" else {}), **extra)
    new = out[:, enc["input_ids"].shape[1]:]
    eos = tok.eos_token_id
    results = []
    for row, prompt_ids in zip(new.tolist(), ids):
        stopped = eos in row
        answer = row[: row.index(eos)] if stopped else row
        results.append(Generated(tok.decode(answer, skip_special_tokens=True).strip(), stopped, len(prompt_ids),
                                 len(answer) + int(stopped)))
    return results


def prefix_groups(ids: list[list[int]], min_shared: int) -> list[tuple[list[int], int]]:
    """Rows that share a prefix: (row indices, prefix length) per group, every row in exactly
    one group. Rows are grouped in token order, a row joining the group before it when they
    share at least `min_shared` leading tokens; a group's prefix stops one token short of its
    shortest row, so every row has a token left to prefill (whose logits start generation)."""
    groups: list[tuple[list[int], int]] = []
    for i in sorted(range(len(ids)), key=lambda i: ids[i]):
        if groups:
            rows, n = groups[-1]
            shared = min(n, len(os.path.commonprefix([ids[rows[0]], ids[i]])), len(ids[i]) - 1)  # any sequences
            if shared >= min_shared:
                groups[-1] = (rows + [i], shared)
                continue
        groups.append(([i], len(ids[i]) - 1))
    return groups


# transformers 5.2x renamed `past_key_values` to `cache` (argument and output field).
CACHE_KW = "cache" if "cache" in CausalLMOutputWithPast.__dataclass_fields__ else "past_key_values"
SHORT_ANSWER_SUFFIX = "\nAnswer in a few words."
"""Asks for a short answer: eval's short-answer F1 and GRPO's QA environment use the same words."""


def _prefilled(model, tok, ids: list[list[int]], groups: list[tuple[list[int], int]], max_new_tokens: int):
    """The inputs and a static KV cache for `generate` with each group's prefix computed once.

    Row r of the batch is [pad][prefix of its group][pad][rest of prompt r]: the prefixes run
    as one left-padded batch of distinct prefixes, their keys and values are copied into
    every row of their group, and `generate` prefills only the columns after them. Positions
    come from the attention mask's running sum, so padding in the middle shifts nothing."""
    from transformers import StaticCache

    device = next(model.parameters()).device
    pad = tok.pad_token_id
    width_p = max(n for _, n in groups)
    group_of = {r: g for g, (rows, _) in enumerate(groups) for r in rows}
    prefix_len = {r: groups[g][1] for r, g in group_of.items()}
    width_s = max(len(ids[r]) - prefix_len[r] for r in range(len(ids)))
    pre_ids = torch.full((len(groups), width_p), pad, dtype=torch.long)
    pre_mask = torch.zeros_like(pre_ids)
    for g, (rows, n) in enumerate(groups):
        pre_ids[g, width_p - n:] = torch.tensor(ids[rows[0]][:n])
        pre_mask[g, width_p - n:] = 1
    with torch.no_grad():
        pos = (pre_mask.cumsum(-1) - 1).clamp(min=0)  # as generate numbers them: padding takes no position
        past = model(input_ids=pre_ids.to(device), attention_mask=pre_mask.to(device), position_ids=pos.to(device),
                     use_cache=True, logits_to_keep=1)
    past = getattr(past, CACHE_KW)
    index = torch.tensor([group_of[r] for r in range(len(ids))], device=device)
    cache = StaticCache(config=model.config, max_cache_len=width_p + width_s + max_new_tokens)
    for layer, src in zip(cache.layers, past.layers):
        layer.update(src.keys.index_select(0, index), src.values.index_select(0, index))
    input_ids = torch.full((len(ids), width_p + width_s), pad, dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    for r, row in enumerate(ids):
        n, g = prefix_len[r], group_of[r]
        input_ids[r, :width_p] = pre_ids[g]
        mask[r, :width_p] = pre_mask[g]
        rest = row[n:]
        input_ids[r, width_p + width_s - len(rest):] = torch.tensor(rest)
        mask[r, width_p + width_s - len(rest):] = 1
    return {"input_ids": input_ids, "attention_mask": mask}, cache


def chat_prompt(tok, user: str, system: str | None = None) -> str:
    msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
    return tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)

"""Forgetting, against the base model, on held-out text: perplexity and its relative change,
and the mean per-token KL divergence KL(p_base ‖ p_trained) of the next-token distributions
(0 for a model compared with itself). Run on two texts: held-out Wikipedia paragraphs (the
replay domain: replay can lower it) and a novel (outside what replay contains)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def encode_general(tok, texts: list[str], max_tokens: int) -> list[list[int]]:
    return [tok(t, add_special_tokens=False)["input_ids"][:max_tokens] for t in texts if t.strip()]


def _batches(seqs: list[list[int]], batch_size: int, pad_id: int):
    for i in range(0, len(seqs), batch_size):
        part = seqs[i : i + batch_size]
        width = max(len(s) for s in part)
        ids = torch.full((len(part), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(part), width), dtype=torch.long)
        for j, s in enumerate(part):
            ids[j, : len(s)] = torch.tensor(s)
            mask[j, : len(s)] = 1
        yield ids, mask


@torch.no_grad()
def next_token_logprobs(model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    device = next(model.parameters()).device
    logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits[:, :-1].float()
    return F.log_softmax(logits, dim=-1).cpu()


@torch.no_grad()
def general_nll_and_kl(model, base, seqs: list[list[int]], batch_size: int, pad_id: int) -> dict:
    """Token-weighted NLL and perplexity of `model`, and mean KL(base ‖ model) per token.
    With `base` None only perplexity is computed. `seq_nll`/`seq_tokens` per sequence are
    what the perplexity interval resamples."""
    nll_sum, kl_sum, n = 0.0, 0.0, 0
    seq_nll, seq_tokens = [], []
    for ids, mask in _batches(seqs, batch_size, pad_id):
        lp = next_token_logprobs(model, ids, mask)
        target = ids[:, 1:]
        valid = mask[:, 1:].bool()
        tok_lp = lp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        nll_sum += -tok_lp[valid].sum().item()
        n += int(valid.sum())
        seq_nll += (-(tok_lp * valid).sum(-1)).tolist()
        seq_tokens += valid.sum(-1).tolist()
        if base is not None:
            blp = next_token_logprobs(base, ids, mask)
            kl = (blp.exp() * (blp - lp)).sum(-1)
            kl_sum += kl[valid].sum().item()
    nll = nll_sum / max(n, 1)
    return {"nll": nll, "ppl": math.exp(nll), "kl": kl_sum / max(n, 1) if base is not None else None, "tokens": n,
            "seq_nll": seq_nll, "seq_tokens": seq_tokens}

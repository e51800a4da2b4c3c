"""Scoring: multiple choice by length-normalised log-likelihood, short answers by token
F1 and exact match (the SQuAD definitions, Rajpurkar et al. 2016).

The options of one question share their prefix (the question, and with RAG the retrieved
chunks): the prefix goes through the model once, its KV cache is copied to every option,
and the options run as one batch after it — not one full pass per option. Across
questions, `score_many` visits the prompts in token order and keeps the KV cache of the
longest prefix a prompt shares with the one before (RAG prompts whose top chunk is the
same share most of their tokens), so only the rest runs. Short prompts (the general-eval sets: a question of a few dozen
tokens) waste that path on batch-1 matrix products, so `score_batched` runs a group of
them as one left-padded batch instead, then all their options as one batch after it.
"""

from __future__ import annotations

import copy

import torch

from kbake.answers import exact_match, normalize_answer, token_f1
from kbake.models.generate import CACHE_KW


def option_ids(tok, options: list[str], eos: bool = True) -> list[list[int]]:
    """Each option's tokens. As the end of an assistant turn (`eos`), ended by EOS, so a short
    option that is only the start of a longer answer is not favoured; as a plain-text
    continuation (general-eval sets), without."""
    return [tok(o, add_special_tokens=False)["input_ids"] + ([tok.eos_token_id] if eos else []) for o in options]


def _sum_logprobs(first: torch.Tensor, logp: torch.Tensor, opts: list[list[int]]) -> list[tuple[float, int]]:
    out = []
    for i, o in enumerate(opts):
        total = first[o[0]].item()
        if len(o) > 1:
            idx = torch.tensor(o[1:])
            total += logp[i, torch.arange(len(o) - 1), idx].sum().item()
        out.append((total, len(o)))
    return out


def _prefill(model, prefix: list[int], reuse: tuple[list[int], object] | None = None):
    """Log-probs of the token after `prefix`, and the prefix's KV cache. `reuse` is (tokens,
    cache) of an earlier prompt, consumed: the cache is cut back to the common prefix and only
    the tokens after it run (at least the last one, whose logits are needed)."""
    device = next(model.parameters()).device
    keep, past = 0, None
    if reuse is not None:
        ids, cache = reuse
        limit = min(len(ids), len(prefix) - 1)
        while keep < limit and ids[keep] == prefix[keep]:
            keep += 1
        if keep:
            cache.crop(keep - cache.get_seq_length())  # a negative count removes tokens, in every transformers version
            past = cache
    # Only the last position's logits are needed: logits_to_keep=1 skips the output head over
    # the rest of the prompt (about a fifth of a 135 M model's FLOPs per token).
    out = model(input_ids=torch.tensor([prefix[keep:]], device=device), use_cache=True, logits_to_keep=1,
                **({CACHE_KW: past} if past is not None else {}))
    return out.logits[0, -1].float().log_softmax(-1).cpu(), getattr(out, CACHE_KW)


def _score_options(model, first: torch.Tensor, past, n_prefix: int, opts: list[list[int]],
                   pad_id: int) -> list[tuple[float, int]]:
    """(sum log-prob, n tokens) of each option, batched after the prefix's cache (consumed)."""
    device = next(model.parameters()).device
    n, width = len(opts), max(len(o) for o in opts)
    if width == 1:
        return [(first[o[0]].item(), 1) for o in opts]
    past.batch_repeat_interleave(n)
    ids = torch.full((n, width - 1), pad_id, dtype=torch.long)
    mask = torch.zeros((n, n_prefix + width - 1), dtype=torch.long)
    mask[:, :n_prefix] = 1
    for i, o in enumerate(opts):
        ids[i, : len(o) - 1] = torch.tensor(o[:-1])
        mask[i, n_prefix : n_prefix + len(o) - 1] = 1
    pos = torch.arange(n_prefix, n_prefix + width - 1).unsqueeze(0).expand(n, -1)
    logits = model(input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=pos.to(device),
                   use_cache=False, **{CACHE_KW: past}).logits
    return _sum_logprobs(first, logits.float().log_softmax(-1).cpu(), opts)


@torch.no_grad()
def score_shared(model, prefix: list[int], opts: list[list[int]], pad_id: int) -> list[tuple[float, int]]:
    """(sum log-prob, n tokens) of each option after `prefix`, sharing the prefix's KV cache."""
    first, past = _prefill(model, prefix)
    return _score_options(model, first, past, len(prefix), opts, pad_id)


@torch.no_grad()
def score_many(model, prefixes: list[list[int]], opts: list[list[list[int]]], pad_id: int,
               progress=None) -> list[list[tuple[float, int]]]:
    """`score_shared` for many questions, in the order given; prompts run in token order so
    each reuses the cache of the common prefix with the one before. `progress` is called
    once per question done."""
    out: list = [None] * len(prefixes)
    reuse = None
    for i in sorted(range(len(prefixes)), key=lambda i: prefixes[i]):
        first, past = _prefill(model, prefixes[i], reuse)
        out[i] = _score_options(model, first, copy.deepcopy(past), len(prefixes[i]), opts[i], pad_id)
        reuse = (prefixes[i], past)
        if progress:
            progress()
    return out


@torch.no_grad()
def score_batched(model, prefixes: list[list[int]], opts: list[list[list[int]]], pad_id: int,
                  batch_size: int = 16, progress=None) -> list[list[tuple[float, int]]]:
    """`score_shared` for many short prompts: `batch_size` prefixes (similar lengths together)
    run as one left-padded batch, their KV cache is gathered once per option, and every
    option of the group runs as one batch after it. The same scores as one pass per option
    (to float rounding); the rows' positions and attention masks skip the padding."""
    device = next(model.parameters()).device
    out: list = [None] * len(prefixes)
    order = sorted(range(len(prefixes)), key=lambda i: len(prefixes[i]))
    for start in range(0, len(order), batch_size):
        group = order[start : start + batch_size]
        lens = [len(prefixes[i]) for i in group]
        width_p = max(lens)
        ids = torch.full((len(group), width_p), pad_id, dtype=torch.long)
        mask = torch.zeros((len(group), width_p), dtype=torch.long)
        for r, i in enumerate(group):
            ids[r, width_p - lens[r] :] = torch.tensor(prefixes[i])
            mask[r, width_p - lens[r] :] = 1
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        res = model(input_ids=ids.to(device), attention_mask=mask.to(device), position_ids=pos.to(device), use_cache=True,
                    logits_to_keep=1)
        first = res.logits[:, -1].float().log_softmax(-1).cpu()
        past = getattr(res, CACHE_KW)
        rows = [(r, o) for r, i in enumerate(group) for o in opts[i]]
        width = max(len(o) for _, o in rows)
        if width == 1:
            scores = [(first[r, o[0]].item(), 1) for r, o in rows]
        else:
            past.batch_select_indices(torch.tensor([r for r, _ in rows], device=device))
            oids = torch.full((len(rows), width - 1), pad_id, dtype=torch.long)
            omask = torch.zeros((len(rows), width - 1), dtype=torch.long)
            for k, (_, o) in enumerate(rows):
                oids[k, : len(o) - 1] = torch.tensor(o[:-1])
                omask[k, : len(o) - 1] = 1
            opos = torch.tensor([lens[r] for r, _ in rows]).unsqueeze(1) + torch.arange(width - 1)
            full_mask = torch.cat([mask[[r for r, _ in rows]], omask], dim=1)
            logits = model(input_ids=oids.to(device), attention_mask=full_mask.to(device), position_ids=opos.to(device),
                           use_cache=False, **{CACHE_KW: past}).logits
            scores = []
            for k, (r, o) in enumerate(rows):  # row by row: a log-softmax of the whole batch is hundreds of MB
                total = first[r, o[0]].item()
                if len(o) > 1:
                    lp = logits[k, : len(o) - 1].float()
                    total += (lp.gather(-1, torch.tensor(o[1:], device=device)[:, None]).squeeze(-1)
                              - lp.logsumexp(-1)).sum().item()
                scores.append((total, len(o)))
        k = 0
        for i in group:
            out[i] = scores[k : k + len(opts[i])]
            k += len(opts[i])
            if progress:
                progress()
    return out


@torch.no_grad()
def score_separately(model, prefix: list[int], opts: list[list[int]]) -> list[tuple[float, int]]:
    """The reference: one full pass over prefix + option for every option."""
    device = next(model.parameters()).device
    out = []
    for o in opts:
        logits = model(input_ids=torch.tensor([prefix + o], device=device)).logits[0].float().log_softmax(-1).cpu()
        p = len(prefix)
        out.append((sum(logits[p - 1 + j, t].item() for j, t in enumerate(o)), len(o)))
    return out


def score_choices(model, tok, prefix_text: str, options: list[str]) -> list[float]:
    """Length-normalised log-likelihood (mean log-prob per token) of each option after the prefix."""
    return score_choices_many(model, tok, [prefix_text], [options])[0]


def score_choices_many(model, tok, prefix_texts: list[str], options: list[list[str]], progress=None,
                       eos: bool = True, batched: bool = False) -> list[list[float]]:
    """`score_choices` for many questions at once: reusing common prefixes across them
    (`score_many`, for long prompts such as RAG's), or `batched` (`score_batched`, for short ones)."""
    prefixes = [tok(t, add_special_tokens=False)["input_ids"] for t in prefix_texts]
    scorer = score_batched if batched else score_many
    raw = scorer(model, prefixes, [option_ids(tok, o, eos) for o in options], tok.pad_token_id, progress=progress)
    return [[total / n for total, n in r] for r in raw]


def choice_and_margin(scores: list[float], gold: int) -> tuple[int, float]:
    """The chosen option (highest score) and the margin of the correct option over the best
    other one, in mean log-prob per token: positive when right, and it moves before accuracy does."""
    best = max(range(len(scores)), key=lambda i: scores[i])
    return best, scores[gold] - max(s for i, s in enumerate(scores) if i != gold)


# ---------------------------------------------------------------- short answers: kbake.answers

__all__ = ["CACHE_KW", "choice_and_margin", "exact_match", "normalize_answer", "option_ids", "score_batched", "score_choices",
           "score_choices_many", "score_many", "score_separately", "score_shared", "token_f1"]

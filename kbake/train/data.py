"""Training data: corpora from the run folder, chat-templated QA with loss on the answer
only, a replay mix of general text, all packed into fixed-length blocks.

Packing concatenates examples, each ended by the EOS token, and cuts the stream into
`block_size` blocks, so no position is padding (the last partial block is dropped).
"""

from __future__ import annotations

import random
import warnings
from dataclasses import dataclass

import torch

from kbake.config import TrainArgs
from kbake.run import RunDir, read_chunks, read_items
from kbake.sample import general_paragraphs

IGNORE = -100


@dataclass
class Example:
    ids: list[int]
    labels: list[int]
    source: str


def qa_example(tok, question: str, answer: str) -> Example:
    """Chat-templated prompt/answer; the prompt's labels are IGNORE, so only the answer is learnt."""
    prompt = tok.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True, tokenize=False)
    full = tok.apply_chat_template([{"role": "user", "content": question}, {"role": "assistant", "content": answer}],
                                   tokenize=False)
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    f_ids = tok(full, add_special_tokens=False)["input_ids"]
    if f_ids[: len(p_ids)] != p_ids:  # a template that re-renders the prompt differently
        f_ids = p_ids + tok(full[len(prompt):], add_special_tokens=False)["input_ids"]
    if not f_ids or f_ids[-1] != tok.eos_token_id:
        f_ids = f_ids + [tok.eos_token_id]
    return Example(f_ids, [IGNORE] * len(p_ids) + f_ids[len(p_ids):], "qa")


def text_example(tok, text: str, source: str) -> Example:
    ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    return Example(ids, list(ids), source)


def _weighted(items: list, weight: float, rng: random.Random) -> list:
    whole, frac = int(weight), weight - int(weight)
    out = items * whole
    if frac > 0:
        out += rng.sample(items, round(frac * len(items)))
    return out


def load_examples(run: RunDir, args: TrainArgs, tok, seed: int, docs: set[str] | None = None,
                  allow_empty: bool = False) -> list[Example]:
    """The new-knowledge examples named by `args.data`, weighted. A missing corpus raises; an
    empty one is skipped with an `EmptyCorpusWarning` giving synth's reasons, and only when
    every corpus is empty does it raise (unless `allow_empty`). `docs`: only these documents' items."""
    from kbake.synth import KINDS  # the names are the synth registry's (checked here: config sits below synth)

    bad = [d for d in [*args.data, *args.data_weights] if d != "raw" and d not in KINDS]
    if bad:
        raise ValueError(f"train.data: unknown corpus {bad[0]!r}; allowed: raw, {', '.join(KINDS)}")
    rng = random.Random(seed)
    out: list[Example] = []
    empty: list[str] = []
    keep = (lambda d: True) if docs is None else (lambda d: d in docs)  # noqa: E731
    for name in args.data:
        w = args.data_weights.get(name, 1.0)
        if name == "raw":
            chunks = read_chunks(run.chunks)
            got = [text_example(tok, c["text"], "raw") for c in chunks if keep(c["doc_id"])]
        else:
            path = run.synth_dir / f"{name}.jsonl"
            if not path.exists():
                raise FileNotFoundError(f"{path}: no {name} corpus; run `kbake synth --run {run.root} --kind {name}` first")
            items = [it for it in read_items(path) if keep(it.doc_id)]
            got = [qa_example(tok, it.question, it.answer) if it.question is not None
                   else text_example(tok, it.text, name) for it in items]
        if not got:
            empty.append(name)
            continue
        out += _weighted(got, w, rng)
    if empty and not out and not allow_empty:
        where = "" if docs is None else " for the documents ingested since the model it starts from"
        raise ValueError(f"every corpus of train.data ({', '.join(empty)}) in {run.root} is empty{where}: "
                         f"nothing to train on{_why_empty(run, empty)}")
    if empty and out and not allow_empty:
        # A small generator can leave one kind empty; the others still teach (issue: empty is not a crash).
        warnings.warn(f"corpus {', '.join(repr(e) for e in empty)} in {run.root} is empty{_why_empty(run, empty)}; "
                      f"training on {', '.join(n for n in args.data if n not in empty)}", EmptyCorpusWarning,
                      stacklevel=2)
    return out


class EmptyCorpusWarning(UserWarning):
    """A corpus named in train.data has no items; training goes on with the others."""


def _why_empty(run: RunDir, names: list[str]) -> str:
    """What `kbake synth` recorded for these kinds: calls made and items removed per reason."""
    from kbake.run import load_manifest

    kinds = load_manifest(run).get("stages", {}).get("synth", {}).get("kinds", {})
    parts = []
    for n in names:
        k = kinds.get(n)
        if k:
            removed = ", ".join(f"{v} {r}" for r, v in (k.get("removed") or {}).items() if v)
            parts.append(f"{n}: {k.get('jobs', 0)} calls, {k.get('items', 0)} kept" + (f", removed {removed}" if removed else ""))
    return f" (kbake synth: {'; '.join(parts)})" if parts else ""


def ingest_rounds(run: RunDir) -> dict[str, int]:
    """Each document's ingest round (kbake/ingest: 1 for the first ingest that added it, ...)."""
    from kbake.run import load_manifest

    docs = load_manifest(run).get("stages", {}).get("ingest", {}).get("docs", {})
    return {d: info.get("round", 1) for d, info in docs.items()}


def rebake_examples(run: RunDir, args: TrainArgs, tok, seed: int, since_round: int) -> tuple[list[Example], int, int]:
    """An incremental re-bake's examples: every item of the documents ingested after
    `since_round`, plus `args.from_replay` (as a share of the whole) drawn from the earlier
    documents' items. Returns (examples, new documents, earlier documents)."""
    rounds = ingest_rounds(run)
    new_docs = {d for d, r in rounds.items() if r > since_round}
    old_docs = set(rounds) - new_docs
    if not new_docs:
        raise ValueError(f"{run.root}: no document was ingested after the model this training starts from; "
                         "ingest the newer documents first")
    new = load_examples(run, args, tok, seed, new_docs)
    old: list[Example] = []
    if args.from_replay > 0 and old_docs:
        # The earlier documents may lack a corpus the new ones have ('changes' needs two years).
        pool = load_examples(run, args, tok, seed, old_docs, allow_empty=True)
        random.Random(seed).shuffle(pool)
        want = int(sum(len(e.ids) for e in new) * args.from_replay / (1 - args.from_replay))
        total = 0
        for e in pool:
            if total >= want:
                break
            old.append(e)
            total += len(e.ids)
    return new + old, len(new_docs), len(old_docs)


def replay_examples(tok, n_new_tokens: int, ratio: float, seed: int) -> list[Example]:
    """General paragraphs totalling ratio/(1-ratio) × the new tokens: `ratio` of the mix."""
    if ratio <= 0:
        return []
    want = int(n_new_tokens * ratio / (1 - ratio))
    paras = general_paragraphs("replay")
    order = list(range(len(paras)))
    random.Random(seed).shuffle(order)
    out, total, k = [], 0, 0
    while total < want:
        ex = text_example(tok, paras[order[k % len(order)]], "replay")
        out.append(ex)
        total += len(ex.ids)
        k += 1
    return out


def pack_blocks(examples: list[Example], block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Concatenate examples (each ends with EOS) and cut into [n_blocks, block_size] ids and
    labels. A block's first label is ignored when it continues an example's prompt."""
    ids = [t for e in examples for t in e.ids]
    labels = [t for e in examples for t in e.labels]
    n = len(ids) // block_size
    if n == 0:
        raise ValueError(f"only {len(ids)} tokens: not one block of {block_size}; lower train.block_size")
    x = torch.tensor(ids[: n * block_size]).view(n, block_size)
    y = torch.tensor(labels[: n * block_size]).view(n, block_size)
    return x, y


@dataclass
class Blocks:
    train_ids: torch.Tensor
    train_labels: torch.Tensor
    eval_ids: torch.Tensor
    eval_labels: torch.Tensor
    new_tokens: int
    replay_tokens: int


def build_blocks(run: RunDir, args: TrainArgs, tok, seed: int, examples: list[Example] | None = None) -> Blocks:
    """New-knowledge examples (loaded here unless given) mixed with replay, packed, split into train/eval."""
    examples = examples if examples is not None else load_examples(run, args, tok, seed)
    new_tokens = sum(len(e.ids) for e in examples)
    replay = replay_examples(tok, new_tokens, args.replay_ratio, seed)
    mixed = examples + replay
    random.Random(seed).shuffle(mixed)
    x, y = pack_blocks(mixed, args.block_size)
    n_eval = max(1, round(len(x) * args.eval_fraction)) if args.eval_fraction > 0 and len(x) > 1 else 0
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    ev, tr = perm[:n_eval], perm[n_eval:]
    return Blocks(x[tr], y[tr], x[ev], y[ev], new_tokens, sum(len(e.ids) for e in replay))

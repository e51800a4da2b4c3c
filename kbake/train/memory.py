"""`memory`: a product-key memory beside the MLP of chosen layers, with addresses fitted to
the model's own hidden states (`kbake.models.memory.fit_addresses`), then sparse memory
finetuning (Lin et al. 2025, "Continual learning via sparse memory finetuning"): in each
batch, only the value rows of the t slots that the batch reads far more than general text
does are updated — TF-IDF over the slot hits at positions that carry loss, IDF from
`memory.background_batches` blocks of general text. Every other weight is frozen. SGD by
default: Lin et al. report it beats AdamW for sparse updates, and AdamW's momentum would
keep moving rows after the batch that chose them (both measurable: `memory.optimizer`)."""

from __future__ import annotations

from pathlib import Path

import torch

from kbake.config import TrainArgs
from kbake.models.memory import (
    MemoryConfig,
    add_memory,
    capture_mlp_io,
    fit_addresses,
    idf,
    lookup_hits,
    save_memory,
    slot_entropy,
    top_tfidf,
    trained_rows,
)
from kbake.train.loop import Prepared

SAVED_AS = "memory"
"""The trained folder holds the memory only; kbake.models.trained.ATTACH loads it onto the base model."""
CONTINUABLE = False
"""`--from` a memory model is not supported yet (its addresses were fitted to the earlier corpus)."""


def memory_config(args: TrainArgs) -> MemoryConfig:
    return MemoryConfig(layers=list(args.memory.layers), slots=args.memory.slots, k=args.memory.k,
                        key_dim=args.memory.key_dim, gated=args.memory.gated, addressing=args.memory.addressing)


def loss_positions(labels: torch.Tensor) -> torch.Tensor:
    """Bool [batch, tokens]: positions whose next-token prediction carries loss (labels are shifted by one)."""
    mask = torch.zeros_like(labels, dtype=torch.bool)
    mask[:, :-1] = labels[:, 1:] != -100
    return mask


def prepare(model, tok, args: TrainArgs, *, seed: int, examples, **_) -> Prepared:
    from kbake.sample import general_paragraphs
    from kbake.train.data import pack_blocks, text_example

    new_ids, new_labels = pack_blocks(examples, args.block_size)[:2]
    background = pack_blocks([text_example(tok, t, "general") for t in general_paragraphs("replay")],
                             args.block_size)[0][: args.memory.background_batches]
    torch.manual_seed(seed)  # random addressing, and the k-means starts
    mems = add_memory(model, memory_config(args))
    for p in model.parameters():
        p.requires_grad_(False)
    model.eval()
    io = capture_mlp_io(model, list(background) + list(new_ids))
    n_bg = len(background)
    fitted = {}
    for name, mem in mems.items():
        if args.memory.addressing == "activations":
            x = torch.cat([i for i, _ in io[name]])
            y = torch.cat([o for _, o in io[name]])
            fitted[name] = fit_addresses(mem, x, y, seed=seed)
        bg_hits = torch.stack([lookup_hits(mem, x) for x, _ in io[name][:n_bg]])  # [B, slots]
        # A buffer of the memory, not a tensor beside it: accelerate moves the model to its device
        # after `prepare`, and a plain tensor would stay on the CPU (the CUDA crash of issue 33).
        mem.register_buffer("idf", idf(bg_hits).to(mem.values.device), persistent=False)
        mem.values.requires_grad_(True)
        mem.record = "train"
    # The new corpus's layer inputs at positions that carry loss: what `finish` measures the
    # trained rows against (kept alone, so the rest of the capture can be freed).
    train_x = {name: torch.cat([x[loss_positions(lab.unsqueeze(0))[0]] for (x, _), lab in zip(io[name][n_bg:], new_labels)])
               for name in mems}
    del io
    model.train()

    batch_labels: list[torch.Tensor] = []

    def keep_labels(module, args_, kwargs):  # the loss masks of the micro-batches the memories read
        if module.training and kwargs.get("labels") is not None:
            batch_labels.append(kwargs["labels"])

    model.register_forward_pre_hook(keep_labels, with_kwargs=True)
    updated = {name: torch.zeros(mem.cfg.slots, dtype=torch.bool) for name, mem in mems.items()}
    per_batch = {name: [] for name in mems}

    def grad_hook(m) -> None:
        """Zero the gradient of every value row but the top-t by TF-IDF over this optimizer
        step's reads (all its micro-batches) at positions that carry loss."""
        for name, mem in m.kbake_memory.items():
            reads, mem.reads = mem.reads, []
            if mem.values.grad is None or not reads:
                continue
            tf = torch.zeros(mem.cfg.slots, device=mem.values.device)
            for i, (slots, _) in enumerate(reads):
                lab = batch_labels[i] if i < len(batch_labels) else None
                at = loss_positions(lab.to(slots.device)) if lab is not None and lab.shape == slots.shape[:2] \
                    else torch.ones(slots.shape[:2], dtype=torch.bool, device=slots.device)
                tf += torch.bincount(slots[at].flatten(), minlength=mem.cfg.slots).float()
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                torch.distributed.all_reduce(tf)  # one choice of rows on every rank
            keep = top_tfidf(tf, mem.idf, args.memory.top_t)
            mem.values.grad.mul_(keep.unsqueeze(1).to(mem.values.grad.dtype))
            updated[name] |= keep.cpu()
            per_batch[name].append(int(keep.sum()))
        batch_labels.clear()

    def finish(m) -> dict:
        """Diagnostics for trainer_state.json: what trained, and whether the corpus reads it."""
        out = {}
        for name, mem in m.kbake_memory.items():
            mem.record, mem.reads = False, []
            rows = trained_rows(mem)
            with torch.no_grad():
                slots, w = mem.lookup(train_x[name].to(mem.values.device, mem.values.dtype))
            share = float((w * rows[slots].to(w.dtype)).sum(dim=-1).mean())
            hits = torch.bincount(slots.flatten().cpu(), minlength=mem.cfg.slots)
            out[name] = {"updated_slots": int(updated[name].sum()), "trained_rows": int(rows.sum()),
                         "rows_per_batch": round(sum(per_batch[name]) / max(len(per_batch[name]), 1), 1),
                         "read_share_train_positions": round(share, 4), "slot_usage_train": slot_entropy(hits),
                         **({"fit": fitted[name]} if name in fitted else {})}
        return {"memory": out}

    trainable = args.memory.top_t * model.config.hidden_size * len(mems)  # rows one batch may update
    opt = None
    if args.memory.optimizer == "sgd":
        opt = lambda params: torch.optim.SGD(params, lr=args.lr)  # noqa: E731
    return Prepared(model, trainable, grad_hook, {"trainable_slots_per_batch": args.memory.top_t},
                    make_optimizer=opt, finish=finish)


def save(acc, model, folder: Path, tok, *, base_model: str, **_) -> None:
    if acc is None or acc.is_main_process:
        save_memory(acc.unwrap_model(model) if acc is not None else model, folder, base_model)
        tok.save_pretrained(folder)

"""`kbake train`: write the synthetic corpus into weights by full finetuning, LoRA, or a
memory layer with sparse memory finetuning, all on one loop (`loop.run_loop`).

Each trades learning against forgetting differently: at equal learning, Lin et al. 2025
measured NaturalQuestions F1 falling 89% with full finetuning, 71% with LoRA and 11% with
sparse memory finetuning; Biderman et al. 2024 found LoRA learns less and forgets less.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

import torch

from kbake.config import Recipe, TrainArgs, save_resolved
from kbake.models.precision import resolve_precision
from kbake.run import RunDir, atomic_write_json, make_private_dir, provenance, save_stage
from kbake.train import full, grpo, lora, memory, tiny
from kbake.train.data import build_blocks, ingest_rounds, load_examples, rebake_examples
from kbake.train.loop import run_loop

METHODS = {"full": full, "lora": lora, "tiny": tiny, "memory": memory, "grpo": grpo}
"""Each method is one module behind one interface (`train` below says which)."""


class TrainError(RuntimeError):
    """A problem found before training starts; the message names what is wrong."""


def estimate_memory_bytes(n_params: int, n_trainable: int, batch_tokens: int, hidden: int, n_layers: int,
                          shards: int = 1) -> int:
    """Per device: fp32 weights + grads + two AdamW moments for trainable params (split over
    `shards` devices under FSDP), plus a rough activation term (about 34 values per token,
    layer and hidden unit, as in Korthikanti et al. 2022), which sharding does not split."""
    return (4 * n_params + 12 * n_trainable) // shards + 4 * 34 * batch_tokens * hidden * n_layers


def fsdp_shards() -> int:
    """Devices the model state is sharded over: WORLD_SIZE under `accelerate launch --use_fsdp`, else 1."""
    if os.environ.get("ACCELERATE_USE_FSDP", "").lower() in ("1", "true"):
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    return 1


def check_fits(base_model: str, args: TrainArgs) -> None:
    """Refuse, before loading anything big, a model that will not fit in memory."""
    import psutil
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    from kbake.models import resolve_lm_path

    config = AutoConfig.from_pretrained(resolve_lm_path(base_model))
    with init_empty_weights():
        n = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    trainable = n if METHODS[args.method].SAVED_AS == "whole" else n // 50
    need = estimate_memory_bytes(n, trainable, args.batch_size * args.block_size, config.hidden_size,
                                 config.num_hidden_layers, shards=fsdp_shards())
    if torch.cuda.is_available():
        have, where = torch.cuda.mem_get_info()[0], "free GPU memory"
    else:
        have, where = psutil.virtual_memory().available, "available RAM"
    if need > have:
        raise TrainError(f"{base_model} ({n / 1e6:.0f} M parameters) needs about {need / 2**30:.1f} GiB for "
                         f"--method {args.method} at batch {args.batch_size} x {args.block_size}, more than the "
                         f"{have / 2**30:.1f} GiB of {where}; use --method lora, a smaller batch_size/block_size, or a GPU")


def seed_name(name: str, seed: int) -> str:
    """The folder of one seed of a multi-seed run: eval groups `NAME-sSEED` models and pools them."""
    return f"{name}-s{seed}"


def train_seeds(run: RunDir, recipe: Recipe, seeds: list[int], *, name: str | None = None, resume: bool = False,
                progress: bool = True) -> list[dict]:
    """The recipe trained once per seed, into RUN/train/NAME-sSEED/ (one after another; a seed
    whose model is already there is kept, so an interrupted run continues where it stopped)."""
    name = name or recipe.train.method
    states = []
    for s in seeds:
        folder = run.train_dir / seed_name(name, s)
        if (folder / "model").exists() and not resume:
            states.append(json.loads((folder / "trainer_state.json").read_text()))
            continue
        states.append(train(run, recipe.model_copy(update={"seed": s}), name=seed_name(name, s), resume=resume,
                            progress=progress))
    return states


def train(run: RunDir, recipe: Recipe, *, name: str | None = None, resume: bool = False,
          progress: bool = True) -> dict:
    """Train `recipe.train.method` on the run's corpora into `RUN/train/<name>/`.

    Every method module has the same small interface: `prepare(model, tok, args, seed=,
    examples=) -> Prepared`, `save(acc, model, folder, tok, base_model=)` (called on every
    process), `SAVED_AS` (how its folder loads: 'whole' for a standalone model, else the format
    models.trained.ATTACH puts onto a base), and the flag `CONTINUABLE`; one with `OWN_LOOP` (GRPO) runs its own trainer
    through `own_loop` and shares the rest of the bookkeeping."""
    from kbake.models import load_causal_lm
    from kbake.models.trained import start_from
    from kbake.train.loop import make_accelerator

    args = recipe.train
    seed = recipe.seed
    name = name or args.method
    if args.method not in METHODS:
        raise TrainError(f"train.method: unknown method {args.method!r}; allowed: {', '.join(METHODS)}")
    method = METHODS[args.method]
    out = run.train_dir / name
    if out.exists() and (out / "model").exists() and not resume:
        raise TrainError(f"{out} already holds a trained model; pick another --name or delete it")
    if args.init and not method.CONTINUABLE:
        raise TrainError(f"--from works with {', '.join(m for m, mod in METHODS.items() if mod.CONTINUABLE)}; "
                         f"a {args.method} model cannot be continued yet")
    check_fits(args.base_model, args)
    precision = resolve_precision(args.precision)  # once per run: the accelerator, the method and the state agree
    if getattr(method, "OWN_LOOP", False):
        return _train_own_loop(method, run, recipe, name, out, precision=precision, resume=resume, progress=progress)

    acc = make_accelerator(args, precision)
    since = None
    if args.init:
        init_state = run.train_dir / args.init / "trainer_state.json"
        since = json.loads(init_state.read_text()).get("ingest_round", 1) if init_state.exists() else 1
        model, tok = start_from(run.train_dir, args.init, args.base_model)
        examples, n_new_docs, n_old_docs = rebake_examples(run, args, tok, seed, since)
    else:
        model, tok = load_causal_lm(args.base_model)
        examples = load_examples(run, args, tok, seed)  # raises on a missing or empty corpus
    blocks = build_blocks(run, args, tok, seed, examples)
    one_batch = args.batch_size * acc.num_processes
    if len(blocks.train_ids) < one_batch:  # said, not done silently: the batch is smaller than the recipe's
        warnings.warn(f"{len(blocks.train_ids)} training blocks of {args.block_size} tokens, fewer than one batch of "
                      f"{one_batch}: every step trains on {len(blocks.train_ids)} blocks, not train.batch_size "
                      f"{args.batch_size}; lower train.block_size or train.batch_size, or add data", stacklevel=2)
    if acc.is_main_process:
        make_private_dir(out)
        save_resolved(recipe, out / "config.yaml")
    model.train()
    from accelerate.utils import set_seed

    set_seed(seed)  # before prepare: LoRA's A matrices and TinyLoRA's bases are drawn there (unseeded, runs differed)
    prepared = method.prepare(model, tok, args, seed=seed, examples=examples, precision=precision)
    model = prepared.model
    total_params = sum(p.numel() for p in model.parameters())

    def save_model(folder: Path) -> None:
        """The trained model as `kbake eval`/`export` load it; called on every process."""
        acc.wait_for_everyone()
        if acc.is_main_process:
            make_private_dir(folder)
        method.save(acc, model, folder, tok, base_model=args.base_model)
        if acc.is_main_process:
            _write_meta(folder, method, args)
        acc.wait_for_everyone()

    t0 = time.perf_counter()
    result = run_loop(model, blocks.train_ids, blocks.train_labels, blocks.eval_ids, blocks.eval_labels, args, out,
                      seed=seed, resume=resume, grad_hook=prepared.grad_hook, progress=progress, accelerator=acc,
                      snapshot=lambda step: save_model(out / "snapshots" / f"step-{step}"),
                      make_optimizer=prepared.make_optimizer)
    seconds = time.perf_counter() - t0
    finished = prepared.finish(acc.unwrap_model(model)) if prepared.finish else {}
    save_model(out / "model")
    state = {}
    if acc.is_main_process:
        state = {
            "method": args.method, "name": name, "global_step": result.steps, "train_seconds": round(seconds, 2),
            "tokens_seen": result.tokens, "final_loss": result.final_loss, "eval_loss": result.eval_loss,
            "trainable_params": prepared.trainable_params, "total_params": total_params,
            "resumed_from_step": result.resumed_from,
            "train_blocks": len(blocks.train_ids), "eval_blocks": len(blocks.eval_ids),
            "blocks_per_step": min(len(blocks.train_ids), one_batch),
            "new_tokens": blocks.new_tokens, "replay_tokens": blocks.replay_tokens,
            "world_size": acc.num_processes, "precision": precision,
            "ingest_round": max(ingest_rounds(run).values(), default=1), "init": args.init, **prepared.state, **finished,
        }
        if args.init:
            state["rebake"] = {"since_round": since, "new_documents": n_new_docs, "earlier_documents": n_old_docs}
        _write_state(run, recipe, name, out, state)
    return state


def _write_meta(folder: Path, method, args: TrainArgs) -> None:
    from kbake.models.trained import write_meta

    # A standalone model needs no record of where it started; an adapter must load onto it.
    write_meta(folder, args.method, args.base_model, init=None if method.SAVED_AS == "whole" else args.init, saved_as=method.SAVED_AS)


def _write_state(run: RunDir, recipe: Recipe, name: str, out: Path, state: dict) -> None:
    atomic_write_json(out / "trainer_state.json", state)
    prov = {**provenance(recipe.model_dump(mode="json"), seed=recipe.seed, model=recipe.train.base_model),
            "precision": state["precision"]}
    atomic_write_json(out / "provenance.json", prov)
    save_stage(run, f"train/{name}", {**prov, "trainer_state": state})


def _train_own_loop(method, run: RunDir, recipe: Recipe, name: str, out: Path, *, precision: str, resume: bool,
                    progress: bool) -> dict:
    """A method that runs its own trainer (GRPO through TRL): the same folder, meta and state files."""
    args = recipe.train
    make_private_dir(out)
    save_resolved(recipe, out / "config.yaml")
    model, tok, rows, seconds, steps, extra = method.own_loop(run, args, out, seed=recipe.seed, precision=precision,
                                                              resume=resume, progress=progress)
    final = out / "model"
    make_private_dir(final)
    method.save(None, model, final, tok, base_model=args.base_model)
    _write_meta(final, method, args)
    state = {"method": args.method, "name": name, "global_step": steps, "train_seconds": round(seconds, 2),
             "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
             "total_params": sum(p.numel() for p in model.parameters()), "resumed_from_step": None,
             "precision": precision, "init": args.init, **extra}
    _write_state(run, recipe, name, out, state)
    return state

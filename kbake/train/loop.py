"""The one training loop every method shares (nanoGPT-style, on accelerate).

Plain PyTorch: AdamW, gradient accumulation, warm-up then cosine or constant LR,
clipping, periodic eval loss, atomic checkpoints with resume, `metrics.jsonl` per step.
`accelerate` supplies devices, mixed precision (bf16 autocast over float32 master weights,
on CPUs too) and DDP/FSDP: the same code runs under `accelerate launch` on several GPUs
or machines.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset

from kbake.config import TrainArgs
from kbake.models.precision import mixed_precision_flag, resolve_precision
from kbake.run import make_private_dir


@dataclass
class Prepared:
    """What a method's `prepare` hands the shared loop: the model with only its trainable
    parameters requiring grad, an optional hook run after backward (sparse memory
    finetuning masks gradients there), the count of what trains, and extra entries for
    trainer_state.json."""

    model: torch.nn.Module
    trainable_params: int
    grad_hook: Callable[[torch.nn.Module], None] | None = None
    state: dict = field(default_factory=dict)
    make_optimizer: Callable[[list], torch.optim.Optimizer] | None = None
    """The optimizer over the trainable parameters; None: AdamW (betas 0.9, 0.95) at args.lr."""
    finish: Callable[[torch.nn.Module], dict] | None = None
    """Called on the trained model (unwrapped) after the loop; its dict joins trainer_state.json."""


@dataclass
class LoopResult:
    steps: int
    tokens: int
    seconds: float
    final_loss: float
    eval_loss: float | None
    resumed_from: int | None


def make_accelerator(args: TrainArgs, precision: str | None = None):
    """The Accelerator of a run, at `precision` (resolved from `args.precision` when not given).
    Without a GPU it is told so, which makes several processes started by torchrun
    (or mpirun) one gloo group: DDP on CPUs with no code change."""
    from accelerate import Accelerator

    has_gpu = torch.cuda.is_available() or (hasattr(torch.backends, "mps") and torch.backends.mps.is_available())
    flag = allow_precision_change(precision or resolve_precision(args.precision))
    return Accelerator(gradient_accumulation_steps=args.grad_accum, mixed_precision=flag, cpu=not has_gpu)


def allow_precision_change(precision: str) -> str:
    """accelerate keeps one process-wide AcceleratorState and refuses a second Accelerator
    with another `mixed_precision`; one process may train an fp32 model and then a bf16 one
    (`kbake demo --compare`, the tests), so a state of another precision is dropped. The
    process group (PartialState) is kept. Returns accelerate's `mixed_precision` flag for
    the resolved `precision`."""
    from accelerate.state import AcceleratorState

    flag = mixed_precision_flag(precision)
    shared = AcceleratorState._shared_state
    if shared and str(shared.get("_mixed_precision", flag)) != flag:
        AcceleratorState._reset_state(reset_partial_state=False)
    return flag


def make_schedule(optimizer: torch.optim.Optimizer, args: TrainArgs, total: int):
    """Linear warm-up over `warmup_ratio` of the `total` steps, then cosine decay to zero
    (Loshchilov & Hutter 2017, SGDR without restarts) or a constant rate: transformers' schedules."""
    from transformers import get_constant_schedule_with_warmup, get_cosine_schedule_with_warmup

    warm = int(total * args.warmup_ratio)
    if args.lr_schedule == "constant":
        return get_constant_schedule_with_warmup(optimizer, warm)
    return get_cosine_schedule_with_warmup(optimizer, warm, total)


def _latest_checkpoint(folder: Path) -> Path | None:
    done = [p for p in folder.glob("step-*") if (p / "DONE").exists()]
    return max(done, key=lambda p: int(p.name.split("-")[1])) if done else None


def run_loop(model, ids: torch.Tensor, labels: torch.Tensor, eval_ids: torch.Tensor, eval_labels: torch.Tensor,
             args: TrainArgs, out: Path, *, seed: int, resume: bool = False,
             grad_hook: Callable[[torch.nn.Module], None] | None = None, progress: bool = True,
             accelerator=None, snapshot: Callable[[int], None] | None = None,
             make_optimizer: Callable[[list], torch.optim.Optimizer] | None = None) -> LoopResult:
    """Train the parameters of `model` that require grad on the packed blocks.
    `grad_hook(model)` runs after backward, before clipping (sparse memory finetuning masks there);
    `snapshot(step)` every `args.snapshot_every` steps (before the last), on every process."""
    from accelerate.utils import set_seed
    from tqdm import tqdm

    acc = accelerator or make_accelerator(args)
    set_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("no trainable parameters")
    opt = make_optimizer(params) if make_optimizer else \
        torch.optim.AdamW(params, lr=args.lr, weight_decay=args.weight_decay, betas=(0.9, 0.95))
    model, opt = acc.prepare(model, opt)
    dataset = TensorDataset(ids, labels)

    def epoch_loader(epoch: int):
        # The order of an epoch is a pure function of (seed, epoch): a resumed run sees the
        # same batches as an uninterrupted one. accelerate shards each batch list across ranks.
        order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(seed * 1009 + epoch)).tolist()
        return acc.prepare(DataLoader(dataset, batch_size=args.batch_size, sampler=order))

    steps_per_epoch = max(1, math.ceil(len(epoch_loader(0)) / args.grad_accum))
    total = args.max_steps or max(1, math.ceil(steps_per_epoch * args.epochs))
    # Stepped by hand once per optimizer step (not prepared: accelerate would step it once per process).
    sched = make_schedule(opt.optimizer if hasattr(opt, "optimizer") else opt, args, total)
    acc.register_for_checkpointing(sched)
    eval_loader = acc.prepare(DataLoader(TensorDataset(eval_ids, eval_labels), batch_size=args.batch_size)) \
        if len(eval_ids) else None

    ckpt_dir = out / "checkpoints"
    if acc.is_main_process:
        make_private_dir(out)
    metrics_path = out / "metrics.jsonl"
    step, resumed_from, seen_tokens = 0, None, 0
    if resume and (last := _latest_checkpoint(ckpt_dir)) is not None:
        acc.load_state(str(last))
        state = json.loads((last / "loop_state.json").read_text())
        step, seen_tokens, resumed_from = state["step"], state["tokens"], state["step"]
        if acc.is_main_process and metrics_path.exists():  # drop metrics of steps after the checkpoint
            rows = [l for l in metrics_path.read_text().splitlines() if l and json.loads(l).get("step", 0) <= step]
            metrics_path.write_text("".join(r + "\n" for r in rows))
    elif acc.is_main_process and metrics_path.exists():
        metrics_path.unlink()

    def evaluate() -> float | None:
        if eval_loader is None:
            return None
        model.eval()
        losses = []
        with torch.no_grad():
            for x, y in eval_loader:
                losses.append(acc.gather_for_metrics(model(input_ids=x, labels=y).loss.detach().reshape(1)))
        model.train()
        return torch.cat(losses).mean().item()

    def save(step: int) -> None:
        # Not accelerate's ProjectConfiguration(total_limit=...): it rotates only its automatic
        # checkpoint names, written in place; here a temp folder is renamed when whole.
        tmp = ckpt_dir / f".step-{step}.tmp"
        acc.wait_for_everyone()
        acc.save_state(str(tmp))
        if acc.is_main_process:
            (tmp / "loop_state.json").write_text(json.dumps({"step": step, "tokens": seen_tokens}))
            (tmp / "DONE").write_text("")
            final = ckpt_dir / f"step-{step}"
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)  # a checkpoint exists whole or not at all
            for old in sorted((p for p in ckpt_dir.glob("step-*") if p != final),
                              key=lambda p: int(p.name.split("-")[1]))[: -(args.keep_checkpoints - 1) or None]:
                shutil.rmtree(old, ignore_errors=True)
        acc.wait_for_everyone()

    model.train()
    # Both closed however the loop ends (an exception, Ctrl-C): metrics.jsonl keeps every step written.
    with contextlib.ExitStack() as closing:
        bar = closing.enter_context(tqdm(total=total, initial=step, desc=f"train ({args.method})", unit="step",
                                         disable=not (progress and acc.is_main_process), dynamic_ncols=True))
        metrics = closing.enter_context(open(metrics_path, "a")) if acc.is_main_process else None
        t0, last_loss, eval_loss = time.perf_counter(), float("nan"), None
        window_tokens, window_t = 0, time.perf_counter()
        epoch = step // steps_per_epoch
        skip = (step - epoch * steps_per_epoch) * args.grad_accum
        while step < total:
            loader = epoch_loader(epoch)
            batches = acc.skip_first_batches(loader, skip) if skip else loader
            skip = 0
            accum_loss, micro = 0.0, 0
            for x, y in batches:
                with acc.accumulate(model):
                    loss = model(input_ids=x, labels=y).loss
                    acc.backward(loss)
                    accum_loss += loss.detach().float().item()
                    micro += 1
                    ntok = x.numel() * acc.num_processes
                    window_tokens += ntok
                    seen_tokens += ntok
                    if acc.sync_gradients:
                        if grad_hook is not None:
                            grad_hook(acc.unwrap_model(model))
                        gnorm = acc.clip_grad_norm_(params, args.max_grad_norm)
                    opt.step()  # accelerate skips it until the last micro-batch of the accumulation
                    if acc.sync_gradients:
                        sched.step()
                    opt.zero_grad(set_to_none=True)
                if not acc.sync_gradients:
                    continue
                step += 1
                last_loss = accum_loss / micro
                accum_loss, micro = 0.0, 0
                now = time.perf_counter()
                row = {"step": step, "epoch": round(step / steps_per_epoch, 4), "loss": round(last_loss, 6),
                       "lr": sched.get_last_lr()[0], "grad_norm": round(float(gnorm), 6),
                       "tokens_per_s": round(window_tokens / max(now - window_t, 1e-9), 2), "tokens": seen_tokens}
                window_tokens, window_t = 0, now
                if step % args.eval_every == 0 or step == total:
                    eval_loss = evaluate()
                    row["eval_loss"] = eval_loss
                if metrics:
                    metrics.write(json.dumps(row) + "\n")
                    metrics.flush()
                bar.update(1)
                bar.set_postfix(loss=f"{last_loss:.3f}", tok_s=f"{row['tokens_per_s']:.0f}", refresh=False)
                if step % args.save_every == 0 and step < total:
                    save(step)
                if snapshot is not None and args.snapshot_every and step % args.snapshot_every == 0 and step < total:
                    snapshot(step)
                if step >= total:
                    break
            epoch += 1
    return LoopResult(step, seen_tokens, time.perf_counter() - t0, last_loss, eval_loss, resumed_from)

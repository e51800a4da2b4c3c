"""`grpo`: reinforcement learning with verifiable rewards through TRL's GRPOTrainer
(Shao et al. 2024, DeepSeekMath): sample `grpo_num_generations` answers per question,
score each with the recipe's rewards against the reference answer, and move the policy
toward answers better than their group's mean, with a KL term (beta) to the start model.
Prompts are the run's synthetic QA pairs, never the probes; the policy is a LoRA adapter.
Generation is transformers' by default; `grpo_use_vllm: true` hands it to vLLM (TRL's
colocate mode) where vLLM is installed, on a GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from kbake.config import TrainArgs
from kbake.eval import SHORT_ANSWER_SUFFIX
from kbake.run import RunDir, read_items
from kbake.train.lora import attach, save  # noqa: F401 - the policy is a LoRA adapter, saved and loaded as one
from kbake.train.rewards import trl_reward

WHOLE_MODEL = False
CONTINUABLE = True
OWN_LOOP = True
"""TRL's GRPOTrainer runs the loop (sampling, rewards, the policy update); `own_loop` below."""


def prompts_dataset(run: RunDir, args: TrainArgs, seed: int):
    """QA pairs as conversational prompts with their reference answers."""
    from datasets import Dataset

    path = run.synth_dir / "qa.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"{path}: grpo needs QA pairs; run `kbake synth --run {run.root} --kind qa` first")
    items = [i for i in read_items(path) if i.question and i.answer]
    if not items:
        raise ValueError(f"{path} is empty: nothing to train on")
    rows = [{"prompt": [{"role": "user", "content": i.question + SHORT_ANSWER_SUFFIX}], "reference": i.answer}
            for i in items]
    ds = Dataset.from_list(rows).shuffle(seed=seed)
    return ds.select(range(min(len(ds), args.grpo_prompts))) if args.grpo_prompts else ds


def start_model(run: RunDir, args: TrainArgs):
    """The base model, or a model trained earlier with its LoRA merged in (`init`)."""
    from kbake.models.trained import start_from

    return start_from(run.train_dir, args.init, args.base_model)


def own_loop(run: RunDir, args: TrainArgs, out: Path, *, seed: int, resume: bool, progress: bool):
    """Run GRPO; returns (policy model, tokenizer, log rows, seconds, steps, trainer_state entries)."""
    import time

    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    from kbake.models.precision import resolve_precision
    from kbake.train.loop import allow_precision_change

    model, tok = start_model(run, args)
    ds = prompts_dataset(run, args, seed)
    names = list(args.grpo_rewards)
    precision = resolve_precision(args.precision)
    allow_precision_change(precision)  # the Trainer makes its own Accelerator
    per_device = args.batch_size * args.grpo_num_generations  # completions per step: prompts × generations
    cfg = GRPOConfig(
        output_dir=str(out / "trl"), per_device_train_batch_size=per_device, gradient_accumulation_steps=args.grad_accum,
        num_generations=args.grpo_num_generations, max_completion_length=args.grpo_max_completion_length,
        beta=args.grpo_beta, temperature=args.grpo_temperature, learning_rate=args.lr,
        lr_scheduler_type=args.lr_schedule, warmup_steps=args.warmup_ratio, max_grad_norm=args.max_grad_norm,
        num_train_epochs=args.epochs, max_steps=args.max_steps or -1, logging_steps=1, save_steps=args.save_every,
        save_total_limit=args.keep_checkpoints, seed=seed, reward_weights=[args.grpo_rewards[n] for n in names],
        report_to=[], disable_tqdm=not progress, bf16=precision == "bf16", fp16=precision == "fp16",
        use_cpu=not torch.cuda.is_available(), remove_unused_columns=False, log_completions=False,
        use_vllm=args.grpo_use_vllm, vllm_mode="colocate",
    )
    peft_cfg = LoraConfig(r=args.lora_r, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
                          target_modules=args.lora_targets, task_type="CAUSAL_LM")
    trainer = GRPOTrainer(model=model, reward_funcs=[trl_reward(n) for n in names], args=cfg, train_dataset=ds,
                          processing_class=tok, peft_config=peft_cfg)
    t0 = time.perf_counter()
    last = None
    if resume:
        ckpts = sorted((out / "trl").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
        last = str(ckpts[-1]) if ckpts else None
    trainer.train(resume_from_checkpoint=last)
    rows = [r for r in trainer.state.log_history if "loss" in r or "reward" in r]
    with open(out / "metrics.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    rewards = [r["reward"] for r in rows if "reward" in r]
    state = {"final_loss": rows[-1].get("loss", float("nan")) if rows else float("nan"), "eval_loss": None,
             "first_reward": rewards[0] if rewards else None, "final_reward": rewards[-1] if rewards else None,
             "tokens_seen": None}
    return trainer.model, tok, rows, time.perf_counter() - t0, trainer.state.global_step, state

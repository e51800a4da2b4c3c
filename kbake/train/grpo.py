"""`grpo`: reinforcement learning with verifiable rewards through TRL's GRPOTrainer
(Shao et al. 2024, DeepSeekMath): sample `grpo.num_generations` answers per question,
score each with the environment's rewards against the reference answer, and move the policy
toward answers better than their group's mean, with a KL term (beta) to the start model.
Prompts are the run's synthetic QA pairs, never the probes. The environment
(kbake/train/environments.py: `qa` or `lookup`) supplies prompts, rollouts and rewards; the
policy is a LoRA adapter or a TinyLoRA vector (`grpo.adapter`). `init` starts from a model
trained earlier: SFT then RL. Generation is transformers' by default; `grpo.use_vllm: true`
hands it to vLLM (TRL's colocate mode) where vLLM is installed, on a GPU.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from kbake.config import TrainArgs
from kbake.run import RunDir
from kbake.train import lora, tiny
from kbake.train.environments import make_environment

SAVED_AS = "adapter"
"""A LoRA or TinyLoRA adapter, whichever it trained; kbake.models.trained.ATTACH tells them apart by their files."""
CONTINUABLE = True
OWN_LOOP = True
"""TRL's GRPOTrainer runs the loop (sampling, rewards, the policy update); `own_loop` below."""


def save(acc, model, folder: Path, tok, **kw) -> None:
    """The policy's adapter, LoRA or TinyLoRA, as those methods save it."""
    (tiny if hasattr(model, "kbake_tiny") else lora).save(acc, model, folder, tok, **kw)


def start_model(run: RunDir, args: TrainArgs):
    """The base model, or a model trained earlier with its adapter merged in (`init`)."""
    from kbake.models.trained import start_from

    return start_from(run.train_dir, args.init, args.base_model)


TRL_FIELDS = {
    "grad_accum": "gradient_accumulation_steps", "grpo.num_generations": "num_generations",
    "grpo.max_completion_length": "max_completion_length", "grpo.beta": "beta", "grpo.temperature": "temperature",
    "lr": "learning_rate", "lr_schedule": "lr_scheduler_type", "max_grad_norm": "max_grad_norm",
    "epochs": "num_train_epochs", "save_every": "save_steps", "keep_checkpoints": "save_total_limit",
    "grpo.use_vllm": "use_vllm",
}
"""kbake's train key (dotted under `train:`) -> the GRPOConfig field that takes its value unchanged."""


def train_value(args: TrainArgs, dotted: str):
    """The value of a dotted `train:` key, e.g. 'grpo.beta'."""
    value = args
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def grpo_config_kwargs(args: TrainArgs, *, out: Path, seed: int, precision: str, progress: bool) -> dict:
    """The keyword arguments of TRL's GRPOConfig for this run: the fields of TRL_FIELDS copied, the rest derived.
    Warm-up: transformers 5 reads a float `warmup_steps` in [0, 1) as a share of the steps and dropped
    `warmup_ratio`; transformers 4 counts `warmup_steps` in steps and takes the share as `warmup_ratio`."""
    import transformers

    kw = {trl: train_value(args, ours) for ours, trl in TRL_FIELDS.items()}
    major = int(transformers.__version__.split(".")[0])
    kw["warmup_steps" if major >= 5 else "warmup_ratio"] = args.warmup_ratio
    kw.update(
        output_dir=str(out / "trl"),
        per_device_train_batch_size=args.batch_size * args.grpo.num_generations,  # completions: prompts × generations
        max_steps=args.max_steps or -1, logging_steps=1, seed=seed, report_to=[], disable_tqdm=not progress,
        bf16=precision == "bf16", fp16=precision == "fp16", use_cpu=not torch.cuda.is_available(),
        remove_unused_columns=False, log_completions=False, vllm_mode="colocate",
    )
    return kw


def own_loop(run: RunDir, args: TrainArgs, out: Path, *, seed: int, precision: str, resume: bool, progress: bool):
    """Run GRPO at the run's resolved `precision`; returns (policy model, tokenizer, log rows, seconds, steps, trainer_state entries)."""
    import time

    from trl import GRPOConfig, GRPOTrainer

    from kbake.train.rewards import REWARDS

    unknown = [r for r in args.grpo.rewards if r not in REWARDS]
    if unknown:  # checked here, not in config: the reward functions live in this layer
        raise ValueError(f"train.grpo.rewards: unknown reward {unknown[0]!r}; allowed: {', '.join(sorted(REWARDS))}")

    from kbake.train.loop import allow_precision_change

    model, tok = start_model(run, args)
    env = make_environment(run, args)
    ds = env.dataset(seed)
    reward_funcs, reward_weights = env.reward_funcs()
    allow_precision_change(precision)  # the Trainer makes its own Accelerator
    cfg = GRPOConfig(**grpo_config_kwargs(args, out=out, seed=seed, precision=precision, progress=progress),
                     reward_weights=reward_weights)
    peft_cfg = None
    if args.grpo.adapter == "lora":
        peft_cfg = lora.lora_config(args)
    else:
        if args.init and args.grpo.beta:
            # Without peft, TRL loads its KL reference from config._name_or_path: make that the start model.
            ref = out / "reference"
            model.save_pretrained(ref)
            model.config._name_or_path = str(ref)
        tiny.prepare(model, tok, args, seed=seed)
    if env.rollout is not None:  # rollout_func is marked experimental in TRL; kbake pins its contract in tests
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    trainer = GRPOTrainer(model=model, reward_funcs=reward_funcs, args=cfg, train_dataset=ds, processing_class=tok,
                          peft_config=peft_cfg, rollout_func=env.rollout)
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
    if (out / "reference").exists():
        import shutil

        shutil.rmtree(out / "reference")
    state = {"grpo_env": env.name, "grpo_adapter": args.grpo.adapter,
             "final_loss": rows[-1].get("loss", float("nan")) if rows else float("nan"), "eval_loss": None,
             "first_reward": rewards[0] if rewards else None, "final_reward": rewards[-1] if rewards else None,
             "tokens_seen": None}
    return trainer.model, tok, rows, time.perf_counter() - t0, trainer.state.global_step, state

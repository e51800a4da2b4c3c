"""`kbake train --method grpo` on the tiny model: a few steps run, the reward rises on a
learnable toy task, and only adapter weights change."""

from __future__ import annotations

import json

import pytest
import torch

import kbake.train.rewards as rewards
from kbake.models import load_causal_lm
from kbake.models.trained import load_trained
from kbake.train import train

from trainfix import small_run, tiny_recipe


def toy_reward(completion: str, reference: str) -> float:
    """Learnable by a random tiny model: the share of characters that are the letter 'e'."""
    return completion.count("e") / max(1, len(completion))


@pytest.fixture
def run(tmp_path, peaky_tiny_model):
    return small_run(tmp_path / "run", peaky_tiny_model)


def test_grpo_reward_rises_and_only_the_adapter_changes(run, peaky_tiny_model, monkeypatch):
    tiny_model = peaky_tiny_model
    monkeypatch.setitem(rewards.REWARDS, "toy", toy_reward)
    r = tiny_recipe(tiny_model, "grpo", lr=5e-2, max_steps=24, batch_size=4, grpo_num_generations=4,
                    grpo_max_completion_length=8, grpo_beta=0.0, grpo_temperature=1.0, grpo_rewards={"toy": 1.0},
                    lora_r=8, lora_alpha=16, lora_dropout=0.0, warmup_ratio=0.0, lr_schedule="constant")
    state = train(run, r, progress=False)
    rows = [json.loads(l) for l in open(run.train_dir / "grpo" / "metrics.jsonl")]
    rew = [row["reward"] for row in rows if "reward" in row]
    assert len(rew) == state["global_step"] == 24
    first, last = sum(rew[:6]) / 6, sum(rew[-6:]) / 6
    assert last > first + 0.05, rew

    policy, _ = load_trained(run.train_dir / "grpo")
    base, _ = load_causal_lm(tiny_model)
    base_sd = base.state_dict()
    changed_lora = 0
    for name, p in policy.named_parameters():
        if "lora_" in name:
            changed_lora += int(p.abs().sum() > 0)
            continue
        key = name.replace("base_model.model.", "").replace(".base_layer", "")
        assert torch.equal(p, base_sd[key]), name
    assert changed_lora > 0


def test_grpo_needs_qa_pairs(run, peaky_tiny_model):
    (run.synth_dir / "qa.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="grpo needs QA pairs"):
        train(run, tiny_recipe(peaky_tiny_model, "grpo", max_steps=1), progress=False)

"""`kbake train --method grpo` on the tiny model: a few steps run, the reward rises on a
learnable toy task, and only adapter weights change."""

from __future__ import annotations

import json

import pytest
import torch
from trainfix import small_run, tiny_recipe

import kbake.train.rewards as rewards
from kbake.models import load_causal_lm
from kbake.models.trained import load_trained
from kbake.train import train


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
    rows = [json.loads(l) for l in (run.train_dir / "grpo" / "metrics.jsonl").read_text().splitlines()]
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


def test_an_unknown_reward_fails_naming_its_key(run, peaky_tiny_model):
    with pytest.raises(ValueError, match="train.grpo.rewards: unknown reward 'nope'; allowed: exact_match, f1"):
        train(run, tiny_recipe(peaky_tiny_model, "grpo", max_steps=1, grpo_rewards={"nope": 1.0}), progress=False)


def test_lookup_environment_rolls_out_a_lookup_and_the_reward_sees_its_passage(run, peaky_tiny_model, monkeypatch):
    """The tool environment: a completion that calls `lookup:` gets the run's best chunk
    appended (masked from the loss), answers after it, and the rewards receive the passage."""
    from kbake.run import read_chunks
    from kbake.train import environments

    seen = []

    def sees_passage(prompts, completions, lookups=None, answers=None, **kwargs):
        seen.extend(zip(lookups, answers))
        return [0.0] * len(completions)

    # The random tiny model never writes `lookup:` by itself: its first turn is forced to one.
    real_sample = environments.LookupEnvironment._sample
    calls = []

    def first_turn_looks_up(self, model, tok, prompt_ids):
        calls.append(len(prompt_ids))
        if len(calls) % 2 == 1:
            return [tok("lookup: Corvane revenue", add_special_tokens=False)["input_ids"] for _ in prompt_ids]
        return real_sample(self, model, tok, prompt_ids)

    monkeypatch.setattr(environments.LookupEnvironment, "_sample", first_turn_looks_up)
    orig_rewards = environments.LookupEnvironment.reward_funcs
    monkeypatch.setattr(environments.LookupEnvironment, "reward_funcs",
                        lambda self: (lambda f, w: (f + [sees_passage], w + [0.0]))(*orig_rewards(self)))
    r = tiny_recipe(peaky_tiny_model, "grpo", grpo_env="lookup", max_steps=1, batch_size=2, grpo_num_generations=2,
                    grpo_max_completion_length=6, grpo_beta=0.0, grpo_lookup_chars=80, lora_r=4, lora_alpha=8)
    state = train(run, r, progress=False)
    assert state["grpo_env"] == "lookup" and state["global_step"] == 1
    assert calls[:2] == [4, 4]  # 2 prompts x 2 generations, then the 4 answers after the lookup
    texts = {c["text"][:80] for c in read_chunks(run.chunks)}
    assert len(seen) == 4
    for lookup, _ in seen:
        assert lookup["query"] == "Corvane revenue"
        assert lookup["passage"] in texts  # the chunk BM25 ranked first, cut to grpo_lookup_chars
    rows = [json.loads(l) for l in (run.train_dir / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert any(abs(row.get("rewards/lookup_cost/mean", 0.0) + 0.1) < 1e-6 for row in rows), rows


def test_lookup_rollout_masks_the_passage(run, peaky_tiny_model):
    """env_mask is 0 exactly on the tokens the environment wrote."""
    from types import SimpleNamespace

    from kbake.config import TrainArgs
    from kbake.models import load_causal_lm
    from kbake.train.environments import LookupEnvironment

    model, tok = load_causal_lm(peaky_tiny_model)
    env = LookupEnvironment(run, TrainArgs(grpo_env="lookup", grpo_max_completion_length=4, grpo_lookup_chars=60))
    env._sample = lambda m, t, p: [t("lookup: revenue", add_special_tokens=False)["input_ids"]] * len(p) \
        if not hasattr(env, "_once") and not setattr(env, "_once", 1) else [[5, 6]] * len(p)
    trainer = SimpleNamespace(processing_class=tok, model=model, accelerator=SimpleNamespace(unwrap_model=lambda m: m))
    out = env.rollout([[{"role": "user", "content": "What was revenue?"}]], trainer)
    ids, mask = out["completion_ids"][0], out["env_mask"][0]
    call = tok("lookup: revenue", add_special_tokens=False)["input_ids"]
    assert ids[: len(call)] == call and ids[-2:] == [5, 6]
    assert mask == [1] * len(call) + [0] * (len(ids) - len(call) - 2) + [1, 1]
    assert tok.decode(ids[len(call): -2]).startswith("\nResult: ")


def test_grpo_with_a_tiny_adapter_trains_only_its_vector(run, peaky_tiny_model, monkeypatch):
    monkeypatch.setitem(rewards.REWARDS, "toy", toy_reward)
    r = tiny_recipe(peaky_tiny_model, "grpo", grpo_adapter="tiny", tiny_params=5, tiny_tie="all", lr=5e-2,
                    max_steps=2, batch_size=2, grpo_num_generations=2, grpo_max_completion_length=6, grpo_beta=0.04,
                    grpo_rewards={"toy": 1.0})
    state = train(run, r, progress=False)
    assert state["trainable_params"] == 5 and state["grpo_adapter"] == "tiny"
    policy, tok = load_trained(run.train_dir / "grpo")
    base, _ = load_causal_lm(peaky_tiny_model)
    ids = tok("The company", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        assert (policy(ids).logits - base(ids).logits).abs().max() > 1e-6

"""TinyLoRA (`--method tiny`, `grpo_adapter: tiny`): exactly the configured number of
trainable parameters, the base function at start, the logits move after one step, and
the saved folder loads (and merges) to the same function."""

from __future__ import annotations

import pytest
import torch
from trainfix import small_run, tiny_recipe

from kbake.models import load_causal_lm
from kbake.models.tiny_lora import TinyConfig, apply_tiny_lora, merge_tiny
from kbake.models.trained import load_trained
from kbake.train import train


@pytest.mark.parametrize("tie,groups", [("all", lambda n_layers, n_mods: 1), ("layer", lambda n_layers, n_mods: n_layers),
                                        ("module", lambda n_layers, n_mods: n_mods)])
def test_trainable_count_is_exactly_the_configured_one(tiny_model, tie, groups):
    model, _ = load_causal_lm(tiny_model)
    n_layers = model.config.num_hidden_layers
    apply_tiny_lora(model, TinyConfig(params=13, rank=2, tie=tie))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert trainable == 13 * groups(n_layers, 7 * n_layers)


def test_starts_as_the_base_and_one_step_moves_the_logits(tiny_model):
    model, tok = load_causal_lm(tiny_model)
    ids = tok("Corvane Industries reported revenue", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        before = model(ids).logits.clone()
    apply_tiny_lora(model, TinyConfig(params=4, rank=2))
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, before, atol=1e-5)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=1.0)  # the tiny model's singular values are small (init 0.02)
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    with torch.no_grad():
        after = model(ids).logits
    assert (after - before).abs().max() > 1e-4
    merged = merge_tiny(model)
    assert not any(p.requires_grad is False and "vector" in n for n, p in merged.named_parameters())
    with torch.no_grad():
        assert torch.allclose(merged(ids).logits, after, atol=1e-4)


def test_sft_with_tiny_trains_saves_and_loads(tmp_path, tiny_model):
    run = small_run(tmp_path / "run", tiny_model)
    state = train(run, tiny_recipe(tiny_model, "tiny", tiny_params=8, tiny_tie="layer", lr=5e-2, max_steps=6),
                  progress=False)
    model, _ = load_causal_lm(tiny_model)
    assert state["trainable_params"] == 8 * model.config.num_hidden_layers
    assert state["final_loss"] == pytest.approx(state["final_loss"])  # a number, not nan
    adapted, tok = load_trained(run.train_dir / "tiny")
    merged, _ = load_trained(run.train_dir / "tiny", merge=True)
    ids = tok("The company's revenue", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        a, m, b = adapted(ids).logits, merged(ids).logits, model(ids).logits
    assert torch.allclose(a, m, atol=1e-4)
    assert (a - b).abs().max() > 1e-4

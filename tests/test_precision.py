"""Precision: `auto` follows the hardware check (and keeps fp32 where bf16 is not native),
bf16 scores and training stay within stated tolerances of fp32, and the static KV cache
generates exactly what the dynamic one does. Behaviour and tolerances, never timings."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import CPU_ONLY
from trainfix import small_run, tiny_recipe

import kbake.models.precision as precision
from kbake.config import EvalArgs, Recipe
from kbake.eval.score import score_choices_many
from kbake.models import load_causal_lm
from kbake.models.generate import chat_prompt, generate_batch
from kbake.models.precision import cast_for_inference, resolve_precision
from kbake.run import read_probes
from kbake.sample import sample_probes
from kbake.train import train

# Tolerances, measured on the tiny model (tests) and the real one (docs/eval.md, benchmarks/RESULTS.md).
SCORE_TOL = 0.05  # mean log-prob per option token, bf16 weights vs fp32, tiny model
REAL_SCORE_TOL = 0.3  # the same on the embedded 135M model: 0.21 at most, 0.037 on average, measured
LOSS_TOL = 0.05  # per-step training loss, bf16 autocast vs fp32, over 9 steps




@pytest.fixture
def no_native_bf16(monkeypatch):
    monkeypatch.setattr(precision, "cpu_native_bf16", lambda: False)


@pytest.fixture
def native_bf16(monkeypatch):
    monkeypatch.setattr(precision, "cpu_native_bf16", lambda: True)


def test_auto_follows_the_capability_check(monkeypatch):
    monkeypatch.setattr(precision, "cpu_native_bf16", lambda: False)
    assert resolve_precision("auto", "cpu") == "fp32"
    monkeypatch.setattr(precision, "cpu_native_bf16", lambda: True)
    assert resolve_precision("auto", "cpu") == "bf16"
    # An explicit choice is honoured whatever the check says; fp16 has no CPU path worth taking.
    assert resolve_precision("fp32", "cpu") == "fp32"
    assert resolve_precision("bf16", "cpu") == "bf16"
    assert resolve_precision("fp16", "cpu") == "fp32"
    with pytest.raises(ValueError, match="precision must be"):
        resolve_precision("int8", "cpu")


def test_a_bf16_flag_alone_does_not_choose_bf16(monkeypatch):
    """The flag is necessary, not sufficient: a Xeon reporting AVX512-BF16 ran bf16 matmuls at
    0.47x float32 (2026-12-06), so auto needs the measured speedup too."""
    choose = precision.cpu_native_bf16.__wrapped__  # uncached
    monkeypatch.setattr(precision, "cpu_bf16_flag", lambda: True)
    monkeypatch.setattr(precision, "cpu_bf16_speedup", lambda: 0.47)
    assert choose() is False
    monkeypatch.setattr(precision, "cpu_bf16_speedup", lambda: 2.7)
    assert choose() is True
    monkeypatch.setattr(precision, "cpu_bf16_flag", lambda: False)
    assert choose() is False  # no flag: emulated bf16, whatever a timing says


def test_the_bf16_speedup_is_measured():
    # A ratio of two real timings: positive and finite; its value depends on the machine.
    r = precision.cpu_bf16_speedup.__wrapped__(tokens=64, width=32, hidden=48, reps=2)
    assert 0 < r < 100


@CPU_ONLY
def test_a_cpu_without_native_bf16_trains_evaluates_and_generates_in_fp32(tmp_path, tiny_model, no_native_bf16):
    from kbake.eval import evaluate
    from kbake.llm.local import LocalBackend

    run = small_run(tmp_path / "run", tiny_model)
    state = train(run, tiny_recipe(tiny_model, "lora", max_steps=2), progress=False)
    assert state["precision"] == "fp32"
    assert json.loads((run.train_dir / "lora" / "provenance.json").read_text())["precision"] == "fp32"
    backend = LocalBackend(tiny_model)
    assert backend.precision == "fp32" and "@" not in backend.model_id
    assert next(backend.model.parameters()).dtype == torch.float32
    r = Recipe(eval=EvalArgs(base_model=tiny_model, short_answers=False, general_paragraphs=4, general_questions=0))
    metrics = evaluate(run, r, progress=False)
    assert metrics["provenance"]["precision"] == "fp32"


@CPU_ONLY
def test_a_cpu_with_native_bf16_trains_evaluates_and_generates_in_bf16(tmp_path, tiny_model, native_bf16):
    from kbake.llm.local import LocalBackend

    run = small_run(tmp_path / "run", tiny_model)
    state = train(run, tiny_recipe(tiny_model, "lora", max_steps=2), progress=False)
    assert state["precision"] == "bf16"
    backend = LocalBackend(tiny_model)
    assert backend.precision == "bf16" and backend.model_id.endswith("@bf16")
    assert next(backend.model.parameters()).dtype == torch.bfloat16


def test_bf16_option_scores_stay_near_fp32(tiny_model):
    model, tok = load_causal_lm(tiny_model)
    probes = read_probes(sample_probes())[:24]
    prefixes = [chat_prompt(tok, p.question) for p in probes]
    options = [[p.answer, *p.distractors] for p in probes]
    fp32 = score_choices_many(model, tok, prefixes, options)
    cast_for_inference(model, "bf16")
    assert next(model.parameters()).dtype == torch.bfloat16
    bf16 = score_choices_many(model, tok, prefixes, options)
    diffs = [abs(a - b) for x, y in zip(fp32, bf16) for a, b in zip(x, y)]
    assert 0 < max(diffs) < SCORE_TOL  # bf16 really ran (not identical) and stayed close


def test_bf16_training_loss_curve_tracks_fp32(tmp_path, tiny_model):
    curves = {}
    for p in ("fp32", "bf16"):
        run = small_run(tmp_path / p, tiny_model)
        train(run, tiny_recipe(tiny_model, "full", max_steps=9, precision=p, eval_every=100), progress=False)
        curves[p] = [json.loads(l)["loss"] for l in (run.train_dir / "full" / "metrics.jsonl").read_text().splitlines()]
    assert len(curves["fp32"]) == len(curves["bf16"]) == 9
    assert curves["fp32"] != curves["bf16"]  # autocast really ran
    assert max(abs(a - b) for a, b in zip(curves["fp32"], curves["bf16"])) < LOSS_TOL
    assert curves["bf16"][-1] < curves["bf16"][0]  # and it learns


def test_static_cache_generates_what_the_dynamic_cache_does(tiny_model):
    model, tok = load_causal_lm(tiny_model)
    prompts = [chat_prompt(tok, q) for q in ("Where are the membranes made?", "Who is the chief executive?",
                                             "What was the dividend per share in fiscal 2025, and when was it paid?")]
    dynamic = generate_batch(model, tok, prompts, max_new_tokens=16, cache="dynamic")
    static = generate_batch(model, tok, prompts, max_new_tokens=16, cache="static")
    assert [g.text for g in static] == [g.text for g in dynamic]
    assert [g.new_tokens for g in static] == [g.new_tokens for g in dynamic]


def test_shared_prefix_generates_what_separate_prompts_do(tiny_model):
    """Prompts sharing an instruction and a chunk (and one repeated whole, as candidates are)
    prefill that prefix once; in fp32 the greedy answers are the same token for token."""
    from kbake.models.generate import prefix_groups

    model, tok = load_causal_lm(tiny_model)
    chunks = ["Corvane makes membranes in Tacoma. Revenue was $1,842.6 million in fiscal 2025. " * 4,
              "The chief executive is Dana Whitfield; the board met nine times. " * 2]
    prompts = [chat_prompt(tok, f"Text: {c}\n{ins}") for c in chunks
               for ins in ("Summarise it.", "List its facts as bullets.")]
    prompts += [prompts[0], chat_prompt(tok, "Who is the chief executive?")]
    ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    groups = prefix_groups(ids, 16)
    assert sorted(len(rows) for rows, _ in groups) == [1, 2, 3]  # each chunk's prompts, and the other
    for rows, n in groups:
        assert n < min(len(ids[r]) for r in rows)  # a token is left to prefill in every row
        assert all(ids[r][:n] == ids[rows[0]][:n] for r in rows)
    plain = generate_batch(model, tok, prompts, max_new_tokens=24)
    shared = generate_batch(model, tok, prompts, max_new_tokens=24, share_prefix=16)
    assert [g.text for g in shared] == [g.text for g in plain]
    assert [(g.new_tokens, g.prompt_tokens) for g in shared] == [(g.new_tokens, g.prompt_tokens) for g in plain]
    assert plain[0].text == plain[4].text
    # Sharper than a random model's greedy text: each row's next-token logits after the shared
    # cache equal a plain forward pass of its prompt.
    from kbake.models.generate import CACHE_KW, _prefilled

    inputs, cache = _prefilled(model, tok, ids, groups, 4)
    width_p = max(n for _, n in groups)
    mask = inputs["attention_mask"]
    pos = (mask.cumsum(-1) - 1).clamp(min=0)[:, width_p:]
    with torch.no_grad():
        got = model(input_ids=inputs["input_ids"][:, width_p:], attention_mask=mask, position_ids=pos,
                    **{CACHE_KW: cache}).logits[:, -1]
        want = torch.stack([model(input_ids=torch.tensor([row])).logits[0, -1] for row in ids])
    assert torch.allclose(got, want, atol=1e-4)


@pytest.mark.slow
def test_real_model_bf16_answers_the_probes_as_fp32_does():
    """The embedded model on the sample's first 77 probes (the set the tolerances were measured on;
    all 193 took 86 s of the suite), closed book: bf16 accuracy within one probe of fp32, and no
    option score further than REAL_SCORE_TOL from fp32's."""
    model, tok = load_causal_lm("default")
    probes = read_probes(sample_probes())[:77]
    prefixes = [chat_prompt(tok, p.question) for p in probes]
    options = [[p.answer, *p.distractors] for p in probes]
    fp32 = score_choices_many(model, tok, prefixes, options)
    bf16 = score_choices_many(cast_for_inference(model, "bf16"), tok, prefixes, options)
    correct = [sum(max(range(4), key=s.__getitem__) == 0 for s in scores) for scores in (fp32, bf16)]
    assert abs(correct[0] - correct[1]) <= 1
    assert max(abs(a - b) for x, y in zip(fp32, bf16) for a, b in zip(x, y)) < REAL_SCORE_TOL

"""`kbake train` on the tiny model: packing, each method learns, LoRA and memory touch
only their own weights, memory starts as a no-op and round-trips, resume, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from trainfix import small_run, tiny_recipe

from kbake.models import load_causal_lm, load_tokenizer
from kbake.models.memory import MemoryConfig, add_memory, idf, load_memory, save_memory, top_tfidf
from kbake.models.trained import export_merged, load_trained
from kbake.run import RunDir
from kbake.train import TrainError, train
from kbake.train.data import IGNORE, build_blocks, pack_blocks, qa_example, text_example
from kbake.train.loop import run_loop


@pytest.fixture
def run(tmp_path, tiny_model):
    return small_run(tmp_path / "run", tiny_model)


def losses(path):
    return [json.loads(l)["loss"] for l in Path(path).read_text().splitlines()]


def state_of(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


# ---------------------------------------------------------------- data


def test_qa_example_trains_on_the_answer_only(tiny_model):
    tok = load_tokenizer(tiny_model)
    ex = qa_example(tok, "Where is the foundry?", "Muncie, Indiana")
    answer_ids = [t for t, l in zip(ex.ids, ex.labels) if l != IGNORE]
    assert tok.decode(answer_ids).strip().startswith("Muncie, Indiana")
    assert ex.ids[-1] == tok.eos_token_id and ex.labels[-1] == tok.eos_token_id
    assert ex.labels[0] == IGNORE


def test_packing_has_no_padding_and_keeps_separators(tiny_model):
    tok = load_tokenizer(tiny_model)
    exs = [text_example(tok, f"Document number {i} about pumps and membranes.", "x") for i in range(40)]
    x, y = pack_blocks(exs, 32)
    assert x.shape[1] == 32
    assert (x == tok.pad_token_id).sum() == 0  # pad id differs from EOS here: nothing is padding
    stream = [t for e in exs for t in e.ids]
    assert x.flatten().tolist() == stream[: x.numel()]
    assert (x == tok.eos_token_id).sum() >= x.numel() // len(exs[0].ids) - 1


def test_replay_mix_ratio(run, tiny_model):
    tok = load_tokenizer(tiny_model)
    r = tiny_recipe(tiny_model, "lora", replay_ratio=0.25)
    b = build_blocks(run, r.train, tok, 0)
    share = b.replay_tokens / (b.replay_tokens + b.new_tokens)
    assert 0.24 < share < 0.30


def test_missing_corpus_is_a_clear_error(run, tiny_model):
    r = tiny_recipe(tiny_model, "lora", data=["rephrase"])
    with pytest.raises(FileNotFoundError, match=r"no rephrase corpus; run `kbake synth"):
        train(run, r, progress=False)


# ---------------------------------------------------------------- methods


@pytest.mark.parametrize("method", ["full", "lora", "memory"])
def test_each_method_learns_and_loads_back(run, tiny_model, method):
    r = tiny_recipe(tiny_model, method, snapshot_every=3)
    state = train(run, r, progress=False)
    out = run.train_dir / method
    ls = losses(out / "metrics.jsonl")
    assert len(ls) == state["global_step"] >= 6
    assert sum(ls[-3:]) / 3 < sum(ls[:3]) / 3 - 0.05, ls  # the loss really goes down
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert {"loss", "lr", "tokens_per_s", "grad_norm"} <= set(row)
    model, tok = load_trained(out)
    x = torch.tensor([[1, 5, 9, 20, 33]])
    with torch.no_grad():
        trained_logits = model(input_ids=x).logits
    base, _ = load_causal_lm(tiny_model)
    with torch.no_grad():
        assert not torch.allclose(trained_logits, base(input_ids=x).logits)
    assert json.loads((out / "provenance.json").read_text())["seed"] == 0
    assert state["trainable_params"] < state["total_params"] or method == "full"
    # snapshots every 3 steps load like the final model, and differ from it (taken earlier)
    snaps = sorted((out / "snapshots").iterdir(), key=lambda p: int(p.name.split("-")[1]))
    assert [int(p.name.split("-")[1]) for p in snaps] == list(range(3, state["global_step"], 3))
    early, _ = load_trained(snaps[0])
    with torch.no_grad():
        assert not torch.allclose(early(input_ids=x).logits, trained_logits)


@pytest.mark.parametrize("method", ["lora", "memory"])
def test_adapter_methods_leave_base_weights_bit_identical(run, tiny_model, method, monkeypatch):
    import kbake.train as tr

    captured = {}
    real = tr.run_loop

    def spy(model, *a, **kw):
        before = {k: v.detach().cpu().clone() for k, v in model.named_parameters() if not v.requires_grad}
        res = real(model, *a, **kw)
        # the loop may move the model: compare on the CPU
        captured["changed"] = [k for k, v in model.named_parameters() if k in before and not torch.equal(v.detach().cpu(), before[k])]
        captured["n_frozen"] = len(before)
        if method == "memory":
            captured["rows"] = {name: int((mem.values.detach().abs().sum(dim=1) > 0).sum())
                                for name, mem in model.kbake_memory.items()}
        return res

    monkeypatch.setattr(tr, "run_loop", spy)
    r = tiny_recipe(tiny_model, method)
    state = train(run, r, progress=False)
    assert captured["n_frozen"] > 10 and captured["changed"] == []
    if method == "memory":
        for name, rows in captured["rows"].items():
            diag = state["memory"][name]
            # only the rows each batch's TF-IDF chose moved, at most top_t of them per batch
            assert 0 < rows == diag["trained_rows"] <= diag["updated_slots"]
            assert diag["rows_per_batch"] <= r.train.memory.top_t
            assert 0 < diag["read_share_train_positions"] <= 1 and diag["slot_usage_train"]["effective_slots"] > 1


def test_memory_is_a_no_op_at_init_and_round_trips(tiny_model, tmp_path):
    base, _ = load_causal_lm(tiny_model)
    x = torch.randint(0, 200, (2, 12))
    with torch.no_grad():
        ref = base(input_ids=x).logits.clone()
    model, _ = load_causal_lm(tiny_model)
    mems = add_memory(model, MemoryConfig(layers=[0, 1], slots=64, k=4, key_dim=8, addressing="random"))
    with torch.no_grad():
        assert torch.equal(model(input_ids=x).logits, ref)
        for m in mems.values():
            m.values.normal_()
        changed = model(input_ids=x).logits.clone()
    assert not torch.allclose(changed, ref)
    save_memory(model, tmp_path / "mem", tiny_model)
    again, _ = load_causal_lm(tiny_model)
    load_memory(again, tmp_path / "mem")
    with torch.no_grad():
        assert torch.equal(again(input_ids=x).logits, changed)


def test_tfidf_prefers_slots_the_new_data_reads_and_general_text_does_not(device):
    new = torch.zeros(4, 1, 10, dtype=torch.long, device=device)
    new[:, 0, 2] = 5  # read by the new data and by all background text
    new[:, 0, 7] = 3  # read by the new data only
    new[:, 0, 4] = 1
    bg = torch.zeros(8, 1, 10, dtype=torch.long, device=device)
    bg[:, 0, 2] = 9
    mask = top_tfidf(new.sum(dim=0).float(), idf(bg), top_t=2)
    assert mask.device.type == device.type and mask[0].nonzero().flatten().tolist() == [4, 7]


# ---------------------------------------------------------------- the loop


def test_resume_matches_an_uninterrupted_run(run, tiny_model, tmp_path):
    tok = load_tokenizer(tiny_model)
    args = tiny_recipe(tiny_model, "full", max_steps=8, save_every=4, lr_schedule="cosine", warmup_ratio=0.2).train
    b = build_blocks(run, args, tok, 0)

    def fresh():
        m, _ = load_causal_lm(tiny_model)
        m.train()
        return m

    whole = fresh()
    run_loop(whole, b.train_ids, b.train_labels, b.eval_ids, b.eval_labels, args, tmp_path / "a", seed=0, progress=False)

    calls = {"n": 0}

    def die_at_step_6(model):
        calls["n"] += 1
        if calls["n"] == 6:
            raise KeyboardInterrupt("killed")

    with pytest.raises(KeyboardInterrupt):
        run_loop(fresh(), b.train_ids, b.train_labels, b.eval_ids, b.eval_labels, args, tmp_path / "b", seed=0,
                 grad_hook=die_at_step_6, progress=False)
    assert [p.name for p in (tmp_path / "b" / "checkpoints").iterdir()] == ["step-4"]
    resumed = fresh()
    res = run_loop(resumed, b.train_ids, b.train_labels, b.eval_ids, b.eval_labels, args, tmp_path / "b", seed=0,
                   resume=True, progress=False)
    assert res.resumed_from == 4 and res.steps == 8
    for (k, v), (_, w) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        assert torch.allclose(v, w, atol=1e-5), k
    assert [json.loads(l)["step"] for l in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()] == list(range(1, 9))
    assert losses(tmp_path / "b" / "metrics.jsonl") == pytest.approx(losses(tmp_path / "a" / "metrics.jsonl"), abs=1e-4)


def test_a_corpus_smaller_than_one_batch_says_so(run, tiny_model):
    """Fewer blocks than train.batch_size: the step's real batch is said, not shrunk silently (issue 33)."""
    with pytest.warns(UserWarning, match=r"fewer than one batch of 4096: every step trains on \d+ blocks"):
        state = train(run, tiny_recipe(tiny_model, "lora", batch_size=4096, max_steps=1), progress=False)
    assert state["blocks_per_step"] == state["train_blocks"] < 4096


def test_model_too_big_is_refused_before_training(run, tmp_path):
    from transformers import LlamaConfig

    big = tmp_path / "big"
    LlamaConfig(vocab_size=128000, hidden_size=16384, intermediate_size=53248, num_hidden_layers=126,
                num_attention_heads=128, num_key_value_heads=8).save_pretrained(big)
    r = tiny_recipe(str(big), "full")
    with pytest.raises(TrainError, match=r"needs about .* GiB .* more than the"):
        train(run, r, progress=False)


def test_fsdp_splits_the_model_state_not_the_activations(monkeypatch):
    """Under `accelerate launch --use_fsdp` each device holds 1/WORLD_SIZE of the weights, grads and
    AdamW moments, so the fit check must not refuse a model that only fits sharded."""
    from kbake.train import estimate_memory_bytes, fsdp_shards

    one = estimate_memory_bytes(8_000_000_000, 8_000_000_000, 0, 4096, 32)
    assert one == 16 * 8_000_000_000 and estimate_memory_bytes(8_000_000_000, 8_000_000_000, 0, 4096, 32, shards=8) == one // 8
    assert estimate_memory_bytes(0, 0, 1024, 4096, 32, shards=8) == estimate_memory_bytes(0, 0, 1024, 4096, 32)
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.delenv("ACCELERATE_USE_FSDP", raising=False)
    assert fsdp_shards() == 1  # DDP: every rank holds the whole model
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    assert fsdp_shards() == 8


def test_export_merge_equals_adapter(run, tiny_model, tmp_path):
    train(run, tiny_recipe(tiny_model, "lora", epochs=1), progress=False)
    adapter, _ = load_trained(run.train_dir / "lora")
    merged_dir = export_merged(run.train_dir / "lora", tmp_path / "merged")
    merged, _ = load_causal_lm(str(merged_dir))
    x = torch.randint(0, 200, (1, 10))
    with torch.no_grad():
        assert torch.allclose(adapter(input_ids=x).logits, merged(input_ids=x).logits, atol=1e-4)
    assert not (merged_dir / "adapter_config.json").exists()


@pytest.mark.parametrize("method", ["lora", "full"])
def test_rebake_from_a_trained_model_trains_on_the_newer_documents(tmp_path, tiny_model, method):
    """Ingest year 1, train; ingest year 2 into the same run, `train --from` the first model:
    it starts from that model, trains on year 2 plus `from_replay` of year 1, and loads back
    with the earlier model's knowledge underneath (LoRA: the adapter chain)."""
    from kbake.config import IngestArgs
    from kbake.ingest import ingest
    from kbake.train.data import ingest_rounds, rebake_examples

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "acme-2024.txt").write_text("Annual report for the fiscal year ended September 28, 2024.\n\n"
                                        + "Acme ran four membrane plants and sold pumps in Denmark. " * 20)
    rd = RunDir.at(tmp_path / "run")
    ingest([str(docs / "acme-2024.txt")], rd, IngestArgs(tokenizer=tiny_model), progress=False)
    first = train(rd, tiny_recipe(tiny_model, method, data=["raw"], epochs=1), name="y1", progress=False)
    assert first["ingest_round"] == 1 and first["init"] is None
    (docs / "acme-2025.txt").write_text("Annual report for the fiscal year ended September 27, 2025.\n\n"
                                        + "Acme ran five membrane plants and opened a plant in Chile. " * 20)
    ingest([str(docs / "acme-2025.txt")], rd, IngestArgs(tokenizer=tiny_model), progress=False)
    assert sorted(ingest_rounds(rd).values()) == [1, 2]
    recipe = tiny_recipe(tiny_model, method, data=["raw"], epochs=1, init="y1", from_replay=0.25)
    tok = load_tokenizer(tiny_model)
    # A corpus only the newer documents have ('changes' needs two years) is no error for the replay part.
    from kbake.run import SynthItem, read_chunks, write_items

    new_doc = next(c["doc_id"] for c in read_chunks(rd.chunks) if "2025" in c["source"])
    write_items(rd.synth_dir / "changes.jsonl", [SynthItem(
        id="ch-1", kind="changes", doc_id=new_doc, chunk_ids=[], generator="changes/table-diff",
        prompt_version="changes.v1", model="none", text="Acme: Plants was 5, up from 4.")])
    both = recipe.train.model_copy(update={"data": ["raw", "changes"]})
    mixed, _, _ = rebake_examples(rd, both, tok, 0, since_round=1)
    assert any("up from 4" in tok.decode(e.ids) for e in mixed)
    examples, n_new, n_old = rebake_examples(rd, recipe.train, tok, 0, since_round=1)
    assert (n_new, n_old) == (1, 1)
    new = [e for e in examples if "Chile" in tok.decode(e.ids)]
    old = [e for e in examples if "Denmark" in tok.decode(e.ids)]
    assert new and old and len(new) + len(old) == len(examples)
    new_tokens, old_tokens = sum(len(e.ids) for e in new), sum(len(e.ids) for e in old)
    # a quarter of the mix (new/3 tokens), to within one example; not all of year 1
    assert new_tokens / 3 <= old_tokens < new_tokens / 3 + max(len(e.ids) for e in old)
    second = train(rd, recipe, name="y2", progress=False)
    assert second["init"] == "y1" and second["rebake"] == {"since_round": 1, "new_documents": 1, "earlier_documents": 1}
    m1, _ = load_trained(rd.train_dir / "y1" / "model", merge=True)
    m2, _ = load_trained(rd.train_dir / "y2" / "model", merge=True)
    ids = torch.tensor([tok("Acme ran five membrane plants")["input_ids"]])
    with torch.no_grad():
        assert not torch.allclose(m1(ids).logits, m2(ids).logits)
    with pytest.raises(ValueError, match="no document was ingested after"):
        rebake_examples(rd, recipe.train, tok, 0, since_round=2)


def test_an_empty_corpus_is_skipped_with_its_reasons_and_all_empty_is_an_error(tmp_path, tiny_model):
    """Empty is not a crash: a corpus that came out empty is reported (with synth's counts) and
    training goes on with the others; only when every corpus is empty does it stop."""
    from kbake.run import save_stage
    from kbake.train.data import EmptyCorpusWarning

    run = small_run(tmp_path / "run", tiny_model)
    (run.synth_dir / "entigraph.jsonl").write_text("")
    save_stage(run, "synth", {"kinds": {"entigraph": {"jobs": 5, "items": 0, "removed": {"format": 5}}}})
    with pytest.warns(EmptyCorpusWarning, match=r"'entigraph'.*entigraph: 5 calls, 0 kept, removed 5 format.*training on qa"):
        state = train(run, tiny_recipe(tiny_model, "lora", data=["qa", "entigraph"], max_steps=1), progress=False)
    assert state["global_step"] == 1
    (run.synth_dir / "qa.jsonl").write_text("")
    with pytest.raises(ValueError, match="every corpus of train.data .* is empty"):
        train(run, tiny_recipe(tiny_model, "lora", data=["qa", "entigraph"], max_steps=1), name="again", progress=False)


@pytest.mark.parametrize("schedule", ["cosine", "constant"])
def test_schedule_warms_up_linearly_then_decays_by_cosine_or_holds(tiny_model, schedule):
    import math

    from kbake.train.loop import make_schedule

    args = tiny_recipe(tiny_model, "full", lr=1e-3, lr_schedule=schedule, warmup_ratio=0.1).train
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=args.lr)
    sched = make_schedule(opt, args, total=100)
    lrs = []
    for _ in range(100):
        lrs.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    assert lrs[0] == 0.0 and lrs[5] == pytest.approx(5e-4) and lrs[10] == pytest.approx(1e-3)
    after = 1e-3 * 0.5 * (1 + math.cos(math.pi * (55 - 10) / 90)) if schedule == "cosine" else 1e-3
    assert lrs[55] == pytest.approx(after)


def test_grpo_config_is_built_from_the_train_keys(tiny_model, tmp_path):
    import transformers
    from trl import GRPOConfig

    from kbake.train.grpo import TRL_FIELDS, grpo_config_kwargs, train_value

    args = tiny_recipe(tiny_model, "grpo", lr=3e-5, warmup_ratio=0.1, grad_accum=2, grpo_beta=0.05).train
    cfg = GRPOConfig(**grpo_config_kwargs(args, out=tmp_path, seed=7, precision="fp32", progress=False))
    for ours, theirs in TRL_FIELDS.items():
        assert getattr(cfg, theirs) == train_value(args, ours), ours
    assert cfg.per_device_train_batch_size == args.batch_size * args.grpo.num_generations and cfg.seed == 7
    if int(transformers.__version__.split(".")[0]) >= 5:
        assert cfg.warmup_steps == 0.1  # a share of the steps, as transformers 5 reads a float below 1
    else:
        assert cfg.warmup_ratio == 0.1


def test_lora_in_bf16_stores_the_frozen_base_in_bf16_and_trains_the_same_adapter(tmp_path, tiny_model, monkeypatch):
    """bf16 autocast multiplies every linear layer in bf16 anyway: storing the frozen weights in bf16
    leaves the trained adapter bit for bit as it was with an fp32 base; the adapter itself stays fp32."""
    from safetensors.torch import load_file

    import kbake.train as tr
    import kbake.train.lora as lora

    dtypes = {}
    real = tr.run_loop

    def spy(model, *a, **kw):
        dtypes.setdefault("runs", []).append({n: p.dtype for n, p in model.named_parameters()})
        return real(model, *a, **kw)

    monkeypatch.setattr(tr, "run_loop", spy)
    adapters = []
    for stored in ("bf16", "fp32"):
        if stored == "fp32":
            monkeypatch.setattr(lora, "store_frozen_linears", lambda model, dtype: 0)
        run = small_run(tmp_path / stored, tiny_model)
        train(run, tiny_recipe(tiny_model, "lora", precision="bf16", max_steps=4), progress=False)
        adapters.append(load_file(run.train_dir / "lora" / "model" / "adapter_model.safetensors"))
    stored_bf16 = dtypes["runs"][0]
    assert {d for n, d in stored_bf16.items() if "base_layer" in n} == {torch.bfloat16}
    assert {d for n, d in stored_bf16.items() if "lora_" in n} == {torch.float32}
    assert stored_bf16["base_model.model.model.embed_tokens.weight"] == torch.float32  # tied to the head: kept
    assert {d for n, d in dtypes["runs"][1].items()} == {torch.float32}
    assert adapters[0].keys() == adapters[1].keys()
    for k in adapters[0]:
        torch.testing.assert_close(adapters[0][k], adapters[1][k], rtol=0, atol=0)


def test_an_unknown_method_is_named_with_the_registered_ones(run, tiny_model):
    with pytest.raises(TrainError, match=r"train.method: unknown method 'dpo'; allowed: full, lora, tiny, memory, grpo"):
        train(run, tiny_recipe(tiny_model, "dpo"), progress=False)

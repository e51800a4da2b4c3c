"""The memory layer on a toy knowledge task: addresses fitted to the model's activations,
sparse memory finetuning, and what it must do — learn facts asked in held-out wordings
while moving general text less than LoRA does."""

from __future__ import annotations

import pytest
import torch

from kbake.config import Recipe
from kbake.eval.forgetting import encode_general, general_nll_and_kl
from kbake.eval.score import score_choices_many
from kbake.models import load_causal_lm
from kbake.models.memory import MemoryConfig, add_memory, capture_mlp_io, fit_addresses, lookup_hits, read_share
from kbake.models.trained import load_trained
from kbake.run import RunDir, SynthItem, write_items
from kbake.sample import general_paragraphs
from kbake.train import train

# Eight made-up facts: a place and the one thing it is known for.
FACTS = [("Zorvan", "copper"), ("Meliad", "salt"), ("Quenta", "glass"), ("Barrow", "wool"),
         ("Tessin", "amber"), ("Olvik", "timber"), ("Dunmere", "silver"), ("Pella", "cotton")]
TRAIN_WORDINGS = ["The town of {e} is known for its {a}.", "People in {e} trade mostly in {a}.",
                  "Ask anyone about {e} and they will say {a}.", "In {e} the main industry is {a}."]
HELD_OUT = "Which goods is {e} famous for? Well, {e} is known for its"


def toy_run(root) -> RunDir:
    run = RunDir.at(root).ensure()
    items = [SynthItem(id=f"toy-{i}-{j}", kind="rephrase", doc_id="toy", chunk_ids=["toy"], generator="toy",
                       prompt_version="toy", model="test", text=w.format(e=e, a=a))
             for i, (e, a) in enumerate(FACTS) for j, w in enumerate(TRAIN_WORDINGS)]
    write_items(run.synth_dir / "rephrase.jsonl", items)
    return run


def margin(model, tok, wording: str = HELD_OUT) -> float:
    """Mean over the facts of the right answer's score minus the mean of the seven others
    (mean log-prob per token as a plain-text continuation): continuous, so 8 facts suffice."""
    answers = [a for _, a in FACTS]
    scores = score_choices_many(model, tok, [wording.format(e=e) for e, _ in FACTS], [[" " + x for x in answers]] * len(FACTS),
                                eos=False)
    return sum(sc[i] - (sum(sc) - sc[i]) / (len(sc) - 1) for i, sc in enumerate(scores)) / len(FACTS)


def recipe(tiny_model, method: str, **kw) -> Recipe:
    train_args = dict(method=method, base_model=tiny_model, data=["rephrase"], block_size=32, batch_size=4, epochs=30,
                      replay_ratio=0.0, warmup_ratio=0.0, eval_every=1000, save_every=1000, precision="fp32",
                      memory_slots=1024, memory_k=8, memory_key_dim=16, memory_top_t=256, memory_background_batches=16,
                      lr=300.0, lora_r=8, lora_alpha=16, lora_dropout=0.0)  # SGD on the memory's rows: a large lr
    if method == "lora":
        train_args["lr"] = 1e-2
    train_args.update(kw)
    return Recipe(seed=0, train=train_args)


def test_fitted_addresses_whiten_queries_and_spread_reads(tiny_model):
    model, tok = load_causal_lm(tiny_model)
    mems = add_memory(model, MemoryConfig(layers=[1], slots=64, k=4, key_dim=8))
    mem = mems["1"]
    blocks = [torch.tensor(tok(t)["input_ids"][:64]) for t in general_paragraphs("replay")[:24]]
    io = capture_mlp_io(model, blocks)["1"]
    x, y = torch.cat([i for i, _ in io]), torch.cat([o for _, o in io])
    info = fit_addresses(mem, x, y, seed=0)
    with torch.no_grad():
        q = mem.query(x)
    assert q.mean(0).abs().max() < 1e-3  # centred
    assert torch.allclose(q.var(0), torch.ones(8), atol=0.05)  # whitened
    assert float(mem.out_scale) == pytest.approx(float(y.pow(2).mean().sqrt()), rel=1e-4) and info["vectors"] == len(x)
    hits = lookup_hits(mem, x)
    assert (hits > 0).sum() > 48  # k-means keys: most of the 64 slots are read by general text
    with torch.no_grad():
        ref = model(input_ids=blocks[0][None]).logits
    assert torch.equal(ref, model(input_ids=blocks[0][None]).logits)  # values zero: still a no-op


def test_memory_learns_held_out_wordings_and_moves_general_text_less_than_lora(tmp_path, peaky_tiny_model):
    """Measured when written (2026-12-04): margin on the held-out wording base -0.19, memory
    0.27, LoRA 0.32; on a training wording base 0.01, memory 1.73, random addresses 0.02
    (SGD moves nothing through random addresses); KL on general text memory 2.0, LoRA 5.0.
    The peaky tiny model has an output head strong enough for a residual branch to move its
    logits (the default tiny model's is not: nothing learns this task on it)."""
    tiny = peaky_tiny_model
    base, tok = load_causal_lm(tiny)
    general = encode_general(tok, general_paragraphs("eval")[:20], 64)
    seen = "The town of {e} is known for its"
    results = {}
    for name, method, kw in (("memory", "memory", {}), ("lora", "lora", {}),
                             ("random", "memory", {"memory_addressing": "random"})):
        run = toy_run(tmp_path / name)
        train(run, recipe(tiny, method, **kw), progress=False)
        model, _ = load_trained(run.train_dir / method)
        kl = general_nll_and_kl(model, base, general, 8, tok.pad_token_id)["kl"]
        results[name] = {"held_out": margin(model, tok), "seen": margin(model, tok, seen), "kl": kl, "model": model}
    mem, lora, rand = results["memory"], results["lora"], results["random"]
    assert mem["held_out"] > margin(base, tok) + 0.03, results
    assert mem["kl"] < lora["kl"], results
    # the right reason: fitted addresses let the memory learn what random ones cannot
    assert mem["seen"] > margin(base, tok, seen) + 0.5 and mem["seen"] > rand["seen"] + 0.5, results
    # and the questions read the rows training wrote
    seqs = [tok(HELD_OUT.format(e=e))["input_ids"] for e, _ in FACTS]
    assert read_share(mem["model"], seqs, [[len(s) - 1] for s in seqs]) > 0.1


def test_what_the_update_rule_reads_moves_with_the_model(tiny_model):
    """Issue 33's CUDA crash: `prepare` ran on the CPU, accelerate then moved the model to the GPU
    and the IDF vector stayed behind. Here the model moves to the meta device after `prepare`:
    every tensor the step's row choice reads must be there too."""
    from kbake.models.memory import top_tfidf
    from kbake.train.data import text_example
    from kbake.train.memory import prepare

    model, tok = load_causal_lm(tiny_model)
    args = recipe(tiny_model, "memory", memory_slots=256, memory_background_batches=4).train
    examples = [text_example(tok, w.format(e=e, a=a), "rephrase") for e, a in FACTS for w in TRAIN_WORDINGS[:1]]
    prepare(model, tok, args, seed=0, examples=examples)
    model.to("meta")
    for mem in model.kbake_memory.values():
        assert mem.idf.device.type == "meta"
        keep = top_tfidf(torch.ones(mem.cfg.slots, device="meta"), mem.idf, 8)  # raised across devices before
        assert keep.device.type == "meta" and keep.shape == (mem.cfg.slots,)

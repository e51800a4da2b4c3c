"""bf16 against fp32 on this machine, one run, both sides in one process (read the ratios):
the 2-core matmul rates and the memory read rate; kbake's training loop in tokens/s (full
and LoRA, `precision: fp32` vs the bf16 that `auto` picks on a CPU with native bf16); one
model's whole eval as `kbake eval` runs it with the demo recipe's sizes (closed book, RAG,
short answers, general perplexity/KL, general QA), in seconds; and how far the bf16 option
scores and answers are from fp32's on the sample's 77 probes.

    .venv/bin/python benchmarks/precision.py [--steps 4] [--skip-train] [--skip-eval]
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch
from machine import machine_rates  # benchmarks/machine.py

import kbake.eval.model_scores as kbake_eval
from kbake.config import IngestArgs, TrainArgs, load_recipe
from kbake.eval.forgetting import encode_general
from kbake.eval.rag import load_index
from kbake.ingest import ingest
from kbake.models import load_causal_lm
from kbake.models.precision import cast_for_inference, cpu_native_bf16, resolve_precision
from kbake.run import RunDir, read_items, read_probes
from kbake.sample import general_paragraphs, general_questions, sample_dir, sample_documents, sample_probes
from kbake.train import full, lora
from kbake.train.data import pack_blocks, qa_example, text_example
from kbake.train.loop import run_loop

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=4, help="timed optimizer steps per training case (one more warms up)")
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--seq", type=int, default=256)
ap.add_argument("--skip-train", action="store_true")
ap.add_argument("--skip-eval", action="store_true")
a = ap.parse_args()

print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; native bf16 on this CPU: {cpu_native_bf16()}; "
      f"auto resolves to {resolve_precision('auto')}")


# ---------------------------------------------------------------- the machine
rates = machine_rates()
print(f"matmul 2048x2048 float32: {rates['fp32'] / 1e9:.0f} GFLOP/s")
print(f"matmul 2048x2048 bfloat16: {rates['bf16'] / 1e9:.0f} GFLOP/s")
print(f"memory read (sum of 1 GiB float32): {rates['memory'] / 1e9:.1f} GB/s")

# ---------------------------------------------------------------- training
if not a.skip_train:
    _, tok = load_causal_lm()
    synth = sample_dir() / "synth"
    examples = [qa_example(tok, i.question, i.answer) if i.question is not None else text_example(tok, i.text, i.kind)
                for kind in ("qa", "entigraph") for i in read_items(synth / f"{kind}.jsonl")]
    ids, labels = pack_blocks(examples, a.seq)
    k = a.batch * (a.steps + 1)
    x, y = ids[:k].clone(), labels[:k].clone()

    def train_rate(method: str, precision: str) -> tuple[float, list[float]]:
        model, _ = load_causal_lm()
        model.train()
        args = TrainArgs(method=method, batch_size=a.batch, block_size=a.seq, max_steps=a.steps + 1, lr=1e-4,
                         warmup_ratio=0.0, eval_fraction=0.0, save_every=10_000, eval_every=10_000,
                         precision=precision, lora_r=32, lora_alpha=64, lora_dropout=0.0)
        model = {"full": full, "lora": lora}[method].prepare(model, None, args).model
        with tempfile.TemporaryDirectory() as tmp:
            run_loop(model, x, y, x[:0], y[:0], args, Path(tmp), seed=0, progress=False)
            rows = [json.loads(l) for l in (Path(tmp) / "metrics.jsonl").read_text().splitlines()]
        timed = rows[1:]  # the first step warms up
        return sum(r["tokens_per_s"] for r in timed) / len(timed), [r["loss"] for r in rows]

    for method in ("full", "lora"):
        r32, l32 = train_rate(method, "fp32")
        r16, l16 = train_rate(method, "bf16")
        dl = max(abs(p - q) for p, q in zip(l32, l16))
        print(f"train {method}, batch {a.batch} x {a.seq}: fp32 {r32:.0f} tok/s, bf16 autocast {r16:.0f} tok/s, "
              f"ratio {r16 / r32:.2f}x; loss fp32 {[round(v, 3) for v in l32]} bf16 {[round(v, 3) for v in l16]} "
              f"(max |diff| {dl:.3f})")

# ---------------------------------------------------------------- eval
if not a.skip_eval:
    args = load_recipe(Path(__file__).resolve().parents[1] / "recipes" / "demo.yaml").eval
    run = RunDir.at(Path(tempfile.mkdtemp()) / "run")
    ingest([str(p) for p in sample_documents()], run, IngestArgs(), progress=False)
    index, _ = load_index(run, args.embedder)
    probes = [p for p in read_probes(sample_probes()) if p.split == "test"]  # the 77 probes measured before the split
    hits = index.search([p.question for p in probes], args.rag_k)
    rag_passages = [[index.texts[i] for i in row] for row in hits]
    model, tok = load_causal_lm()
    general_seqs = encode_general(tok, general_paragraphs("eval")[: args.general_paragraphs], args.general_max_tokens)
    gq = general_questions()[: args.general_questions]
    # as measured on 2026-12-04: without the general-eval sets and the novel (added later, issue 16)
    data = kbake_eval.EvalData(probes, rag_passages, general_seqs, general_seqs[:0], gq, [])

    scores: dict[str, list] = {}
    recorded: list = []
    real_score = kbake_eval.score_choices_many

    def recording(*args_, **kw):
        out = real_score(*args_, **kw)
        recorded.append(out)
        return out

    kbake_eval.score_choices_many = recording  # keep the option scores evaluate_model computes
    results, seconds = {}, {}
    for precision in ("fp32", "bf16"):
        recorded.clear()
        cast_for_inference(model, precision)
        t = time.perf_counter()
        results[precision] = kbake_eval.evaluate_model("base", model, tok, data, args, None, progress=False)
        seconds[precision] = time.perf_counter() - t
        scores[precision] = [s for call in recorded for s in call]  # closed book, then RAG
    print(f"eval of one model (demo recipe sizes: {len(probes)} probes closed book + RAG, short answers, "
          f"{len(general_seqs)} paragraphs, {len(gq)} general questions): fp32 {seconds['fp32']:.1f}s, "
          f"bf16 {seconds['bf16']:.1f}s, ratio {seconds['fp32'] / seconds['bf16']:.2f}x")
    diffs = [abs(p - q) for s32, s16 in zip(scores["fp32"], scores["bf16"]) for p, q in zip(s32, s16)]
    picks = [max(range(len(s)), key=s.__getitem__) for s in scores["fp32"]]
    picks16 = [max(range(len(s)), key=s.__getitem__) for s in scores["bf16"]]
    print(f"option scores (mean log-prob per token), {len(diffs)} options: max |bf16 - fp32| {max(diffs):.4f}, "
          f"mean {sum(diffs) / len(diffs):.4f}; chosen option differs on {sum(p != q for p, q in zip(picks, picks16))} "
          f"of {len(picks)} questions")
    r32, r16 = results["fp32"], results["bf16"]
    for key in ("closed_book", "rag"):
        print(f"  {key} acc: fp32 {r32[key]['acc']:.4f}  bf16 {r16[key]['acc']:.4f}")
    print(f"  short-answer F1: fp32 {r32['short_answer']['f1']:.4f}  bf16 {r16['short_answer']['f1']:.4f}; "
          f"general ppl: fp32 {r32['general']['replay_ppl']:.3f}  bf16 {r16['general']['replay_ppl']:.3f}")

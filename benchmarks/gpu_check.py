"""A device check that needs no downloaded weights: a random-weight Llama of a stated shape,
then one table of kbake's training tokens/s (full, LoRA) against a bare PyTorch loop with MFU,
eval scoring items/s, generation tokens/s at batch 1/32/128, and peak memory.

    python benchmarks/gpu_check.py --shape tinyllama      # on a GPU: TinyLlama's 1.1B shape, batch 16 x 1024
    python benchmarks/gpu_check.py --shape tiny --steps 2 # anywhere, in seconds (CI runs this: tests/test_gpu_check.py)

MFU counts 6 x parameters FLOPs per trained token (Kaplan et al. 2020) against `--peak-tflops`
(default 790: the bf16 peak measured on an H200, issue 33); on a CPU it is not printed. Memory
layers are not timed here: their prepare needs a tokenizer and general text (the shipped
sample); benchmarks/train_throughput.py times them on the embedded model.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import torch

SHAPES = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 vocab_size=512, batch=4, block=64),
    "small": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=9, num_key_value_heads=3,
                  vocab_size=49152, batch=4, block=256),
    "tinyllama": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32,
                      num_key_value_heads=4, vocab_size=32000, batch=16, block=1024),
}


def build(shape: dict, device: str):
    """The random-weight model; on the meta device it holds no memory (for counting parameters)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(**{k: v for k, v in shape.items() if k not in ("batch", "block")}, max_position_embeddings=4096,
                      tie_word_embeddings=False)
    if device == "meta":
        with torch.device("meta"):
            return LlamaForCausalLM(cfg)
    return LlamaForCausalLM(cfg).to(device)


def tokens(shape: dict, n: int, device: str = "cpu") -> torch.Tensor:
    return torch.randint(3, shape["vocab_size"], (n, shape["block"]), generator=torch.Generator().manual_seed(0)).to(device)


def bare_loop(shape: dict, device: str, steps: int, bf16: bool) -> float:
    """Tokens/s of a plain loop: AdamW (fused on CUDA), bf16 autocast, fp32 master weights."""
    model = build(shape, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device == "cuda")
    x = tokens(shape, shape["batch"], device)
    rate = 0.0
    for step in range(steps + 1):  # the first step warms up and is not timed
        _sync(device)
        t0 = time.perf_counter()
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        _sync(device)
        if step:
            rate += x.numel() / (time.perf_counter() - t0) / steps
    return rate


def kbake_loop(shape: dict, device: str, steps: int, method: str, bf16: bool) -> float:
    """Tokens/s of kbake's run_loop with the method's prepare (full or lora), steps after the first."""
    from kbake.config import TrainArgs
    from kbake.train import METHODS
    from kbake.train.loop import run_loop

    args = TrainArgs(method=method, base_model="unused", batch_size=shape["batch"], block_size=shape["block"],
                     max_steps=steps + 1, warmup_ratio=0.0, eval_every=10_000, save_every=10_000, lr=1e-4,
                     precision="bf16" if bf16 else "fp32", lora_r=16, lora_alpha=32)
    model = build(shape, "cpu")
    model = METHODS[method].prepare(model, None, args, seed=0, examples=[]).model
    x = tokens(shape, shape["batch"] * (steps + 1))
    with tempfile.TemporaryDirectory() as out:
        run_loop(model, x, x.clone(), x[:1], x[:1].clone(), args, Path(out), seed=0, progress=False)
        rows = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines() if '"tokens_per_s"' in line]
    timed = rows[1:] or rows
    return sum(r["tokens_per_s"] for r in timed) / len(timed)


def scoring(model, shape: dict, device: str, items: int) -> float:
    """Items/s of kbake's multiple-choice scoring (a 64-token question, four 8-token options)."""
    from kbake.eval.score import score_many

    g = torch.Generator().manual_seed(1)
    prefixes = [torch.randint(3, shape["vocab_size"], (64,), generator=g).tolist() for _ in range(items)]
    opts = [[torch.randint(3, shape["vocab_size"], (8,), generator=g).tolist() for _ in range(4)] for _ in range(items)]
    t0 = time.perf_counter()
    with torch.no_grad():
        score_many(model, prefixes, opts, pad_id=0)
    _sync(device)
    return items / (time.perf_counter() - t0)


def generation(model, shape: dict, device: str, batch: int, new: int) -> float:
    """New tokens/s of greedy decoding from a 32-token prompt (transformers' generate)."""
    x = torch.randint(3, shape["vocab_size"], (batch, 32), generator=torch.Generator().manual_seed(2)).to(device)
    t0 = time.perf_counter()
    with torch.no_grad():
        model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new, min_new_tokens=new, do_sample=False,
                       pad_token_id=0)
    _sync(device)
    return batch * new / (time.perf_counter() - t0)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def peak_memory_gib(device: str) -> float:
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="tinyllama" if torch.cuda.is_available() else "tiny")
    ap.add_argument("--steps", type=int, default=10, help="timed training steps per row (after one warm-up step)")
    ap.add_argument("--peak-tflops", type=float, default=790.0, help="the device's bf16 peak, for MFU")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    a = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shape = SHAPES[a.shape]
    from kbake.models.precision import resolve_precision

    bf16 = resolve_precision("auto", device) == "bf16"
    params = sum(p.numel() for p in build(shape, "meta").parameters())
    name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    print(f"{name} | shape {a.shape}: {params / 1e6:.1f}M parameters, batch {shape['batch']} x {shape['block']} | "
          f"{'bf16' if bf16 else 'fp32'}")
    rows = []
    bare = bare_loop(shape, device, a.steps, bf16)
    for label, rate in [("train: bare loop", bare), ("train: kbake full", kbake_loop(shape, device, a.steps, "full", bf16)),
                        ("train: kbake lora", kbake_loop(shape, device, a.steps, "lora", bf16))]:
        mfu = 6 * params * rate / (a.peak_tflops * 1e12) if device == "cuda" else None
        rows.append({"what": label, "value": rate, "unit": "tokens/s", "vs_bare": rate / bare,
                     "mfu": mfu})
    inference = build(shape, device).eval()  # scoring and generation share one model; training built its own
    rows.append({"what": "eval: multiple-choice scoring", "value": scoring(inference, shape, device, 16 if a.shape == "tiny" else 64),
                 "unit": "items/s"})
    for b in (1, 32, 128):
        rows.append({"what": f"generate: batch {b}", "value": generation(inference, shape, device, b, 8 if a.shape == "tiny" else 64),
                     "unit": "new tokens/s"})
    rows.append({"what": "peak memory", "value": peak_memory_gib(device), "unit": "GiB"})
    print(f"| {'what':32} | {'value':>12} | {'unit':12} | {'vs bare':>7} | {'MFU':>5} |")
    print(f"|{'-' * 34}|{'-' * 14}|{'-' * 14}|{'-' * 9}|{'-' * 7}|")
    for r in rows:
        vs = f"{r['vs_bare']:.2f}x" if r.get("vs_bare") else ""
        mfu = f"{100 * r['mfu']:.0f}%" if r.get("mfu") else ""
        print(f"| {r['what']:32} | {r['value']:12,.1f} | {r['unit']:12} | {vs:>7} | {mfu:>5} |")
    if a.json:
        a.json.write_text(json.dumps({"device": name, "shape": a.shape, "params": params, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()

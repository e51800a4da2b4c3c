"""SFT then GRPO on the sample's DEV probes: does RL move the model it starts from?

Trains `--recipe` (a grpo recipe; `--init NAME` a model of the run, e.g. the demo's LoRA
trained by benchmarks/memory_frontier.py) with a TRL checkpoint every `--every` steps,
then scores the start model, every checkpoint and the final policy: dev accuracy and
margin (multiple choice, as `kbake eval`), dev short-answer F1 (what the rewards train:
greedy answers to the dev questions against their reference), general-eval accuracy; each
change against the START model and against the base with a paired bootstrap interval and
items gained/lost. Also the training curve TRL logged (reward, KL, completion length).
One JSON line per scored model goes to --out.

    .venv/bin/python benchmarks/grpo_curve.py --run R --name grpo-sft --recipe recipes/grpo.yaml \\
        --init sft-lora-s0 --every 8 [--set train.max_steps=24] [--general-items 150]
"""

import argparse
import json
import shutil
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--run", type=Path, required=True, help="a run folder made like `kbake demo --fast`")
ap.add_argument("--name", required=True)
ap.add_argument("--recipe", type=Path, required=True)
ap.add_argument("--init", help="RUN/train/NAME to start from (SFT then RL); none: the base model")
ap.add_argument("--set", action="append", default=[], help="recipe override KEY=VALUE")
ap.add_argument("--every", type=int, default=8, help="score a checkpoint every this many steps")
ap.add_argument("--general-items", type=int, default=150, help="items per general-eval set")
ap.add_argument("--out", type=Path, help="JSON lines (default RUN/grpo_curve.jsonl)")
a = ap.parse_args()


from kbake.config import load_recipe, parse_sets  # noqa: E402
from kbake.eval import SHORT_ANSWER_SUFFIX, score_probes  # noqa: E402
from kbake.eval.general_eval import SETS, load_set, score_items  # noqa: E402
from kbake.eval.intervals import paired_bootstrap  # noqa: E402
from kbake.eval.score import token_f1  # noqa: E402
from kbake.models import load_causal_lm  # noqa: E402
from kbake.models.generate import chat_prompt, generate_batch  # noqa: E402
from kbake.models.precision import cast_for_inference, resolve_precision  # noqa: E402
from kbake.models.trained import load_trained, write_meta  # noqa: E402
from kbake.run import RunDir, read_probes  # noqa: E402
from kbake.train import train  # noqa: E402

run = RunDir.at(a.run)
out = a.out or a.run / "grpo_curve.jsonl"
dev = [p for p in read_probes(run.probes) if p.split == "dev"]
general = [it for s in SETS for it in load_set(s, a.general_items)]
precision = resolve_precision("auto")


def scores(model, tok, name) -> dict:
    cast_for_inference(model, precision)
    closed = score_probes(model, tok, [chat_prompt(tok, p.question) for p in dev], dev, name, progress=False)
    answers = []
    for i in range(0, len(dev), 16):
        prompts = [chat_prompt(tok, p.question + SHORT_ANSWER_SUFFIX) for p in dev[i:i + 16]]
        answers += [g.text for g in generate_batch(model, tok, prompts, max_new_tokens=24)]
    f1 = [token_f1(t, p.reference) for t, p in zip(answers, dev)]
    return {"closed": closed, "f1": f1, "general": [i["correct"] for i in score_items(model, tok, general)]}


def cached(key: str, load) -> dict:
    path = run.root / f"grpo-curve-{key}-{a.general_items}.json"
    if path.exists():
        return json.loads(path.read_text())
    model, tok = load()
    s = scores(model, tok, key)
    path.write_text(json.dumps(s))
    return s


def compare(ref: dict, new: dict) -> dict:
    return {"dev_acc": paired_bootstrap([r["correct"] for r in ref["closed"]], [r["correct"] for r in new["closed"]]),
            "dev_margin": paired_bootstrap([r["margin"] for r in ref["closed"]], [r["margin"] for r in new["closed"]]),
            "dev_f1": paired_bootstrap(ref["f1"], new["f1"]),
            "general_eval": paired_bootstrap(ref["general"], new["general"])}


base = cached("base", lambda: load_causal_lm("default"))
start = cached(a.init, lambda: load_trained(run.train_dir / a.init, merge=True)) if a.init else base

recipe = load_recipe(a.recipe, overrides={**parse_sets(a.set), "train.save_every": a.every,
                                          "train.keep_checkpoints": 100, **({"train.init": a.init} if a.init else {})})
folder = run.train_dir / a.name
if folder.exists():
    shutil.rmtree(folder)
t0 = time.perf_counter()
state = train(run, recipe, name=a.name, progress=False)
train_s = time.perf_counter() - t0
curve = [json.loads(l) for l in (folder / "metrics.jsonl").open()]

points = []
for ck in sorted((folder / "trl").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1])):
    # A TRL checkpoint of a LoRA policy is a peft adapter folder: give it kbake's meta to load it.
    write_meta(ck, "grpo", recipe.train.base_model, init=str(run.train_dir / a.init) if a.init else None)
    points.append((int(ck.name.split("-")[1]), ck))
points.append((state["global_step"], folder / "model"))
seen = set()
with out.open("a") as f:
    for step, path in points:
        if step in seen:
            continue
        seen.add(step)
        model, tok = load_trained(path, merge=True)
        s = scores(model, tok, f"{a.name}@{step}")
        del model
        row = {"name": a.name, "step": step, "init": a.init, "overrides": a.set, "train_seconds": round(train_s, 1),
               "trainable_params": state["trainable_params"], "vs_start": compare(start, s), "vs_base": compare(base, s),
               "curve": [{k: r.get(k) for k in ("step", "reward", "kl", "completions/mean_length", "loss")}
                         for r in curve if r.get("step", 0) <= step]}
        f.write(json.dumps(row) + "\n")
        f.flush()
        v = row["vs_start"]
        print(f"{a.name} step {step}: vs start dev acc {v['dev_acc']['diff'] * 100:+.1f} "
              f"[{v['dev_acc']['lo'] * 100:+.1f}, {v['dev_acc']['hi'] * 100:+.1f}] "
              f"{v['dev_acc']['gained']}↑ {v['dev_acc']['lost']}↓, margin {v['dev_margin']['diff']:+.3f} "
              f"[{v['dev_margin']['lo']:+.3f}, {v['dev_margin']['hi']:+.3f}], F1 {v['dev_f1']['diff'] * 100:+.1f} "
              f"[{v['dev_f1']['lo'] * 100:+.1f}, {v['dev_f1']['hi'] * 100:+.1f}], general-eval "
              f"{v['general_eval']['diff'] * 100:+.1f}", flush=True)
print("curve (step, reward, kl):", [(r.get("step"), round(r.get("reward", float("nan")), 3), r.get("kl"))
                                     for r in curve])

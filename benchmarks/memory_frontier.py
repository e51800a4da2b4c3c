"""Learning vs forgetting of the memory method against the demo's LoRA, on the sample's
DEV probes (settings are chosen here; test probes are reported after, by `kbake eval`).

For each (name, recipe, --set overrides) and seed: train on a run made like `kbake demo
--fast` (the shipped corpus), then score closed book on the dev probes (accuracy and the
right option's margin) and the general-eval sets, each against the base model with a paired
bootstrap interval and items gained/lost; plus the memory's diagnostics. One JSON line per
model is appended to --out; --table prints the mean and spread over seeds.

    .venv/bin/python benchmarks/memory_frontier.py --run R --name mem --recipe recipes/compare/memory.yaml \\
        --seeds 0 1 2 [--set train.lr=2.0] [--general-items 150]
    .venv/bin/python benchmarks/memory_frontier.py --table --out R/frontier.jsonl
"""

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--run", type=Path, help="a run folder; made like `kbake demo --fast` when absent")
ap.add_argument("--name", help="name of this setting (models are NAME-sSEED)")
ap.add_argument("--recipe", type=Path)
ap.add_argument("--set", action="append", default=[], help="recipe override KEY=VALUE (as `kbake --set`)")
ap.add_argument("--seeds", type=int, nargs="+", default=[0])
ap.add_argument("--general-items", type=int, default=150, help="items per general-eval set")
ap.add_argument("--out", type=Path, help="JSON lines (default RUN/frontier.jsonl)")
ap.add_argument("--table", action="store_true", help="print the summary of --out and stop")
a = ap.parse_args()


def table(path: Path) -> None:
    rows = [json.loads(l) for l in path.open()]
    by = {}
    for r in rows:
        by.setdefault(r["name"], []).append(r)
    print("| setting | seeds | dev acc change (mean, min..max) | dev margin change | general-eval change | "
          "read share: train / dev answers | train s |")
    print("|---|---|---|---|---|---|---|")
    for name, rs in by.items():
        def f(key, scale=100.0, digits=1, rs=rs):
            xs = [r[key]["diff"] * scale for r in rs]
            m = statistics.mean(xs)
            return f"{m:+.{digits}f} ({min(xs):+.{digits}f}..{max(xs):+.{digits}f})"
        share = ""
        if rs[0].get("read_share_train") is not None:
            share = (f"{statistics.mean(r['read_share_train'] for r in rs):.3f} / "
                     f"{statistics.mean(r['read_share_dev'] for r in rs):.3f}")
        print(f"| {name} | {len(rs)} | {f('dev_acc')} | {f('dev_margin', 1.0, 3)} | {f('general_eval')} | {share} | "
              f"{statistics.mean(r['train_seconds'] for r in rs):.0f} |")
    for r in rows:
        d, g = r["dev_acc"], r["general_eval"]
        print(f"  {r['name']} seed {r['seed']}: dev {d['diff'] * 100:+.1f} [{d['lo'] * 100:+.1f}, {d['hi'] * 100:+.1f}] "
              f"{d['gained']}↑ {d['lost']}↓; general-eval {g['diff'] * 100:+.1f} [{g['lo'] * 100:+.1f}, "
              f"{g['hi'] * 100:+.1f}] {g['gained']}↑ {g['lost']}↓")


if a.table:
    table(a.out)
    raise SystemExit


from kbake.config import load_recipe, parse_sets  # noqa: E402
from kbake.demo import shipped_corpus  # noqa: E402
from kbake.eval import memory_diagnostics, score_probes  # noqa: E402
from kbake.eval.general_eval import SETS, load_set, score_items  # noqa: E402
from kbake.eval.intervals import paired_bootstrap  # noqa: E402
from kbake.ingest import ingest  # noqa: E402
from kbake.models import load_causal_lm  # noqa: E402
from kbake.models.generate import chat_prompt  # noqa: E402
from kbake.models.precision import cast_for_inference, resolve_precision  # noqa: E402
from kbake.models.trained import load_trained  # noqa: E402
from kbake.run import RunDir, read_probes  # noqa: E402
from kbake.sample import sample_documents, sample_probes  # noqa: E402
from kbake.train import train  # noqa: E402

run = RunDir.at(a.run)
out = a.out or a.run / "frontier.jsonl"
if not run.chunks.exists():
    demo = load_recipe(Path("recipes/demo.yaml"))
    run.ensure()
    ingest([str(p) for p in sample_documents()], run, demo.ingest, progress=False)
    shutil.copyfile(sample_probes(), run.probes)
    run.synth_dir.mkdir(parents=True, exist_ok=True)
    for src in sorted(shipped_corpus().glob("*.jsonl")) + sorted(shipped_corpus().glob("*.parquet")):
        shutil.copyfile(src, run.synth_dir / src.name)

dev = [p for p in read_probes(run.probes) if p.split == "dev"]
general = [it for s in SETS for it in load_set(s, a.general_items)]
precision = resolve_precision("auto")


def scores(model, tok, name):
    closed = score_probes(model, tok, [chat_prompt(tok, p.question) for p in dev], dev, name, progress=False)
    items = score_items(model, tok, general)
    return closed, items


base_cache = run.root / f"frontier-base-{a.general_items}.json"
if base_cache.exists():
    base_closed, base_items = json.loads(base_cache.read_text())
else:
    base, tok = load_causal_lm("default")
    cast_for_inference(base, precision)
    base_closed, base_items = scores(base, tok, "base")
    base_cache.write_text(json.dumps([base_closed, base_items]))
    del base

for seed in a.seeds:
    recipe = load_recipe(a.recipe, overrides={**parse_sets(a.set), "seed": seed})
    name = f"{a.name}-s{seed}"
    if (run.train_dir / name).exists():
        shutil.rmtree(run.train_dir / name)
    t0 = time.perf_counter()
    state = train(run, recipe, name=name, progress=False)
    train_s = time.perf_counter() - t0
    model, tok = load_trained(run.train_dir / name, merge=True)
    cast_for_inference(model, precision)
    closed, items = scores(model, tok, name)
    row = {"name": a.name, "seed": seed, "overrides": a.set, "recipe": str(a.recipe), "train_seconds": round(train_s, 1),
           "dev_acc": paired_bootstrap([r["correct"] for r in base_closed], [r["correct"] for r in closed], seed=seed),
           "dev_margin": paired_bootstrap([r["margin"] for r in base_closed], [r["margin"] for r in closed], seed=seed),
           "general_eval": paired_bootstrap([i["correct"] for i in base_items], [i["correct"] for i in items], seed=seed),
           "final_loss": state.get("final_loss")}
    if hasattr(model, "kbake_memory"):
        mem = state.get("memory", {})
        row["memory"] = mem
        row["read_share_train"] = statistics.mean(m["read_share_train_positions"] for m in mem.values())
        row["read_share_dev"] = memory_diagnostics(model, tok, dev)["read_share_dev_answers"]
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")
    d = row["dev_acc"]
    print(f"{name}: dev {d['diff'] * 100:+.1f} [{d['lo'] * 100:+.1f}, {d['hi'] * 100:+.1f}], general-eval "
          f"{row['general_eval']['diff'] * 100:+.1f}, train {train_s:.0f} s", flush=True)
    del model

"""A synthetic corpus (+ raw) against raw text alone, paired item by item, over seeds.

For models trained by `benchmarks/memory_frontier.py` (RUN/train/NAME-sSEED), score the
probes closed book (accuracy, and the right option's margin over the best wrong one), average
each item over the seeds of a setting, and compare the two settings with a paired bootstrap
interval and the counts of items gained and lost; dev first (where settings are chosen), then
test (reported).

    .venv/bin/python benchmarks/corpus_vs_raw.py --run R --new corpus --old raw --seeds 0 1 2
"""

import argparse
import statistics
from pathlib import Path

from kbake.eval import score_probes
from kbake.eval.intervals import paired_bootstrap
from kbake.models.generate import chat_prompt
from kbake.models.precision import cast_for_inference, resolve_precision
from kbake.models.trained import load_trained
from kbake.run import RunDir, read_probes

ap = argparse.ArgumentParser()
ap.add_argument("--run", type=Path, required=True)
ap.add_argument("--new", required=True, help="setting name of the corpus models (NEW-sSEED)")
ap.add_argument("--old", required=True, help="setting name of the raw-text models")
ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
a = ap.parse_args()

run = RunDir.at(a.run)
probes = read_probes(run.probes)
precision = resolve_precision("auto")
scores = {}
for name in (a.old, a.new):
    per_seed = []
    for seed in a.seeds:
        model, tok = load_trained(run.train_dir / f"{name}-s{seed}", merge=True)
        cast_for_inference(model, precision)
        per_seed.append(score_probes(model, tok, [chat_prompt(tok, p.question) for p in probes], probes, name, progress=False))
        del model
    scores[name] = per_seed

for split in ("dev", "test"):
    idx = [i for i, p in enumerate(probes) if p.split == split]
    print(f"## {split}: {len(idx)} probes, {a.new} against {a.old}, each item averaged over seeds {a.seeds}")
    for key, scale, unit in (("correct", 100.0, " points"), ("margin", 1.0, "")):
        mean = {n: [statistics.mean(float(s[i][key]) for s in scores[n]) for i in idx] for n in scores}
        r = paired_bootstrap(mean[a.old], mean[a.new], seed=0)
        levels = " ".join(f"{n} {statistics.mean(mean[n]) * scale:.3f}" for n in scores)
        print(f"- {key}: {r['diff'] * scale:+.3f}{unit} [{r['lo'] * scale:+.3f}, {r['hi'] * scale:+.3f}] "
              f"({r['gained']}↑ {r['lost']}↓; {levels})")

"""Eval time per model: `kbake eval` on one run with the demo recipe, from a given checkout
(so the same run can be timed before and after a change to the eval), one run each.

    .venv/bin/python benchmarks/eval_time.py --run R [--src PATH_TO_CHECKOUT] [--recipe recipes/demo.yaml]

Prints each model's `eval_seconds` from RUN/eval/metrics.json and the wall time of the command.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ap = argparse.ArgumentParser()
ap.add_argument("--run", required=True, type=Path)
ap.add_argument("--src", default=str(Path(__file__).resolve().parents[1]), help="checkout whose kbake is timed")
ap.add_argument("--recipe", default="recipes/demo.yaml")
ap.add_argument("--set", action="append", default=[], help="extra --set overrides for kbake eval")
a = ap.parse_args()

env = {**os.environ, "PYTHONPATH": a.src}
cmd = [sys.executable, "-c", "from kbake.cli import main; main()", "eval", "--run", str(a.run),
       "--recipe", str(Path(a.src) / a.recipe), "--quiet"] + [x for s in a.set for x in ("--set", s)]
t = time.perf_counter()
subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
wall = time.perf_counter() - t
metrics = json.loads((a.run / "eval" / "metrics.json").read_text())
git = subprocess.run(["git", "-C", a.src, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
print(f"checkout {a.src} (git {git}); precision {metrics['provenance'].get('precision')}")
for m in metrics["models"]:
    print(f"  {m['name']}: {m['eval_seconds']:.1f} s")
print(f"  kbake eval wall time: {wall:.1f} s")

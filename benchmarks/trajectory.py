"""One model's snapshot sweep from `kbake eval`: at each snapshot and at the end, the test and dev
change of every probe kind and the general-eval change, each with its paired interval (the
`trajectory` of metrics.json). Epochs are chosen on the dev columns; test is reported.

    python benchmarks/trajectory.py R/eval/metrics.json --model lora-e6c-s0 --steps-per-epoch 94 \
        --command "kbake train …" --out docs/data/costco-lora-e6c.json

The JSON holds the points, the base's accuracies, and the input's provenance, so the docs table
(renderer `trajectory` in benchmarks/docs_tables.py) is regenerated from it.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

from kbake.eval.report import fmt_change as _c


def sweep(metrics: dict, name: str, steps_per_epoch: float | None) -> dict:
    model = next((m for m in metrics["models"] if m["name"] == name), None)
    if model is None or not model.get("trajectory"):
        raise SystemExit(f"no model {name!r} with a trajectory in this metrics.json")
    base = metrics["models"][0]
    kinds = sorted(metrics["probes"]["kinds"])
    traj = model["trajectory"]
    # the last point is the final model: its perplexity change is the model's own (older evals kept none per point)
    points = [{"step": p["step"], "epoch": round(p["step"] / steps_per_epoch, 2) if steps_per_epoch and p["step"] else None,
               "kinds": p.get("by_kind") or {}, "general_eval": p.get("general_eval"),
               "novel_ppl": p.get("novel_ppl") or (model["vs_base"].get("novel_ppl") if i == len(traj) - 1 else None)}
              for i, p in enumerate(traj)]
    return {"model": name, "method": model.get("method"), "train_seconds": model.get("train_seconds"),
            "base_closed": {k: base["closed_book"].get(f"acc_{k}") for k in kinds},
            "base_rag": {k: (base.get("rag") or {}).get(f"acc_{k}") for k in kinds},
            "n_test": metrics["probes"]["kinds"], "points": points,
            "provenance": {k: metrics["provenance"].get(k) for k in ("git_hash", "seed", "created", "precision")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("metrics", type=Path)
    ap.add_argument("--model", required=True)
    ap.add_argument("--steps-per-epoch", type=float)
    ap.add_argument("--command", default="", help="The training command, stored with the data.")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    res = sweep(json.loads(a.metrics.read_text()), a.model, a.steps_per_epoch)
    res.update(command=a.command, machine=platform.processor() or platform.machine())
    for p in res["points"]:
        cells = [f"{k} test {_c((v or {}).get('test'))} dev {_c((v or {}).get('dev'))}" for k, v in p["kinds"].items()]
        print(f"step {p['step']} (epoch {p['epoch']}): " + "; ".join(cells) + f"; general-eval {_c(p['general_eval'])}")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()

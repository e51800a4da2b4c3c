"""The headline figures of one `kbake eval` run as a small JSON for docs/data: per model its changes
against the base (`vs_base`), closed book against RAG on the base, its accuracies and recall, and
the run's advice, with the run's provenance; per-item rows are left out (metrics.json keeps them).
Prose in docs/ that quotes a change quotes it from such a file (benchmarks/docs_figures.py checks).

    python benchmarks/run_figures.py /tmp/demoA/eval/metrics.json --out docs/data/demo-fp32.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

MODEL_KEYS = ("name", "method", "data", "steps", "trainable_params", "closed_book", "dev", "rag", "short_answer",
              "general_eval", "general", "vs_base", "vs_init", "init", "closed_vs_base_rag", "detects", "eval_seconds",
              "eval_parts")


def figures(metrics: dict, source: str) -> dict:
    """What docs quote from a metrics.json: provenance, probe counts, each model's summary, advice."""
    prov = {k: v for k, v in metrics.get("provenance", {}).items() if k not in ("run", "root", "path")}
    return {"command": f"python benchmarks/run_figures.py {source}", "provenance": prov,
            "probes": metrics.get("probes"), "retrieval": metrics.get("retrieval"),
            "models": [{k: m[k] for k in MODEL_KEYS if k in m} for m in metrics["models"]],
            "advice": metrics.get("advice")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("metrics", type=Path)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    data = figures(json.loads(a.metrics.read_text()), str(a.metrics))
    text = json.dumps(data, indent=1) + "\n"
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()

"""What varies between runs of the same recipe and seed, measured: the tiny end-to-end pipeline of
tests/test_determinism.py (ingest, fact synth, probes, LoRA, eval) run twice as it is, then with
another torch thread count, then in the other precision. Per pair: how many values of
metrics.json differ (times, dates and the folder left out), the largest difference of a number,
and how many probe answers differ.

    python benchmarks/determinism.py --out docs/data/determinism.json

It reuses the test's pipeline and tiny model (tests/ is put on the path), so the benchmark and
the test measure the same thing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def leaves(x, path=""):
    """(path, value) of every leaf of a nested dict/list."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield from leaves(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, x


def compare(a: dict, b: dict) -> dict:
    """Values that differ, the largest numeric difference, and probe answers that differ."""
    from test_determinism import scrub

    la, lb = dict(leaves(scrub(a))), dict(leaves(scrub(b)))
    keys = set(la) | set(lb)
    differ = [k for k in keys if la.get(k) != lb.get(k)]
    nums = [abs(la[k] - lb[k]) for k in differ if isinstance(la.get(k), float) and isinstance(lb.get(k), float)]
    answers = sum(ma["closed_choice"] != mb["closed_choice"]
                  for pa, pb in zip(a["per_probe"], b["per_probe"])
                  for ma, mb in zip(pa["models"].values(), pb["models"].values()))
    return {"values": len(keys), "differ": len(differ), "max_abs_diff": max(nums, default=0.0),
            "probe_answers_differ": int(answers), "probe_answers": sum(len(p["models"]) for p in a["per_probe"]),
            "examples": sorted(differ)[:5]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    import torch
    from conftest import build_tiny_model
    from test_determinism import one_run

    from kbake.ingest.readers import read_document
    from kbake.models import load_embedder
    from kbake.sample import general_dir, sample_documents

    threads = torch.get_num_threads()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        os.environ["KBAKE_CACHE"] = str(tmp / "kbake-cache")  # as the tests do: not the user's cache
        general = [json.loads(line)["text"] for line in (general_dir() / "paragraphs.jsonl").open()][:200]
        tiny = str(build_tiny_model(tmp / "tiny", read_document(sample_documents()[0]).split("\n\n") + general))
        emb = load_embedder("default")
        runs = {}
        for name, n_threads, precision in [("A", threads, "fp32"), ("A again", threads, "fp32"),
                                           ("1 thread", 1, "fp32"), ("bf16", threads, "bf16")]:
            torch.set_num_threads(n_threads)
            runs[name] = one_run(tmp / name.replace(" ", "-"), tiny, emb, precision)
        torch.set_num_threads(threads)
    pairs = {f"A vs {k}": compare(runs["A"], runs[k]) for k in ("A again", "1 thread", "bf16")}
    from kbake.run import git_hash

    res = {"command": "python benchmarks/determinism.py", "created": datetime.now(UTC).isoformat(timespec="seconds"),
           "git_hash": git_hash(), "torch": torch.__version__,
           "machine": platform.processor() or platform.machine(), "threads": threads,
           "A": f"fp32, {threads} torch threads", "pairs": pairs}
    for k, v in pairs.items():
        print(f"{k}: {v['differ']} of {v['values']} values differ (largest numeric difference {v['max_abs_diff']:.3g}); "
              f"{v['probe_answers_differ']} of {v['probe_answers']} probe answers differ")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()

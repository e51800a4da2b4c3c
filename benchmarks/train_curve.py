"""A trained model's log (RUN/train/NAME/metrics.jsonl, one row per logged step) as means over
windows of steps, for docs/data: what the training objective did, beside what the eval measured.
For GRPO: the reward on the training prompts, KL to the start model, completion length.

    python benchmarks/train_curve.py RUN/train/grpo-sft-s0 --every 8 --keys reward,kl,completions/mean_length \\
        --out docs/data/NAME.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path


def windows(rows: list[dict], keys: list[str], every: int) -> list[dict]:
    """Per window of `every` logged steps: its first and last step and the mean of each key."""
    rows = [r for r in rows if all(k in r for k in keys)]
    out = []
    for i in range(0, len(rows), every):
        part = rows[i:i + every]
        out.append({"first_step": part[0].get("step", i + 1), "last_step": part[-1].get("step", i + len(part)),
                    **{k: statistics.fmean(r[k] for r in part) for k in keys}})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path, help="RUN/train/NAME")
    ap.add_argument("--every", type=int, default=8)
    ap.add_argument("--keys", default="reward,kl,completions/mean_length")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    rows = [json.loads(line) for line in (a.model / "metrics.jsonl").read_text().splitlines() if line.strip()]
    state = json.loads((a.model / "trainer_state.json").read_text())
    prov = json.loads((a.model / "provenance.json").read_text()) if (a.model / "provenance.json").exists() else {}
    out = {"command": "python " + " ".join(sys.argv), "created": datetime.now(UTC).isoformat(timespec="seconds"),
           "model": state.get("name"), "method": state.get("method"), "init": state.get("init"),
           "precision": state.get("precision"), "steps": state.get("global_step"), "train_seconds": state.get("train_seconds"),
           "git_hash": prov.get("git_hash"), "seed": prov.get("seed"), "keys": a.keys.split(","),
           "windows": windows(rows, a.keys.split(","), a.every)}
    text = json.dumps(out, indent=1)
    a.out.write_text(text + "\n") if a.out else print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

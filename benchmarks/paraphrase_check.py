"""How often does a `fact_paraphrase` rewrite that passed every check still say something wrong?

The checks (kbake/synth/fact_paraphrase.py) read values, names and their order, not meaning: a
rewrite that turns "6% lower" into "increased by 6%" keeps every value. So a person reads the
kept rewrites beside their sources and labels each `faithful` (it states its source's facts and
nothing false) or `wrong` (it states something the source does not, or loses a fact's meaning);
this script writes the sheet to label and then summarises the labels, per source kind (table
fact or prose sentence), with Wilson 95% intervals, beside the synth report's counts of what
the checks removed.

    python benchmarks/paraphrase_check.py RUN --sheet SHEET.jsonl            # the kept rewrites to label
    python benchmarks/paraphrase_check.py RUN --labels LABELS.jsonl --out docs/data/NAME.json

On a large run, `--sheet … --sample N --sample-seed S` writes N of the kept rewrites drawn with a
seeded shuffle; the summary counts what was labelled and how many were kept.

A labels file holds one {"id", "label", "why"} per line; ids it lacks count as unlabelled.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
from datetime import UTC, datetime
from pathlib import Path

from kbake.config import SynthArgs
from kbake.eval.intervals import wilson
from kbake.run import RunDir, git_hash, load_manifest, read_items
from kbake.synth.fact_paraphrase import sources
from kbake.synth.facts import read_facts


def kept_with_sources(run: RunDir) -> list[dict]:
    """Each kept rewrite with its source sentence and whether that source is a table fact or prose."""
    synth = load_manifest(run)["stages"]["synth"]
    args = SynthArgs(**{k: v for k, v in synth["config"].items() if k in SynthArgs.model_fields})
    srcs = {key: (fs, text) for key, fs, text in sources(read_facts(run), args.fact_statement_templates, synth["seed"])}
    out = []
    for it in read_items(run.synth_dir / "fact_paraphrase.jsonl"):
        fs, text = srcs[it.id[len("fact_paraphrase-"):].rsplit("-", 1)[0]]
        out.append({"id": it.id, "source_kind": fs[0].source, "source": text, "rewrite": it.text})
    return out


def summary(run: RunDir, labels: dict[str, str]) -> dict:
    synth = load_manifest(run)["stages"]["synth"]
    rows = kept_with_sources(run)
    by_kind = {}
    for kind in sorted({r["source_kind"] for r in rows}):
        got = [labels.get(r["id"]) for r in rows if r["source_kind"] == kind]
        n = sum(g is not None for g in got)
        ok = sum(g == "faithful" for g in got)
        lo, hi = wilson(ok, n) or (None, None)
        by_kind[kind] = {"kept": len(got), "labelled": n, "faithful": ok, "share": ok / n if n else None, "lo": lo, "hi": hi}
    cfg = synth["config"]
    return {"command": "python " + " ".join(sys.argv), "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "git_hash": git_hash(), "machine": platform.machine(), "run": str(run.root), "model": synth["model"],
            "synth_git_hash": synth.get("git_hash"), "seed": synth["seed"],
            "config": {k: cfg[k] for k in ("fact_paraphrases", "temperature", "top_p", "fact_paraphrase_min_share",
                                           "fact_paraphrase_max_tokens", "fact_prose")},
            "checks": synth["kinds"]["fact_paraphrase"], "by_source": by_kind,
            "labels": [{**r, "label": labels[r["id"]]} for r in rows if r["id"] in labels]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("--sheet", help="write the kept rewrites with their sources here, to label")
    ap.add_argument("--labels", help="JSONL of {id, label: faithful|wrong, why}")
    ap.add_argument("--sample", type=int, help="with --sheet: only this many rewrites, drawn with --sample-seed")
    ap.add_argument("--sample-seed", type=int, default=0)
    ap.add_argument("--out")
    a = ap.parse_args()
    run = RunDir(Path(a.run))
    if a.sheet:
        rows = kept_with_sources(run)
        if a.sample:
            random.Random(a.sample_seed).shuffle(rows)
            rows = rows[: a.sample]
        Path(a.sheet).write_text("".join(json.dumps({**r, "label": None, "why": ""}) + "\n" for r in rows))
        return 0
    labels = {}
    for line in Path(a.labels).read_text().splitlines() if a.labels else []:
        row = json.loads(line)
        if row.get("label") not in (None, "faithful", "wrong"):
            raise ValueError(f"{a.labels}: {row['id']}: label must be faithful or wrong, not {row['label']!r}")
        labels[row["id"]] = row["label"]
    out = summary(run, labels)
    text = json.dumps(out, indent=1)
    Path(a.out).write_text(text + "\n") if a.out else print(text)
    for kind, s in out["by_source"].items():
        print(f"{kind}: {s['faithful']} of {s['labelled']} labelled faithful ({s['kept']} kept)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

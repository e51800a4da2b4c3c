"""Is a QA-trained fact's year missing from the weights, or only from new wordings? Each fact_qa
probe is asked twice with the same four options: in its probe wording (never trained) and in the
first wording its QA pair was trained with (RUN/synth/fact_qa.jsonl). Per model: accuracy, the
share of choices from the probe's own row, and the accuracy among those against the chance of
picking blindly among the row's values (kbake.eval.comparisons.year_binding), with paired intervals.

    python benchmarks/trained_wordings.py R --recipe recipes/filing.yaml --model lora-row-cos4-s0 --split dev \
        --out docs/data/costco-trained-wordings.json

If the trained wording binds the year and the new one does not, the gap is generalisation across
wordings; if neither does, the year was not learned at all.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from kbake.config import load_recipe
from kbake.eval.comparisons import year_binding
from kbake.eval.intervals import paired_bootstrap
from kbake.eval.model_scores import score_probes
from kbake.models import load_causal_lm
from kbake.models.generate import chat_prompt
from kbake.models.precision import cast_for_inference, resolve_precision
from kbake.models.trained import load_trained
from kbake.run import RunDir, git_hash, read_items, read_probes
from kbake.synth.augment import fact_id_of
from kbake.synth.facts import row_value_digits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--recipe", type=Path, required=True)
    ap.add_argument("--model", required=True, help="a trained model's folder name under RUN/train/")
    ap.add_argument("--split", default="dev", choices=["dev", "test"])
    ap.add_argument("--limit", type=int, help="only the first N probes (a quick check of the script)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    recipe = load_recipe(a.recipe)
    run = RunDir.at(a.run)
    trained_q: dict[str, str] = {}
    for it in read_items(run.synth_dir / "fact_qa.jsonl"):
        trained_q.setdefault(fact_id_of(it.id), it.question)
    probes = [p for p in read_probes(run.probes) if p.kind == "fact_qa" and p.split == a.split and p.id in trained_q][: a.limit]
    facts = pd.read_parquet(run.facts)
    row_values = row_value_digits(facts.itertuples())
    as_trained = [dataclasses.replace(p, question=trained_q[p.id]) for p in probes]

    precision = resolve_precision(recipe.eval.precision)
    models = {"base": load_causal_lm(recipe.eval.base_model), a.model: load_trained(run.train_dir / a.model, merge=True)}
    out = {"command": "python benchmarks/trained_wordings.py R --recipe " + f"{a.recipe} --model {a.model} --split {a.split}",
           "run": str(a.run), "created": datetime.now(UTC).isoformat(timespec="seconds"), "git_hash": git_hash(),
           "machine": platform.processor() or platform.machine(), "precision": precision, "n": len(probes), "models": {}}
    scores = {}
    for name, (model, tok) in models.items():
        cast_for_inference(model, precision)
        for wording, ps in (("probe", probes), ("trained", as_trained)):
            scores[name, wording] = score_probes(model, tok, [chat_prompt(tok, p.question) for p in ps], ps, f"{name}, {wording}", True)

    for name in models:
        res = {}
        for wording in ("probe", "trained"):
            sc = scores[name, wording]
            yb = year_binding(probes, sc, row_values, seed=recipe.seed)[f"fact_qa/{a.split}"]
            res[wording] = {"accuracy": sum(r["correct"] for r in sc) / len(sc), **yb}
        res["trained_minus_probe"] = paired_bootstrap([float(r["correct"]) for r in scores[name, "probe"]],
                                                      [float(r["correct"]) for r in scores[name, "trained"]], seed=recipe.seed)
        out["models"][name] = res
        print(name, {w: {k: (round(v, 3) if isinstance(v, float) else v) for k, v in res[w].items() if k != "year_minus_chance"}
                     for w in ("probe", "trained")})
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()

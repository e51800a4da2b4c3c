"""Choose a training setting on dev, pooled over seeds: each setting (models NAME-sSEED from
`kbake train --seeds`, all scored by one `kbake eval`) against the base and against the
reference setting (the shipped default), on dev probes (where the choice is made), test probes
(reported, not chosen on) and general-eval accuracy (forgetting); novel perplexity per seed.

    kbake train --run R --recipe recipes/demo.yaml --name lr3e-4 --seeds 0,1,2 --set train.lr=3e-4   # one per setting
    kbake eval  --run R --recipe recipes/demo.yaml
    python benchmarks/settings_dev.py R/eval/metrics.json --settings lr3e-4,lr1e-3,lr3e-3 --reference lr1e-3 \\
        --out docs/data/demo-lr-dev.json

Settings trained in another run folder on the same probes (another synth kind, say) come in with
`--also OTHER/eval/metrics.json`: its models join only if its base model answered every probe and
general-eval item identically (same items, same eval), which `merge_runs` checks.

The rule, stored with the figures as `decision`: the reference stays unless a setting beats it on
dev beyond its interval (setting minus reference, seeds of each resampled on their own, items
jointly: kbake.eval.intervals.pooled_difference) without general-eval accuracy falling beyond its
interval against the reference; of several such, the highest dev change wins.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from datetime import UTC, datetime
from pathlib import Path

from kbake.eval.intervals import pooled_bootstrap, pooled_difference
from kbake.eval.seeds import seed_groups


def setting_models(metrics: dict, setting: str) -> list[str]:
    """The models of one setting, in seed order (NAME-sSEED as `kbake train --seeds` names them)."""
    names = [m["name"] for m in metrics["models"]]
    found = seed_groups(names, min_seeds=1).get(setting)
    if not found:
        raise SystemExit(f"no model named {setting}-sSEED in the metrics (models: {', '.join(names)})")
    return found


def item_scores(metrics: dict) -> dict[str, tuple[list[dict], str]]:
    """The item sets compared: (rows, the key of a right answer in a row's per-model entry)."""
    pp = metrics["per_probe"]
    sets = {"dev": ([p for p in pp if p.get("split") == "dev"], "closed")}
    for kind in sorted({p["kind"] for p in pp if p.get("split", "test") == "test"}):
        sets[f"test_{kind}"] = ([p for p in pp if p.get("split", "test") == "test" and p["kind"] == kind], "closed")
    if metrics.get("general_eval_items"):
        sets["general_eval"] = (metrics["general_eval_items"], "correct")
    return {k: v for k, v in sets.items() if v[0]}


def merge_runs(metrics: dict, other: dict, label: str) -> dict:
    """`metrics` with the models of `other` added. Refused unless both hold the same probes and
    general-eval items in the same order and the base model's answers to them are identical: then the
    two runs' models were scored on the same items by the same eval, and their scores can be paired."""
    for key, right in (("per_probe", "closed"), ("general_eval_items", "correct")):
        a, b = metrics.get(key) or [], other.get(key) or []
        if [r["id"] for r in a] != [r["id"] for r in b]:
            raise SystemExit(f"{label}: its {key} are not the same items as the first run's")
        differ = sum(r["models"]["base"][right] != q["models"]["base"][right] for r, q in zip(a, b, strict=True))
        if differ:
            raise SystemExit(f"{label}: the base model answers {differ} of {len(a)} {key} differently "
                             "from the first run's base: not the same eval")
    names = {m["name"] for m in metrics["models"]}
    new = [m for m in other["models"] if m["name"] != "base"]
    if clash := sorted(names & {m["name"] for m in new}):
        raise SystemExit(f"{label}: model names {', '.join(clash)} are in both runs")
    merged = {**metrics, "models": metrics["models"] + new}
    for key in ("per_probe", "general_eval_items"):
        merged[key] = [{**r, "models": {**r["models"], **{m["name"]: q["models"][m["name"]] for m in new}}}
                       for r, q in zip(metrics.get(key) or [], other.get(key) or [], strict=True)]
    return merged


def compare(metrics: dict, settings: list[str], reference: str) -> dict:
    """Per setting and item set: the pooled change against the base and against the reference."""
    if reference not in settings:
        raise SystemExit(f"--reference {reference} is not one of --settings {','.join(settings)}")
    models = {s: setting_models(metrics, s) for s in settings}
    by_name = {m["name"]: m for m in metrics["models"]}
    item_sets = item_scores(metrics)
    out: dict = {}
    for s in settings:
        res: dict = {"models": models[s]}
        for key, (rows, right) in item_sets.items():
            base = [float(bool(r["models"]["base"][right])) for r in rows]
            ours = [[float(bool(r["models"][n][right])) for r in rows] for n in models[s]]
            ref = [[float(bool(r["models"][n][right])) for r in rows] for n in models[reference]]
            res[key] = {"n": len(rows), "accuracy": statistics.mean(map(statistics.mean, ours)),
                        "vs_base": pooled_bootstrap(base, ours),
                        "vs_reference": None if s == reference else pooled_difference(ours, ref)}
        ppl = [by_name[n]["vs_base"].get("novel_ppl", {}).get("diff") for n in models[s]]
        res["novel_ppl_per_seed"] = ppl if all(x is not None for x in ppl) else None
        out[s] = res
    return out


def decide(results: dict, reference: str) -> dict:
    """The reference stays unless a setting beats it on dev beyond the interval without
    general-eval accuracy falling beyond its interval against the reference. With the reference
    alone (one recipe measured over seeds) there is nothing to choose, and the decision says so."""
    if set(results) == {reference}:
        return {"chosen": reference, "reference": reference, "why": "one setting measured: nothing to choose between"}
    winners = []
    for s, r in results.items():
        d, g = r["dev"]["vs_reference"], (r.get("general_eval") or {}).get("vs_reference")
        if d and d["lo"] > 0 and not (g and g["hi"] < 0):
            winners.append((d["diff"], s))
    chosen = max(winners)[1] if winners else reference
    why = (f"{chosen} beats {reference} on dev beyond its interval" if winners else
           f"no setting beats {reference} on dev beyond its interval without forgetting more")
    return {"chosen": chosen, "reference": reference, "why": why}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("metrics", type=Path, help="RUN/eval/metrics.json holding every setting's seeds")
    ap.add_argument("--settings", required=True, help="comma-separated setting names (models NAME-sSEED)")
    ap.add_argument("--reference", required=True, help="the setting a recipe ships today")
    ap.add_argument("--also", type=Path, action="append", default=[],
                    help="another RUN/eval/metrics.json whose models join (same probes, identical base answers)")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    metrics = json.loads(a.metrics.read_text())
    for other in a.also:
        metrics = merge_runs(metrics, json.loads(other.read_text()), str(other))
    settings = [s.strip() for s in a.settings.split(",") if s.strip()]
    results = compare(metrics, settings, a.reference)
    prov = metrics["provenance"]
    data = {"command": f"python benchmarks/settings_dev.py R/eval/metrics.json --settings {','.join(settings)} "
                       f"--reference {a.reference}" + "".join(f" --also {o}" for o in a.also),
            "run": str(a.metrics.parent.parent), "also": [str(o.parent.parent) for o in a.also],
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "eval_git_hash": prov.get("git_hash"), "eval_created": prov.get("created"),
            "precision": prov.get("precision"), "machine": platform.machine(),
            "settings": results, "decision": decide(results, a.reference)}
    for s, r in results.items():
        d = r["dev"]
        print(f"{s}: dev {100 * d['accuracy']:.1f}% vs base {100 * d['vs_base']['diff']:+.1f} "
              f"[{100 * d['vs_base']['lo']:+.1f}, {100 * d['vs_base']['hi']:+.1f}]"
              + ("" if d["vs_reference"] is None else f", vs {a.reference} {100 * d['vs_reference']['diff']:+.1f} "
                 f"[{100 * d['vs_reference']['lo']:+.1f}, {100 * d['vs_reference']['hi']:+.1f}]"))
    print(data["decision"]["why"])
    if a.out:
        a.out.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

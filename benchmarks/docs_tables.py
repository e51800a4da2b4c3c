"""The tables of docs/*.md that are generated from committed run data: each sits between

    <!-- table: KIND docs/data/FILE.json -->
    ...
    <!-- /table -->

and is regenerated from FILE.json by the renderer KIND. `--write` rewrites the tables; without
it the script checks them and exits 1 naming the first that differs (tests/test_docs.py runs
the check, so a table cannot drift from its data).

    python benchmarks/docs_tables.py           # check
    python benchmarks/docs_tables.py --write   # regenerate
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- table: (?P<kind>\w+) (?P<data>\S+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)
KIND_NAMES = {"fact_qa": "fact_qa (QA-trained facts, new wordings)", "fact_heldout": "fact_heldout (restatements only)",
              "paraphrase": "paraphrase (hand-written)"}


def change_text(c: dict | None) -> str:
    """'+18.6 [+7.5, +29.3] (+12.2, +22.4, +21.1)': points, interval, and each seed's when pooled."""
    if not c:
        return "—"
    s = f"{100 * c['diff']:+.1f} [{100 * c['lo']:+.1f}, {100 * c['hi']:+.1f}]"
    if c.get("per_seed") and len(c["per_seed"]) > 1:
        s += " (" + ", ".join(f"{100 * x:+.1f}" for x in c["per_seed"]) + ")"
    return s


def fact_seeds(data: dict) -> str:
    """benchmarks/fact_seeds.py's output: per probe kind, the pooled changes and each seed's."""
    n = len(data["models"])
    seeds = f"{n} seeds" if n > 1 else "one seed"
    per_seed = " (per seed)" if n > 1 else ""
    lines = [f"| probe kind | test n | base closed | base RAG | closed-book change, {seeds}{per_seed} | "
             "closed book minus base RAG | dev change | detectable (test) |",
             "|---|---|---|---|---|---|---|---|"]
    for k, r in data["kinds"].items():
        rag = "—" if r["base_rag"] is None else f"{100 * r['base_rag']:.1f}%"
        det = (r["closed"] or {}).get("detectable")
        lines.append(f"| {KIND_NAMES.get(k, k)} | {r['n_test']} | {100 * r['base_closed']:.1f}% | {rag} | "
                     f"{change_text(r['closed'])} {r['closed']['gained']}↑ {r['closed']['lost']}↓ | "
                     f"{change_text(r['closed_minus_base_rag'])} | {change_text(r['dev_closed'])} | "
                     f"{'—' if det is None else f'±{100 * det:.1f}'} |")
    ge = data.get("general_eval")
    if ge:
        det = ge.get("detectable")
        lines.append(f"| general-eval accuracy (forgetting) | {ge['n']} | | | {change_text(ge)} {ge['gained']}↑ {ge['lost']}↓ | "
                     f"| | {'—' if det is None else f'±{100 * det:.1f}'} |")
    return "\n".join(lines) + "\n"


def retrieval_dev(data: dict) -> str:
    """benchmarks/retrieval_dev.py's output: recall@k on dev per probe family and document, and
    each retriever's paired change against the default."""
    rs = data["retrievers"]
    others = [r for r in rs if r != data["default"]]
    lines = ["| dev probes | document | n | " + " | ".join(f"{r} recall@{data['k']}" for r in rs) + " | "
             + " | ".join(f"{r} minus {data['default']}" for r in others) + " |",
             "|---|---|---|" + "---|" * (len(rs) + len(others))]
    for fam, g in data["groups"].items():
        for doc, s in g.items():
            name = f"**{doc}**" if doc == "all documents" else doc
            lines.append(f"| {fam} | {name} | {s['n']} | " + " | ".join(f"{100 * s['recall'][r]:.1f}%" for r in rs) + " | "
                         + " | ".join(change_text(s["vs_default"].get(r)) for r in others) + " |")
    return "\n".join(lines) + "\n"


def retrieval_headers(data: dict) -> str:
    """benchmarks/retrieval_dev.py --headers: per probe family and document, each retriever's
    recall@k without and with contextual chunk headers, and the paired change."""
    plain = [r for r in data["retrievers"] if not r.endswith("+headers")]
    lines = ["| dev probes | document | n | " + " | ".join(f"{r}: plain, headers, change" for r in plain) + " |",
             "|---|---|---|" + "---|" * len(plain)]
    for fam, g in data["groups"].items():
        for doc, s in g.items():
            name = f"**{doc}**" if doc == "all documents" else doc
            cells = [f"{100 * s['recall'][r]:.1f}% → {100 * s['recall'][r + '+headers']:.1f}%, "
                     f"{change_text(s['headers_vs_plain'][r])}" for r in plain]
            lines.append(f"| {fam} | {name} | {s['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def model_vs_model(data: dict) -> str:
    """benchmarks/model_vs_model.py's output: two models probe by probe, accuracy and the share of
    choices that are another period's value of the same line item, with the paired change."""
    a, b = data["a"], data["b"]
    lines = [f"| probes | n | accuracy: base, {a}, {b} | {b} minus {a} | another period's value: base, {a}, {b} "
             f"| {b} minus {a} |", "|---|---|---|---|---|---|"]
    for key, c in data["table"].items():
        kind, split = key.split("/")
        acc = ", ".join(f"{100 * c['acc'][m]:.1f}%" for m in ("base", a, b))
        other = ", ".join(f"{100 * c['other_period'][m]:.1f}%" for m in ("base", a, b))
        lines.append(f"| {KIND_NAMES.get(kind, kind)}, {split} | {c['n']} | {acc} | {change_text(c['acc_b_minus_a'])} | "
                     f"{other} | {change_text(c['other_period_b_minus_a'])} |")
    for m, f in data["forgetting"].items():
        ppl = f.get("novel_ppl")
        ppl_text = f"{100 * ppl['diff']:+.0f}% [{100 * ppl['lo']:+.0f}, {100 * ppl['hi']:+.0f}]" if ppl else "—"
        lines.append(f"\n{m} against the base: general-eval accuracy {change_text(f.get('general_eval'))}, "
                     f"novel perplexity {ppl_text}.")
    return "\n".join(lines) + "\n"


def trajectory(data: dict) -> str:
    """benchmarks/trajectory.py's output: per snapshot, each probe kind's dev and test change and
    the general-eval change (epochs are chosen on the dev columns)."""
    kinds = [k for k in ("fact_qa", "fact_heldout", "paraphrase") if k in data["n_test"]] + \
        sorted(k for k in data["n_test"] if k not in KIND_NAMES)
    head = ["step (epoch)"] + [f"{k} {s}" for k in kinds for s in ("dev", "test")] + ["general-eval", "novel ppl"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in data["points"]:
        cells = [f"{p['step']} ({p['epoch']:g})" if p.get("epoch") is not None else str(p["step"])]
        for k in kinds:
            v = p["kinds"].get(k) or {}
            cells += [change_text(v.get("dev")), change_text(v.get("test"))]
        cells.append(change_text(p.get("general_eval")))
        ppl = p.get("novel_ppl")
        cells.append(f"{100 * ppl['diff']:+.0f}% [{100 * ppl['lo']:+.0f}, {100 * ppl['hi']:+.0f}]" if ppl else "—")
        lines.append("| " + " | ".join(cells) + " |")
    base = ", ".join(f"{k} {100 * data['base_closed'][k]:.1f}% (RAG {100 * data['base_rag'][k]:.1f}%)"
                     for k in kinds if data["base_closed"].get(k) is not None and data["base_rag"].get(k) is not None)
    return "\n".join(lines) + f"\n\nBase, closed book on test: {base}.\n"


def heldout_choices(data: dict) -> str:
    """benchmarks/heldout_choices.py's output: per probe kind and split, accuracy and the share of
    answers that are a QA-trained value of the same line item, base and trained, with the change."""
    lines = ["| probes | n | with a QA-trained same-row distractor | model | accuracy | chose a QA-trained same-row value "
             "| change against the base |",
             "|---|---|---|---|---|---|---|"]
    for key, cell in data["table"].items():
        kind, split = key.split("/")
        for name, c in ((k, v) for k, v in cell.items() if isinstance(v, dict)):
            lines.append(f"| {KIND_NAMES.get(kind, kind)}, {split} | {cell['n']} | {cell['has_qa_sibling_distractor']} | {name} | "
                         f"{100 * c['acc']:.1f}% | {100 * c['chose_qa_sibling']:.1f}% | {change_text(c['chose_qa_sibling_change'])} |")
    return "\n".join(lines) + "\n"


def rag_cell(accuracy: float, recall: float | None, change: dict | None) -> str:
    """'27.7% (recall 82%), +5.9 [+0.0, +12.2]': a RAG configuration's accuracy, its recall@k when
    measured, and its paired change against the reference (none for the reference itself)."""
    cell = f"{100 * accuracy:.1f}%"
    if recall is not None:
        cell += f" (recall {100 * recall:.0f}%)"
    return cell + (f", {change_text(change)}" if change else "")


def rag_units(data: dict) -> str:
    """benchmarks/rag_units_dev.py's output: per probe kind (dev), the base model's accuracy closed
    book and with each retrieval (recall@k beside it), and the paired change against the chunks."""
    names = list(next(iter(data["kinds"].values()))["configs"])
    lines = ["| dev probes | n | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for kind, row in data["kinds"].items():
        cells = [rag_cell(c["accuracy"], c["recall"], c["vs_reference"]) for c in (row["configs"][n] for n in names)]
        lines.append(f"| {KIND_NAMES.get(kind, kind)} | {row['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def rag_context(data: dict) -> str:
    """benchmarks/rag_context_dev.py's output: per probe family and document (dev), the base model's
    RAG accuracy (recall@k beside it) for each chunk size x k, and the paired change against the reference."""
    names, ref = data["configs"], data["reference"]
    lines = ["| dev probes | document | n | " + " | ".join("{}-token chunks, k={}".format(*c.split("x"))
                                                      + (" (reference)" if c == ref else "") for c in names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    for fam, g in data["groups"].items():
        for doc, s in g.items():
            cells = [rag_cell(s["accuracy"][c], s["recall"][c], s["vs_reference"].get(c)) for c in names]
            name = f"**{doc}**" if doc == "all documents" else doc
            lines.append(f"| {fam} | {name} | {s['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def year_binding(data: dict) -> str:
    """benchmarks/year_binding.py's output: per probe kind, split and model, the share of choices
    from the probe's own row, and among those the asked year's share against blind chance."""
    lines = ["| probes | n | model | choice from the probe's own row | asked year among those | chance among those | "
             "year minus chance | accuracy knowing the rows, not the years |", "|---|---|---|---|---|---|---|---|"]
    for key, cell in data["table"].items():
        kind, split = key.split("/")
        for name, c in cell.items():
            if name == "n" or c["year_in_row"] is None:
                continue
            lines.append(f"| {KIND_NAMES.get(kind, kind)}, {split} | {cell['n']} | {name} | {100 * c['in_row']:.1f}% | "
                         f"{100 * c['year_in_row']:.1f}% | {100 * c['chance_in_row']:.1f}% | {change_text(c['year_minus_chance'])} | "
                         f"{100 * c['row_only_accuracy']:.1f}% |")
    return "\n".join(lines) + "\n"


def trained_wordings(data: dict) -> str:
    """benchmarks/trained_wordings.py's output: per model, QA-trained facts asked in the probe's
    wording and in the trained one: accuracy, own-row share, the asked year among those."""
    lines = ["| model | wording | accuracy | choice from the probe's own row | asked year among those (chance) | "
             "year minus chance | trained minus probe wording |", "|---|---|---|---|---|---|---|"]
    for name, res in data["models"].items():
        for wording in ("probe", "trained"):
            c = res[wording]
            year = f"{100 * c['year_in_row']:.1f}% ({100 * c['chance_in_row']:.1f}%)" if c["year_in_row"] is not None else "—"
            diff = change_text(res["trained_minus_probe"]) if wording == "trained" else ""
            lines.append(f"| {name} | {wording} | {100 * c['accuracy']:.1f}% | {100 * c['in_row']:.1f}% | {year} | "
                         f"{change_text(c['year_minus_chance'])} | {diff} |")
    return "\n".join(lines) + "\n"


def settings_dev(data: dict) -> str:
    """benchmarks/settings_dev.py's output: per setting, pooled over its seeds, the change against
    the base and against the reference on dev (chosen on), on test per probe kind (reported), and
    general-eval accuracy; novel perplexity per seed; the decision under the table."""
    first = next(iter(data["settings"].values()))
    tests = [k for k in first if k.startswith("test_")]
    ref = data["decision"]["reference"]
    lines = ["| setting | seeds | dev accuracy | dev change | dev minus " + ref + " | "
             + " | ".join(f"test {k[5:]} change" for k in tests)
             + " | general-eval change | general-eval minus " + ref + " | novel perplexity per seed |",
             "|---|---|---|---|---|" + "---|" * len(tests) + "---|---|---|"]
    for s, r in data["settings"].items():
        ge = r.get("general_eval") or {}
        ppl = r.get("novel_ppl_per_seed")
        lines.append(f"| {s} | {len(r['models'])} | {100 * r['dev']['accuracy']:.1f}% (n {r['dev']['n']}) | "
                     f"{change_text(r['dev']['vs_base'])} | {change_text(r['dev']['vs_reference'])} | "
                     + " | ".join(f"{change_text(r[k]['vs_base'])}" for k in tests)
                     + f" | {change_text(ge.get('vs_base'))} | {change_text(ge.get('vs_reference'))} | "
                     f"{'—' if not ppl else ', '.join(f'{100 * x:+.0f}%' for x in ppl)} |")
    d = data["decision"]
    return "\n".join(lines) + f"\n\nChosen on dev: **{d['chosen']}** ({d['why']}).\n"


def fact_paraphrase(data: dict) -> str:
    """benchmarks/paraphrase_check.py's output: what the checks removed, and of the rewrites they
    kept, the share a person labelled faithful, per source kind, with its Wilson interval."""
    checks = data["checks"]
    removed = ", ".join(f"{k} {v}" for k, v in sorted(checks["removed"].items(), key=lambda kv: -kv[1]) if v)
    lines = [f"Requests {checks['jobs']:,} ({data['config']['fact_paraphrases']} per source sentence, "
             f"{data['model']}, temperature {data['config']['temperature']}); kept {checks['items']:,}; removed: {removed}.",
             "", "| source | kept | labelled | faithful | share faithful [95%] |", "|---|---|---|---|---|"]
    for kind, s in data["by_source"].items():
        share = "—" if s["share"] is None else f"{100 * s['share']:.0f}% [{100 * s['lo']:.0f}, {100 * s['hi']:.0f}]"
        lines.append(f"| {'table fact (its first restatement)' if kind == 'table' else 'prose sentence'} | {s['kept']} | "
                     f"{s['labelled']} | {s['faithful']} | {share} |")
    return "\n".join(lines) + "\n"


def train_curve(data: dict) -> str:
    """benchmarks/train_curve.py's output: the training log's means over windows of steps."""
    names = {"reward": "reward", "kl": "KL to the start model", "completions/mean_length": "completion length (tokens)"}
    keys = data["keys"]
    lines = ["| steps | " + " | ".join(names.get(k, k) for k in keys) + " |", "|---|" + "---|" * len(keys)]
    for w in data["windows"]:
        lines.append(f"| {w['first_step']}-{w['last_step']} | " + " | ".join(f"{w[k]:.1f}" if "length" in k else f"{w[k]:.3f}"
                                                                      for k in keys) + " |")
    return "\n".join(lines) + "\n"


RENDERERS = {"fact_seeds": fact_seeds, "fact_paraphrase": fact_paraphrase, "train_curve": train_curve, "retrieval_dev": retrieval_dev,
             "retrieval_headers": retrieval_headers,
             "trajectory": trajectory, "model_vs_model": model_vs_model,
             "heldout_choices": heldout_choices, "rag_units": rag_units, "rag_context": rag_context,
             "year_binding": year_binding, "trained_wordings": trained_wordings,
             "settings_dev": settings_dev}


def render(text: str) -> str:
    def one(m: re.Match) -> str:
        kind = m["kind"]
        if kind not in RENDERERS:
            raise SystemExit(f"unknown table kind {kind!r}; known: {', '.join(RENDERERS)}")
        data = json.loads((ROOT / m["data"]).read_text())
        return m.group(1) + RENDERERS[kind](data) + m.group(5)

    return BLOCK.sub(one, text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite the tables instead of checking them")
    a = ap.parse_args()
    for doc in sorted((ROOT / "docs").glob("*.md")):
        text = doc.read_text()
        new = render(text)
        if new != text:
            if a.write:
                doc.write_text(new)
                print(f"rewrote {doc.relative_to(ROOT)}")
            else:
                print(f"{doc.relative_to(ROOT)}: a generated table differs from its data; "
                      "run python benchmarks/docs_tables.py --write", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The report: the results table (model × learning, RAG, forgetting, cost), general-eval
accuracy per set, every change against the base with its paired 95% interval, methods
compared at equal learning, the learning-versus-forgetting plot, per-probe results; as
Markdown, a self-contained HTML page (plots embedded as PNG), the terminal table, and the
JSON it is built from."""

from __future__ import annotations

import base64
import functools
import io
import re
from pathlib import Path

from kbake.eval.decide import decide, equal_learning, findings
from kbake.eval.results import load_metrics
from kbake.run import atomic_write_bytes, atomic_write_text

COLUMNS = ["model", "method", "closed-book acc", "paraphrase acc", "verbatim acc", "fact-QA acc", "fact held-out acc", "margin", "dev acc",
           "RAG acc",
           "trained+RAG acc", "short-answer F1", "general-eval acc", "novel ppl change", "replay-domain ppl change",
           "KL", "general QA F1", "trainable params", "train time"]
SET_NAMES = {"arc_easy": "ARC-Easy", "piqa": "PIQA", "hellaswag": "HellaSwag", "sciq": "SciQ"}


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _num(x, fmt="{:.4f}") -> str:
    return "—" if x is None else fmt.format(x)


def fmt_change(c: dict | None, scale: float = 100, unit: str = "", counts: bool = False, digits: int = 1) -> str:
    """'+14.3 [-2.4, +31.0]' (points, or `unit`), optionally with '8↑ 2↓' (items gained, lost)."""
    if not c:
        return "—"
    f = f"{{:+.{digits}f}}"
    s = f"{f.format(scale * c['diff'])}{unit} [{f.format(scale * c['lo'])}, {f.format(scale * c['hi'])}]"
    return s + (f" {c['gained']}↑ {c['lost']}↓" if counts else "")


KIND_LABELS = {"paraphrase": "paraphrased test probes", "verbatim": "verbatim test probes",
               "fact_qa": "fact probes of QA-trained facts (test, wordings never trained)",
               "fact_heldout": "fact probes of held-out facts (test; only restatements trained)",
               "generated": "generated test probes"}


def learning_key(metrics: dict) -> tuple[str, str]:
    """(key in closed_book / vs_base suffix, label) of the learning figure: eval's learning_kind."""
    k = metrics["probes"].get("learning_kind")
    return (f"acc_{k}", f"closed_book_{k}") if k else ("acc", "closed_book")


def learning_label(metrics: dict) -> str:
    k = metrics["probes"].get("learning_kind")
    return KIND_LABELS.get(k, f"{k} test probes") if k else "test probes"


def kind_rows(metrics: dict) -> tuple[list[str], list[list[str]]]:
    """Per probe kind (test split): the base's closed-book and RAG accuracy, then each trained
    model's closed-book change and its closed book minus RAG on the base, with intervals."""
    kinds = metrics["probes"].get("kinds", {})
    models = metrics["models"]
    base = models[0]
    header = ["probe kind", "test probes", "base closed book", "base RAG"]
    for m in models[1:]:
        header += [f"{m['name']} closed book (change)", f"{m['name']} minus base RAG"]
    rows = []
    for k, n in kinds.items():
        row = [k, str(n), _pct(base["closed_book"].get(f"acc_{k}")), _pct((base.get("rag") or {}).get(f"acc_{k}"))]
        for m in models[1:]:
            row += [_with_change(m["closed_book"].get(f"acc_{k}"), m.get("vs_base", {}).get(f"closed_book_{k}")),
                    fmt_change((m.get("closed_vs_base_rag") or {}).get(k), counts=True)]
        rows.append(row)
    return header, rows


def map_cell(row: dict, kind: str) -> str:
    """One knowledge-map cell: 'base -> model of n' for a kind of fact ('heldout' or 'qa'), or a dash."""
    return f"{row[kind + '_base']} -> {row[kind + '_model']} of {row[kind + '_n']}" if row[kind + "_n"] else "—"


def knowledge_map_rows(metrics: dict) -> tuple[list[str], list[list[str]]]:
    """The knowledge map of each trained model: per table, test facts answered by base -> model."""
    header = ["model", "table", "held-out facts: base -> model", "QA-trained facts: base -> model"]
    rows = []
    for m in metrics["models"][1:]:
        for r in m.get("knowledge_map") or []:
            rows.append([m["name"], r["group"], map_cell(r, "heldout"), map_cell(r, "qa")])
    return header, rows


def binding_rows(metrics: dict) -> tuple[list[str], list[list[str]]]:
    """Per model and fact probe kind (test): the share of choices from the probe's own table row,
    and among those the asked period's share against blind chance, with the interval."""
    header = ["model", "probe kind", "accuracy", "choice from the probe's own row", "asked period among those (chance)",
              "period minus chance", "accuracy knowing the rows, not the periods"]
    rows = []
    for m in metrics["models"]:
        for key, c in (m.get("year_binding") or {}).items():
            kind, split = key.split("/")
            if split != "test" or c["year_in_row"] is None:
                continue
            rows.append([m["name"], KIND_LABELS.get(kind, kind), _pct(m["closed_book"].get(f"acc_{kind}")), _pct(c["in_row"]),
                         f"{_pct(c['year_in_row'])} ({_pct(c['chance_in_row'])})", fmt_change(c["year_minus_chance"]),
                         _pct(c.get("row_only_accuracy"))])
    return header, rows


def seed_rows(metrics: dict) -> tuple[list[str], list[list[str]]]:
    """Per seed group (models NAME-s0, NAME-s1, …): each pooled change with its interval that
    resamples seeds then items, the per-seed changes, and what the pooled items detect."""
    names = {"closed_book": "closed book, all test probes", "dev_closed_book": "closed book, dev probes",
             "closed_vs_base_rag": "closed book minus base RAG, all test probes", "general_eval": "general-eval (forgetting)",
             "trained_rag": "trained+RAG minus base RAG, all test probes",
             "trained_rag_vs_closed": "trained+RAG minus its closed book, all test probes"}
    header = ["method", "seeds", "comparison", "pooled change", "per seed", "detectable change"]
    rows = []
    for g in metrics.get("seed_groups") or []:
        for key, c in g["changes"].items():
            kind = key.removeprefix("dev_closed_book_").removeprefix("closed_book_").removeprefix("closed_vs_base_rag_")
            if key.startswith("dev_"):  # the kind labels name the test split
                label = names.get(key) or f"closed book, dev probes of kind {kind}"
            else:
                what = "closed book minus base RAG, " if key.startswith("closed_vs") else "closed book, "
                label = names.get(key) or what + KIND_LABELS.get(kind, kind)
            rows.append([g["group"], ", ".join(map(str, g["seeds"])), label, fmt_change(c, counts=True),
                         ", ".join(f"{100 * x:+.1f}" for x in c["per_seed"]),
                         "—" if c.get("detectable") is None else f"±{100 * c['detectable']:.1f}"])
    return header, rows


def detect_rows(metrics: dict) -> tuple[list[str], list[list[str]]]:
    """Per trained model and comparison: the change, and the smallest change its items detect
    (80% power, two-sided 5%, from the observed disagreement: eval.intervals.detectable_change)."""
    names = {"closed_book": "all test probes", "dev_closed_book": "dev probes",
             "general_eval": "general-eval (forgetting)"}
    header = ["model", "comparison", "items", "change", "detectable change", "reading"]
    rows = []
    for m in metrics["models"][1:]:
        for key, d in (m.get("detects") or {}).items():
            label = names.get(key) or KIND_LABELS.get(key.removeprefix("closed_book_"), key)
            det = d["detectable"]
            if d["beyond_noise"]:
                reading = "beyond noise"
            elif det is None:
                reading = "no item changed"
            else:
                reading = f"within noise: a true change smaller than ±{100 * det:.1f} points is missed more than 1 time in 5"
            rows.append([m["name"], label, str(d["n"]), f"{100 * d['diff']:+.1f}", "—" if det is None else f"±{100 * det:.1f}",
                         reading])
    return header, rows


def _with_change(value, change: dict | None) -> str:
    return _pct(value) + (f" ({fmt_change(change)})" if change else "")


def table_rows(metrics: dict) -> list[list[str]]:
    base = metrics["models"][0]
    base_rag = base["rag"]["acc"]
    rows = []
    for m in metrics["models"]:
        cb, g, vs = m["closed_book"], m["general"], m.get("vs_base", {})
        is_base = m["method"] == "base"
        dev = (m.get("dev") or {}).get("closed_book")
        ge = m.get("general_eval")
        rows.append([
            m["name"], m["method"], _with_change(cb["acc"], vs.get("closed_book")),
            _with_change(cb.get("acc_paraphrase"), vs.get("closed_book_paraphrase")),
            _with_change(cb.get("acc_verbatim"), vs.get("closed_book_verbatim")),
            _with_change(cb.get("acc_fact_qa"), vs.get("closed_book_fact_qa")),
            _with_change(cb.get("acc_fact_heldout"), vs.get("closed_book_fact_heldout")),
            _num(cb.get("margin"), "{:+.3f}") + (f" ({fmt_change(vs['margin'], 1, digits=3)})" if vs.get("margin") else ""),
            _pct(dev["acc"]) if dev else "—",
            _pct(base_rag), "—" if is_base else _pct(m["rag"]["acc"]),
            _pct(m.get("short_answer", {}).get("f1")),
            _with_change(ge["acc"], vs.get("general_eval")) if ge else "—",
            "—" if is_base else fmt_change(vs.get("novel_ppl"), unit="%"),
            "—" if is_base else fmt_change(vs.get("replay_ppl"), unit="%"),
            _num(g.get("novel_kl")) + " / " + _num(g.get("replay_kl")),
            _pct(g.get("qa_f1")),
            f"{m['trainable_params']:,}" if m.get("trainable_params") is not None else "—",
            "—" if not m.get("train_seconds") else f"{m['train_seconds'] / 60:.1f} min",
        ])
    return rows


def general_eval_rows(metrics: dict) -> tuple[list[str], list[list[str]]]:
    """Per general-eval set: base accuracy, then each model's accuracy and change with interval and counts."""
    sets = metrics["general"].get("general_eval_sets", [])
    models = metrics["models"]
    if not metrics["general"].get("general_eval_items"):
        return [], []
    header = ["set", "items"] + [m["name"] for m in models]
    rows = []
    n_per = {s: sum(1 for i in metrics.get("general_eval_items", []) if i["set"] == s) for s in sets}
    for s in [*sets, None]:
        key, vkey = (f"acc_{s}", f"general_eval_{s}") if s else ("acc", "general_eval")
        row = [SET_NAMES.get(s, s) if s else "all", str(n_per[s] if s else sum(n_per.values()))]
        for m in models:
            acc = (m.get("general_eval") or {}).get(key)
            ch = m.get("vs_base", {}).get(vkey)
            row.append(_pct(acc) + (f" ({fmt_change(ch, counts=True)})" if ch else ""))
        rows.append(row)
    return header, rows


def verdicts(metrics: dict) -> list[str]:
    """Plain sentences on what each trained model did, as measured, with its intervals; no spin.
    What the changes show is eval's (metrics.json `findings`, kbake.eval.decide); this only words it."""
    models = metrics["models"]
    base = models[0]
    key, vkey = learning_key(metrics)
    label = learning_label(metrics)
    found = metrics.get("findings") or findings(metrics)  # a metrics.json from before findings were stored
    out = []
    for m in models[1:]:
        vs = m.get("vs_base", {})
        c, f = vs.get(vkey), found.get(m["name"])
        if c is None or f is None:
            continue
        noise = "beyond noise" if f["learning_beyond_noise"] else "within noise: its interval includes zero"
        s = (f"**{m['name']}** ({m['method']}): on {label} {_pct(m['closed_book'][key])} vs {_pct(base['closed_book'][key])}"
             f" for the base, {fmt_change(c)} points (95% interval), {c['gained']} gained and {c['lost']} lost of {c['n']}"
             f" ({noise}; one probe is {100 / max(c['n'], 1):.1f} points).")
        if vs.get("margin"):
            s += f" Margin of the right option {fmt_change(vs['margin'], 1, digits=3)} nats/token."
        if vs.get("dev_closed_book"):
            s += f" Dev probes: {fmt_change(vs['dev_closed_book'])} points."
        where = {"above": "above", "below": "below", "equal": "equal to"}[f["closed_vs_base_rag"]]
        s += (f" Closed book it is {where} RAG on the base model ({_pct(m['closed_book']['acc'])} vs "
              f"{_pct(base['rag']['acc'])}).")
        ge = vs.get("general_eval")
        if ge:
            what = {"forgot": "a drop beyond its interval: forgetting", "gained": "a gain beyond its interval",
                    "no_change": "no change beyond its interval"}[f["general_eval"]]
            s += (f" General-eval accuracy {fmt_change(ge)} points over {ge['n']} items ({ge['gained']} gained,"
                  f" {ge['lost']} lost): {what}.")
            if f.get("items_for_2pt_drop"):
                s += (f" At this model's rate of disagreement with the base, a 2-point drop would need about "
                      f"{f['items_for_2pt_drop']:,} items to show.")
        if vs.get("novel_ppl"):
            s += f" Perplexity on the novel {fmt_change(vs['novel_ppl'], unit='%')}"
        if vs.get("replay_ppl"):
            s += f", on the replay domain (Wikipedia) {fmt_change(vs['replay_ppl'], unit='%')}"
        s += f"; KL to the base {_num(m['general'].get('novel_kl'))} nats/token on the novel."
        vi = m.get("vs_init") or {}
        if vi.get(vkey):
            ci = vi[vkey]
            s += (f" Against **{Path(m['init']).name}**, the model it started from: {fmt_change(ci)} points on {label}"
                  f" ({ci['gained']} gained, {ci['lost']} lost; "
                  f"{'beyond noise' if f.get('vs_init_beyond_noise') else 'within noise'})")
            if vi.get("dev_closed_book"):
                s += f", dev {fmt_change(vi['dev_closed_book'])}"
            if vi.get("margin"):
                s += f", margin {fmt_change(vi['margin'], 1, digits=3)}"
            if vi.get("general_eval"):
                s += f", general-eval {fmt_change(vi['general_eval'])}"
            s += "."
        out.append(s)
    if len(models) == 1:
        out.append("Only the base model was evaluated: train a model (`kbake train`) to see learning and forgetting.")
    return out


def _share(u: dict | None, o: str) -> str:
    if not u:
        return "—"
    lo, hi = u[f"{o}_ci"]
    return f"{100 * u[o]:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]"


def update_rows(metrics: dict) -> tuple[list[str], list[list[str]]]:
    """Changed facts: per model and answer path, the share answering with the newest value,
    a stale one, or neither (Wilson 95% intervals); empty when the probes have no update probes."""
    header = ["model", "answers from", "newest value", "stale value", "neither"]
    rows = []
    paths = [("closed_book", "its weights (closed book)"), ("rag", "RAG over all documents"),
             ("rag_newest", "RAG over the newest documents")]
    for m in metrics["models"]:
        for key, label in paths:
            u = (m.get("updates") or {}).get(key)
            if u:
                rows.append([m["name"], label] + [_share(u, o) for o in ("newest", "stale", "neither")])
        for pt in m.get("trajectory") or []:
            if pt.get("updates") and pt.get("step") is not None and pt is not m["trajectory"][-1]:
                rows.append([f"{m['name']}@{pt['step']}", "its weights (closed book)"]
                            + [_share(pt["updates"], o) for o in ("newest", "stale", "neither")])
    return header, rows


def trajectory_rows(metrics: dict) -> tuple[list[str], list[list[str]]]:
    """Per model that kept snapshots: the change at each snapshot and at the end, on dev (where
    the stopping point is chosen) and on test (what is reported), for the learning kind and then
    each other probe kind (held-out facts); empty without snapshots."""
    learning = metrics["probes"].get("learning_kind")
    others = [k for k in sorted(metrics["probes"].get("kinds") or {}) if k != learning]
    header = ["model", "step", "dev change (learning kind)", "test change (learning kind)", "general-eval change",
              "novel ppl change", *(f"{k} {s}" for k in others for s in ("dev", "test"))]
    rows = []
    for m in metrics["models"]:
        traj = m.get("trajectory") or []
        if len(traj) < 2:
            continue
        for pt in traj:
            by_kind = pt.get("by_kind") or {}
            rows.append([m["name"], str(pt.get("step")), fmt_change(pt.get("dev_learning"), counts=True),
                         fmt_change(pt.get("learning"), counts=True), fmt_change(pt.get("general_eval")),
                         fmt_change(pt.get("novel_ppl"), unit="%"),
                         *(fmt_change((by_kind.get(k) or {}).get(s)) for k in others for s in ("dev", "test"))])
    return header, rows


VERDICT_TEXT = {
    "retrieve_no_learning": "**Retrieve.** Baking taught nothing beyond noise (its interval includes zero)",
    "retrieve_forgot": ("**Retrieve, or bake with care.** Baking learned, but general-eval accuracy fell beyond its "
                        "interval: the model forgot"),
    "both": "**Both.** Baking learned, and retrieval on top of the trained model beats RAG alone beyond noise",
    "bake": "**Bake.** The trained model answers closed book better than RAG does, beyond noise",
    "either": ("**Either; retrieve if the documents change.** Baking learned, and answers closed book as well as "
               "RAG within noise"),
    "retrieve_rag_better": "**Retrieve.** Baking learned, but RAG on the base model answers more, beyond noise",
}


def advice(metrics: dict) -> list[str]:
    """The words of eval's decision (metrics.json `advice`, computed by kbake.eval.decide; decided
    here only for a metrics.json written before it was stored)."""
    d = metrics.get("advice") or decide(metrics)
    base = metrics["models"][0]
    rag = base["rag"]["acc"]
    if d["verdict"] == "nothing_trained":
        return [f"**Retrieve.** Nothing was baked yet; RAG on the base model answers {_pct(rag)} of the test probes."]
    by_name = {m["name"]: m for m in metrics["models"]}
    members = [by_name[n] for n in d.get("models") or [d["model"]]]  # a seed group's seeds, or the one model
    best = members[0]
    pooled = len(members) > 1
    chosen = ("chosen on dev probes" if d["chosen_on"] == "dev"
              else "chosen on test probes: this run has no dev probes, so the choice itself is on the reported set")
    if pooled:
        chosen = f"{len(members)} seeds pooled: {', '.join(m['name'] for m in members)}; " + chosen
    closed = sum(m["closed_book"]["acc"] for m in members) / len(members)
    both = sum(m["rag"]["acc"] for m in members) / len(members)
    why = (f"{d['model']}, {chosen}: learning {fmt_change(d['learning'])} points, closed book "
           f"{_pct(closed)} vs RAG {_pct(rag)}, trained+RAG {_pct(both)}, "
           f"general-eval change {fmt_change(d['forgetting'])}")
    ppls = [(m.get("vs_base") or {}).get("novel_ppl") for m in members]
    if all(ppls):  # not a rule (accuracy decides), but a model whose prose moved far should say so beside the verdict
        why += (f", novel perplexity change {fmt_change(ppls[0], unit='%', digits=0)}" if not pooled else
                ", novel perplexity change per seed " + ", ".join(f"{100 * p['diff']:+.0f}%" for p in ppls))
    if d["closed_minus_rag"]:
        why += (f"; closed book minus RAG {fmt_change(d['closed_minus_rag'])}, trained+RAG minus RAG "
                f"{fmt_change(d['both_minus_rag'])}")
    out = [f"{VERDICT_TEXT[d['verdict']]} ({why})."]
    secs, tokens = [m.get("train_seconds") for m in members], metrics.get("source_tokens")
    if all(secs) and tokens:
        per = sum(secs) / len(secs)
        out.append(f"Cost: {d['model']} trained in {per / 60:.1f} min{' per seed' if pooled else ''}, "
                   f"{per / (tokens / 1000):.1f} s per 1k source tokens ({tokens:,} tokens).")
    u = (best.get("updates") or {}).get("closed_book")
    un = (base.get("updates") or {}).get("rag_newest")
    if u and un:
        # The Wilson interval is per model: for a seed group RAG must lie above every seed's.
        seeds_u = [(m.get("updates") or {}).get("closed_book") for m in members]
        ahead = all(s and un["newest_ci"][0] > s["newest_ci"][1] for s in seeds_u)
        out.append(f"Facts that changed: {best['name']}{' (the first seed)' if pooled else ''} answers the newest value "
                   f"for {_pct(u['newest'])} and a stale one for {_pct(u['stale'])}; RAG over the newest documents gives "
                   f"the newest for {_pct(un['newest'])}. "
                   + ("For facts that change, retrieve from the newest documents (its interval lies above"
                      f"{' for every seed' if pooled else ''})." if ahead else "Neither is ahead beyond noise on changed facts."))
    rebake = metrics.get("rebake")
    if rebake:
        out.append(f"A yearly update re-baked in {rebake['seconds'] / 60:.1f} min against {rebake['full_seconds'] / 60:.1f} "
                   f"min for a full retrain.")
    return out


def equal_learning_lines(metrics: dict) -> list[str]:
    """The words of eval's equal-learning comparison (metrics.json `equal_learning`)."""
    rows = metrics.get("equal_learning")
    if rows is None:  # a metrics.json from before it was stored
        rows = equal_learning(metrics)
    out = []
    for r in rows:
        a, b = r["a"], r["b"]
        if r["level"] is None:
            out.append(f"**{a}** vs **{b}**: one of them learns nothing on its line, so there is no common level to compare at.")
            continue
        out.append(f"**{a}** vs **{b}**: at {r['level']:+.1f} points of learning (the most both reach), general-eval accuracy "
                   f"changed by {r['a_general_eval']:+.1f} points for {a} and {r['b_general_eval']:+.1f} for {b} "
                   f"(interpolated along {r['a_checkpoints']} and {r['b_checkpoints']} checkpoints; each point's own "
                   "interval is in the plot).")
    return out


def markdown_table(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _png(fig) -> bytes:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _plots(metrics: dict) -> dict[str, bytes]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = metrics["models"]
    base = models[0]
    key, _ = learning_key(metrics)
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
    ax.scatter([0], [0], color="black", zorder=4, label="base")
    colors = {"full": "tab:red", "lora": "tab:blue", "memory": "tab:green", "grpo": "tab:purple", "tiny": "tab:brown"}
    markers = iter("os^Dv<>ph*")
    for m in models[1:]:
        pts = [p for p in m.get("trajectory") or [] if p.get("learning") and p.get("general_eval")]
        if not pts:
            continue
        xs = [100 * p["general_eval"]["diff"] for p in pts]
        ys = [100 * p["learning"]["diff"] for p in pts]
        xerr = [[x - 100 * p["general_eval"]["lo"] for x, p in zip(xs, pts)], [100 * p["general_eval"]["hi"] - x for x, p in zip(xs, pts)]]
        yerr = [[y - 100 * p["learning"]["lo"] for y, p in zip(ys, pts)], [100 * p["learning"]["hi"] - y for y, p in zip(ys, pts)]]
        c = colors.get(m["method"], "tab:orange")
        ax.plot([0] + xs, [0] + ys, color=c, lw=1.2, alpha=0.7)
        ax.errorbar(xs, ys, xerr=xerr, yerr=yerr, fmt=next(markers, "o"), color=c, ecolor=c, elinewidth=0.7,
                    alpha=0.85, capsize=2, zorder=3, label=f"{m['name']} ({m['method']})")
        ax.annotate(m["name"], (xs[-1], ys[-1]), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.axhline(0, color="gray", lw=0.6)
    ax.axvline(0, color="gray", lw=0.6)
    ax.set_xlabel("forgetting: general-eval accuracy change (points)")
    ax.set_ylabel(f"learning: {learning_label(metrics)}, change (points)", fontsize=8)
    ax.set_title("Learning vs forgetting, through each run's checkpoints\n(bars: paired 95% intervals; up and right is better)",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    out = {"scatter.png": _png(fig)}

    kinds = sorted(metrics["probes"]["kinds"])
    fig, ax = plt.subplots(figsize=(7, 3.8), dpi=110)
    series = [(f"{m['name']}", m["closed_book"]) for m in models] + [("RAG (base)", base["rag"])]
    width = 0.8 / len(series)
    for i, (label, acc) in enumerate(series):
        ax.bar([k + i * width for k in range(len(kinds))], [100 * (acc.get(f"acc_{k}") or 0) for k in kinds],
               width=width, label=label)
    ax.set_xticks([k + width * (len(series) - 1) / 2 for k in range(len(kinds))], kinds)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    ax.axhline(25, color="gray", lw=0.8, ls=":", label="chance (4 options)")
    ax.set_title("Accuracy by probe kind (test probes)")
    ax.legend(fontsize=8, ncol=2)
    out["kinds.png"] = _png(fig)
    return out


def per_probe_rows(metrics: dict) -> tuple[list[str], list[list[str]]]:
    names = [m["name"] for m in metrics["models"]]
    header = ["probe", "split", "kind", "question", "answer", "source retrieved"] + names + [f"{n}+RAG" for n in names]
    rows = []
    for p in metrics["per_probe"]:
        marks = ["✓" if p["models"][n]["closed"] else "✗" for n in names]
        rag = ["—" if p["models"][n]["rag"] is None else "✓" if p["models"][n]["rag"] else "✗" for n in names]
        rows.append([p["id"], p.get("split", "test"), p["kind"], p["question"], p["answer"],
                     "yes" if p["retrieved_source"] else "no", *marks, *rag])
    return header, rows


def _intro(metrics: dict) -> str:
    pr, g = metrics["probes"], metrics["general"]
    kinds = ", ".join(f"{v} {k}" for k, v in pr["kinds"].items())
    sets = ", ".join(SET_NAMES.get(s, s) for s in g.get("general_eval_sets", []))
    return (f"{pr.get('n_test', pr['n'])} test probes ({kinds}) give the headline; {pr.get('n_dev', 0)} dev probes are for "
            f"choosing recipes. RAG retrieves {metrics['retrieval']['k']} "
            f"{'fact statements' if metrics['retrieval'].get('units') == 'facts' else 'chunks'} "
            f"({metrics['retrieval'].get('retriever', 'dense')} "
            f"retrieval{', chunks with headers' if metrics['retrieval'].get('chunk_headers') else ''}; "
            f"recall@{metrics['retrieval']['k']} of "
            f"the source passage: {_pct(metrics['retrieval']['recall_at_k'])}). Forgetting: {g.get('general_eval_items', 0)} "
            f"general-eval questions ({sets}), perplexity on {g.get('novel_passages', 0)} passages of a novel and on "
            f"{g['paragraphs']} held-out Wikipedia paragraphs (the replay domain: replay can lower it), "
            f"{g['questions']} general questions. Changes against the base are given as +change [95% interval] "
            "(paired bootstrap over items); ↑/↓ count items gained and lost.")


def _sections(metrics: dict) -> list[tuple[str, str, object]]:
    """(title, kind, content) in report order; kind is 'p', 'table', 'list' or 'images'."""
    ge_header, ge_rows = general_eval_rows(metrics)
    out = [("Results", "table", (COLUMNS, table_rows(metrics)))]
    sd_header, sd_rows = seed_rows(metrics)
    if sd_rows:
        out.append(("Pooled over seeds (the headline of a method trained on several seeds)", "table", (sd_header, sd_rows)))
    if ge_rows:
        out.append(("General-eval accuracy per set", "table", (ge_header, ge_rows)))
    out.append(("What the numbers say", "list", verdicts(metrics)))
    dt_header, dt_rows = detect_rows(metrics)
    if dt_rows:
        out.append(("What this run can detect", "table", (dt_header, dt_rows)))
    if len(metrics["probes"].get("kinds", {})) > 1:
        out.append(("By probe kind (test probes)", "table", kind_rows(metrics)))
    km_header, km_rows = knowledge_map_rows(metrics)
    if km_rows:
        out.append(("Knowledge map: which tables got in (test fact probes answered closed book)", "table",
                    (km_header, km_rows)))
    yb_header, yb_rows = binding_rows(metrics)
    if yb_rows:
        out.append(("Which period: a fact probe answered from its own table row, and the asked period among those "
                    "(test)", "table", (yb_header, yb_rows)))
    up_header, up_rows = update_rows(metrics)
    if up_rows:
        n = next((u["n"] for m in metrics["models"] for u in (m.get("updates") or {}).values() if u), 0)
        out.append((f"Changed facts ({n} test questions whose answer changed)", "table", (up_header, up_rows)))
    out.append(("Bake or retrieve?", "list", advice(metrics)))
    eq = equal_learning_lines(metrics)
    out.append(("Methods at equal learning", "list", eq or
                ["Needs two trained models with learning lines (set train.snapshot_every to keep checkpoints)."]))
    tr_header, tr_rows = trajectory_rows(metrics)
    if tr_rows:
        out.append(("Along training: each snapshot on dev and test (choose the stopping point on dev)", "table",
                    (tr_header, tr_rows)))
    out.append(("Learning vs forgetting", "images", [("scatter.png", "learning versus forgetting"),
                                                     ("kinds.png", "accuracy by probe kind")]))
    out.append(("Per probe", "table", per_probe_rows(metrics)))
    return out


def _footer(prov: dict) -> str:
    return (f"kbake {prov['kbake_version']} · git {prov['git_hash'] or 'n/a'} · base model {prov['model']} · "
            f"seed {prov['seed']} · precision {prov.get('precision', '?')} · {prov['created']}")


@functools.cache
def _templates():
    """The jinja2 environment of kbake/eval/templates (HTML autoescaped; Markdown verbatim)."""
    from jinja2 import Environment, PackageLoader, select_autoescape
    from markupsafe import Markup, escape

    env = Environment(loader=PackageLoader("kbake.eval", "templates"), autoescape=select_autoescape(["html.j2"]),
                      trim_blocks=True, keep_trailing_newline=True)
    env.filters["bold"] = lambda v: Markup(re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", str(escape(v))))
    env.filters["b64"] = lambda data: base64.b64encode(data).decode()
    env.globals["md_table"] = lambda header, rows: markdown_table([[c.replace("|", "\\|") for c in r] for r in rows], header)
    env.filters["md_item"] = lambda v: f"- {v}"
    return env


def _view(metrics: dict) -> dict:
    """What the templates draw: the intro, the sections and the footer, all already worded."""
    sections = []
    for title, kind, content in _sections(metrics):
        if kind == "table":
            sections.append({"title": title, "kind": kind, "header": content[0], "rows": content[1]})
        elif kind == "list":
            sections.append({"title": title, "kind": kind, "entries": content})
        else:
            sections.append({"title": title, "kind": kind, "images": content})
    return {"intro": _intro(metrics), "sections": sections, "footer": _footer(metrics["provenance"])}


def render_markdown(metrics: dict) -> str:
    return _templates().get_template("report.md.j2").render(**_view(metrics))


def render_html(metrics: dict, images: dict[str, bytes]) -> str:
    return _templates().get_template("report.html.j2").render(**_view(metrics), images=images)


def write_report(folder: Path, metrics: dict) -> None:
    images = _plots(metrics)
    for name, data in images.items():
        atomic_write_bytes(folder / name, data)
    atomic_write_text(folder / "report.md", render_markdown(metrics))
    atomic_write_text(folder / "report.html", render_html(metrics, images))


def print_results(metrics: dict) -> None:
    """The results table in the terminal (the key columns; all of them are in report.md/html)."""
    import sys

    from rich.console import Console
    from rich.table import Table

    learn = "fact-QA acc" if metrics["probes"].get("learning_kind") == "fact_qa" else "paraphrase acc"
    keep = ["model", learn, "dev acc", "RAG acc", "trained+RAG acc", "general-eval acc",
            "novel ppl change", "train time"]
    idx = [COLUMNS.index(c) for c in keep]
    console = Console(width=None if sys.stdout.isatty() else 160)
    table = Table(title="kbake results (test probes; change [95% interval] against the base)")
    for c in keep:
        table.add_column(c, justify="left" if c == "model" else "right")
    for row in table_rows(metrics):
        table.add_row(*[row[i] for i in idx])
    console.print(table)
    for v in verdicts(metrics) + equal_learning_lines(metrics):
        console.print("- " + v.replace("**", ""))


def compare_runs(run_folders: list[Path]) -> str:
    """`kbake report R1 R2 …`: the result tables of several runs side by side (Markdown)."""
    rows = []
    for r in run_folders:
        path = Path(r) / "eval" / "metrics.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no eval results; run `kbake eval --run {r}` first")
        metrics = load_metrics(path)
        rows += [[str(r), *row] for row in table_rows(metrics)]
    return markdown_table(rows, ["run", *COLUMNS])

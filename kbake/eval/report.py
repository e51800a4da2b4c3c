"""The report: one table (model × learning, RAG, forgetting, cost), a learning-versus-
forgetting scatter, accuracy by probe kind, per-probe results; as Markdown, a
self-contained HTML page (plots embedded as PNG), and the JSON it is built from."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

from kbake.run import atomic_write_bytes, atomic_write_text

COLUMNS = ["model", "method", "closed-book acc", "paraphrase acc", "verbatim acc", "RAG acc", "trained+RAG acc",
           "short-answer F1", "ppl change", "KL", "general QA F1", "trainable params", "train time"]


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _num(x, fmt="{:.4f}") -> str:
    return "—" if x is None else fmt.format(x)


def table_rows(metrics: dict) -> list[list[str]]:
    base_rag = metrics["models"][0]["rag"]["acc"]
    rows = []
    for m in metrics["models"]:
        cb, g = m["closed_book"], m["general"]
        is_base = m["method"] == "base"
        rows.append([
            m["name"], m["method"], _pct(cb["acc"]), _pct(cb.get("acc_paraphrase")), _pct(cb.get("acc_verbatim")),
            _pct(base_rag), "—" if is_base else _pct(m["rag"]["acc"]),
            _pct(m.get("short_answer", {}).get("f1")), "—" if is_base else f"{100 * g['ppl_change']:+.1f}%",
            _num(g["kl"]), _pct(g.get("qa_f1")),
            f"{m['trainable_params']:,}" if m.get("trainable_params") is not None else "—",
            "—" if not m.get("train_seconds") else f"{m['train_seconds'] / 60:.1f} min",
        ])
    return rows


def verdicts(metrics: dict) -> list[str]:
    """Plain sentences on what each trained model did, as measured; no spin."""
    models = metrics["models"]
    base = models[0]
    kinds = sorted(metrics["probes"]["kinds"])
    out = []
    n = metrics["probes"]["n"]
    for m in models[1:]:
        parts = []
        for k in ["paraphrase", "verbatim"] if {"paraphrase", "verbatim"} <= set(kinds) else [None]:
            key = "acc" if k is None else f"acc_{k}"
            d = m["closed_book"][key] - base["closed_book"][key]
            label = {"paraphrase": "paraphrased probes", "verbatim": "verbatim probes", None: "all probes"}[k]
            verdict = "beats" if d > 0 else "does not beat" if d < 0 else "ties"
            parts.append(f"on {label} it {verdict} the base model ({_pct(m['closed_book'][key])} vs "
                         f"{_pct(base['closed_book'][key])}, {100 * d:+.1f} points)")
        wins = sum(1 for p in metrics["per_probe"] if p["models"][m["name"]]["closed"] and not p["models"]["base"]["closed"])
        losses = sum(1 for p in metrics["per_probe"] if not p["models"][m["name"]]["closed"] and p["models"]["base"]["closed"])
        rag = base["rag"]["acc"]
        vs_rag = "above" if m["closed_book"]["acc"] > rag else "below" if m["closed_book"]["acc"] < rag else "equal to"
        out.append(
            f"**{m['name']}** ({m['method']}): " + "; ".join(parts)
            + f". It gets {wins} of {n} probes right that the base model missed and misses {losses} the base got right"
            + f" (with {n} probes, one probe is {100 / n:.1f} points). Closed book it is {vs_rag} RAG on the base model"
            + f" ({_pct(m['closed_book']['acc'])} vs {_pct(rag)}). General perplexity changed by "
            + f"{100 * m['general']['ppl_change']:+.1f}%, KL to the base {m['general']['kl']:.4f} nats/token."
        )
    if len(models) == 1:
        out.append("Only the base model was evaluated: train a model (`kbake train`) to see learning and forgetting.")
    return out


def markdown_table(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _plots(metrics: dict) -> dict[str, bytes]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = metrics["models"]
    base = models[0]
    key = "acc_paraphrase" if "acc_paraphrase" in base["closed_book"] else "acc"
    fig, ax = plt.subplots(figsize=(6, 4.2), dpi=110)
    ax.scatter([0], [100 * base["closed_book"][key]], color="black", zorder=3, label="base")
    ax.axhline(100 * base["rag"][key], color="tab:gray", ls="--", lw=1, label="RAG (base model)")
    colors = {"full": "tab:red", "lora": "tab:blue", "memory": "tab:green", "grpo": "tab:purple"}
    by_method: dict[str, list[dict]] = {}
    for m in models[1:]:
        by_method.setdefault(m["method"], []).append(m)
    for method, ms in by_method.items():
        ms = sorted(ms, key=lambda m: m["general"]["ppl_change"])
        xs = [0] + [100 * m["general"]["ppl_change"] for m in ms]
        ys = [100 * base["closed_book"][key]] + [100 * m["closed_book"][key] for m in ms]
        c = colors.get(method, "tab:orange")
        ax.plot(xs, ys, color=c, lw=1.2, alpha=0.7)
        ax.scatter(xs[1:], ys[1:], color=c, zorder=3, label=method)
        for m, x, y in zip(ms, xs[1:], ys[1:]):
            ax.annotate(m["name"], (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("forgetting: general perplexity change (%)")
    ax.set_ylabel(f"learning: closed-book accuracy, {'paraphrased' if key != 'acc' else 'all'} probes (%)")
    ax.set_title("Learning vs forgetting (up and left is better)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    out = {"scatter.png": buf.getvalue()}

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
    ax.set_title("Accuracy by probe kind")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    out["kinds.png"] = buf.getvalue()
    return out


def per_probe_rows(metrics: dict) -> tuple[list[str], list[list[str]]]:
    names = [m["name"] for m in metrics["models"]]
    header = ["probe", "kind", "question", "answer", "source retrieved"] + [f"{n}" for n in names] + [f"{n}+RAG" for n in names]
    rows = []
    for p in metrics["per_probe"]:
        marks = ["✓" if p["models"][n]["closed"] else "✗" for n in names]
        rag = ["✓" if p["models"][n]["rag"] else "✗" for n in names]
        rows.append([p["id"], p["kind"], p["question"], p["answer"], "yes" if p["retrieved_source"] else "no", *marks, *rag])
    return header, rows


def render_markdown(metrics: dict) -> str:
    prov = metrics["provenance"]
    header, rows = per_probe_rows(metrics)
    return "\n\n".join([
        "# kbake report",
        f"{metrics['probes']['n']} held-out probes ({', '.join(f'{v} {k}' for k, v in metrics['probes']['kinds'].items())}); "
        f"RAG retrieves {metrics['retrieval']['k']} chunks (recall@{metrics['retrieval']['k']} of the source passage: "
        f"{_pct(metrics['retrieval']['recall_at_k'])}); forgetting on {metrics['general']['paragraphs']} held-out "
        f"general paragraphs and {metrics['general']['questions']} general questions.",
        markdown_table(table_rows(metrics), COLUMNS),
        "## What the numbers say\n\n" + "\n\n".join(f"- {v}" for v in verdicts(metrics)),
        "## Learning vs forgetting\n\n![scatter](scatter.png)\n\n![by kind](kinds.png)",
        "## Per probe\n\n" + markdown_table([[c.replace("|", "\\|") for c in r] for r in rows], header),
        f"kbake {prov['kbake_version']} · git {prov['git_hash'] or 'n/a'} · base model {prov['model']} · seed {prov['seed']} · {prov['created']}",
    ]) + "\n"


def _html_table(header: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def render_html(metrics: dict, images: dict[str, bytes]) -> str:
    import re

    prov = metrics["provenance"]
    header, rows = per_probe_rows(metrics)
    img = lambda name, alt: (f'<img alt="{alt}" src="data:image/png;base64,'  # noqa: E731
                             f'{base64.b64encode(images[name]).decode()}">')
    verdict_html = "".join("<li>" + re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(v)) + "</li>"
                           for v in verdicts(metrics))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kbake report</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em auto;max-width:78em;padding:0 1em;color:#222}}
table{{border-collapse:collapse;margin:1em 0;font-size:0.9em}} th,td{{border:1px solid #ccc;padding:3px 7px;text-align:left}}
th{{background:#f3f3f3}} .probes td:nth-child(n+5){{text-align:center}} img{{max-width:100%;margin-right:1em}}
.meta{{color:#666;font-size:0.85em}}
</style></head><body>
<h1>kbake report</h1>
<p>{metrics['probes']['n']} held-out probes ({', '.join(f'{v} {k}' for k, v in metrics['probes']['kinds'].items())});
RAG retrieves {metrics['retrieval']['k']} chunks (recall@{metrics['retrieval']['k']} of the source passage:
{_pct(metrics['retrieval']['recall_at_k'])}); forgetting measured on {metrics['general']['paragraphs']} held-out general
paragraphs and {metrics['general']['questions']} general questions.</p>
<h2>Results</h2>
{_html_table(COLUMNS, table_rows(metrics), "summary")}
<h2>What the numbers say</h2><ul>{verdict_html}</ul>
<h2>Learning vs forgetting</h2>
<div>{img("scatter.png", "learning versus forgetting scatter")}{img("kinds.png", "accuracy by probe kind")}</div>
<h2>Per probe</h2>
{_html_table(header, rows, "probes")}
<p class="meta">kbake {html.escape(prov['kbake_version'])} · git {html.escape(prov['git_hash'] or 'n/a')} · base model
{html.escape(str(prov['model']))} · seed {prov['seed']} · {html.escape(prov['created'])} · numbers in metrics.json</p>
</body></html>
"""


def write_report(folder: Path, metrics: dict) -> None:
    images = _plots(metrics)
    for name, data in images.items():
        atomic_write_bytes(folder / name, data)
    atomic_write_text(folder / "report.md", render_markdown(metrics))
    atomic_write_text(folder / "report.html", render_html(metrics, images))


def compare_runs(run_folders: list[Path]) -> str:
    """`kbake report R1 R2 …`: the result tables of several runs side by side (Markdown)."""
    rows = []
    for r in run_folders:
        path = Path(r) / "eval" / "metrics.json"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no eval results; run `kbake eval --run {r}` first")
        metrics = json.loads(path.read_text())
        rows += [[str(r), *row] for row in table_rows(metrics)]
    return markdown_table(rows, ["run", *COLUMNS])

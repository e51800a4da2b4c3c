"""One result per run: the same recipe, seed, machine and precision give the same metrics.json
apart from times, end to end on the tiny model — and in another folder (issue 31.1)."""

from __future__ import annotations

import json
import re

from kbake.config import EvalArgs, IngestArgs, ProbesArgs, Recipe, SynthArgs
from kbake.eval import evaluate
from kbake.ingest import ingest
from kbake.run import RunDir
from kbake.synth import make_fact_probes, synth
from kbake.train import train

TIME_KEY = re.compile(r"seconds|created|elapsed|per_s|timing|_time|^time|eval_parts|index_rebuilt|git_hash")


def scrub(x):
    """The metrics without what may differ between identical runs: times, dates, the folder."""
    if isinstance(x, dict):
        return {k: scrub(v) for k, v in x.items() if not TIME_KEY.search(k)}
    if isinstance(x, list):
        return [scrub(v) for v in x]
    return x


def one_run(root, tiny_model, embedder, precision: str = "fp32") -> dict:
    rows = "".join(f"<tr><td>Line item {i}</td><td>{100 + 7 * i}.0</td><td>{90 + 5 * i}.0</td></tr>" for i in range(10))
    doc = root / "acme-2025.html"
    doc.parent.mkdir(parents=True)
    doc.write_text("<p>Annual Report on Form 10-K for the fiscal year ended September 27, 2025</p>"
                   "<p>Acme Pumps Inc. (Exact name of registrant as specified in its charter)</p>"
                   "<table><tr><td>(in millions)</td><td>Fiscal 2025</td><td>Fiscal 2024</td></tr>" + rows + "</table>")
    rd = RunDir.at(root / "run")
    ingest([str(doc)], rd, IngestArgs(tokenizer=tiny_model), progress=False)
    sargs = SynthArgs(llm=f"local:{tiny_model}", kinds=["restate", "fact_qa"], fact_restatements=2)
    synth(rd, sargs, progress=False, embedder=embedder)
    make_fact_probes(rd, ProbesArgs(dev_share=0.3), sargs, seed=0)
    recipe = Recipe(seed=0, train=dict(method="lora", base_model=tiny_model, data=["restate", "fact_qa"], block_size=64,
                                       batch_size=4, max_steps=6, lr=1e-2, warmup_ratio=0.0, eval_every=1000,
                                       save_every=1000, replay_ratio=0.2, precision=precision),
                    eval=EvalArgs(base_model=tiny_model, general_paragraphs=2, general_questions=1, novel_passages=2,
                                  general_eval_items=4, general_eval_sets=["arc_easy"], short_answers=True,
                                  short_answer_tokens=4, batch_size=8, precision=precision))
    train(rd, recipe, progress=False)
    evaluate(rd, recipe, progress=False, embedder=embedder)
    return json.loads((rd.eval_dir / "metrics.json").read_text())


def test_the_same_run_twice_gives_the_same_metrics(tmp_path, tiny_model):
    from kbake.models import load_embedder

    embedder = load_embedder("default")
    a = one_run(tmp_path / "a", tiny_model, embedder)
    b = one_run(tmp_path / "b" / "elsewhere", tiny_model, embedder)
    assert a["models"][1]["vs_base"]["closed_book"]["n"] > 0
    assert scrub(a) == scrub(b), "\n".join(list(_diff(scrub(a), scrub(b)))[:40])


def _diff(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            yield from _diff(a.get(k), b.get(k), f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from _diff(x, y, f"{path}[{i}]")
    elif a != b:
        yield f"{path}: {str(a)[:80]} != {str(b)[:80]}"

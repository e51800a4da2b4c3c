"""Behaviour before and after a change: the same tiny end-to-end run (ingest an HTML 10-K page
with a table, restate + fact_qa synth with no LLM, fact probes, LoRA, eval) in two checkouts,
its metrics.json compared without times, provenance and keys only one side has.

    git worktree add /tmp/before REV
    PYTHONPATH=/tmp/before python benchmarks/before_after.py run /tmp/before /tmp/before.json --precision bf16
    PYTHONPATH=.           python benchmarks/before_after.py run .           /tmp/after.json  --precision bf16
    python benchmarks/before_after.py diff /tmp/before.json /tmp/after.json

`--eval-set KEY=VALUE` pins an eval option on one side, where a later checkout changed a default
the earlier one has no key for (e.g. `--eval-set retriever=lexical --eval-set chunk_headers=false`
on the after side reproduces the old retrieval).

`diff` also takes two runs' RUN/eval/metrics.json as they are (e.g. `make demo` twice with the
same seed), scrubbed the same way first.

The run uses tests/conftest.py and tests/test_determinism.py of the checkout it measures (the
tiny model is built there, in seconds); each side runs in its own process.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def run(root: Path, out: Path, precision: str, warmup: float, eval_sets: dict | None = None) -> None:
    sys.path.insert(0, str(root / "tests"))
    import conftest
    import test_determinism

    import kbake
    from kbake.config import EvalArgs, IngestArgs, ProbesArgs, Recipe, SynthArgs
    from kbake.eval import evaluate
    from kbake.ingest import ingest
    from kbake.ingest.readers import read_document
    from kbake.models import load_embedder
    from kbake.run import RunDir
    from kbake.sample import general_dir, sample_documents
    from kbake.synth import make_fact_probes, synth
    from kbake.train import train

    if Path(kbake.__file__).resolve().parents[1] != root.resolve():
        raise SystemExit(f"kbake is imported from {kbake.__file__}, not {root}: set PYTHONPATH={root}")
    tmp = Path(tempfile.mkdtemp())
    text = read_document(sample_documents()[0])
    general = [json.loads(line)["text"] for line in (general_dir() / "paragraphs.jsonl").read_text().splitlines()][:200]
    tiny = str(conftest.build_tiny_model(tmp / "tiny", text.split("\n\n") + general))
    embedder = load_embedder("default")
    # The document of tests/test_determinism.one_run, written out here rather than called: this script
    # must run against older checkouts, whose one_run takes no precision or warm-up.
    rows = "".join(f"<tr><td>Line item {i}</td><td>{100 + 7 * i}.0</td><td>{90 + 5 * i}.0</td></tr>" for i in range(10))
    doc = tmp / "acme-2025.html"
    doc.write_text("<p>Annual Report on Form 10-K for the fiscal year ended September 27, 2025</p>"
                   "<p>Acme Pumps Inc. (Exact name of registrant as specified in its charter)</p>"
                   "<table><tr><td>(in millions)</td><td>Fiscal 2025</td><td>Fiscal 2024</td></tr>" + rows + "</table>")
    rd = RunDir.at(tmp / "run")
    ingest([str(doc)], rd, IngestArgs(tokenizer=tiny), progress=False)
    sargs = SynthArgs(llm=f"local:{tiny}", kinds=["restate", "fact_qa"], fact_restatements=2)
    synth(rd, sargs, progress=False, embedder=embedder)
    make_fact_probes(rd, ProbesArgs(dev_share=0.3), sargs, seed=0)
    recipe = Recipe(seed=0, train=dict(method="lora", base_model=tiny, data=["restate", "fact_qa"], block_size=64,
                                       batch_size=4, max_steps=12, lr=1e-2, warmup_ratio=warmup, eval_every=1000,
                                       save_every=1000, replay_ratio=0.2, precision=precision),
                    eval=EvalArgs(base_model=tiny, general_paragraphs=2, general_questions=1, novel_passages=2,
                                  general_eval_items=4, general_eval_sets=["arc_easy"], short_answers=True,
                                  short_answer_tokens=4, batch_size=8, precision=precision,
                                  **(eval_sets or {})))
    train(rd, recipe, progress=False)
    evaluate(rd, recipe, progress=False, embedder=embedder)
    metrics = test_determinism.scrub(json.loads((rd.eval_dir / "metrics.json").read_text()))
    metrics.pop("provenance", None)
    losses = [json.loads(line)["loss"] for line in (rd.train_dir / "lora" / "metrics.jsonl").read_text().splitlines()]
    out.write_text(json.dumps({"metrics": metrics, "losses": losses}, sort_keys=True, indent=1))
    print(f"{out}: {len(losses)} steps, final loss {losses[-1]:.6f}")


def comparable(data: dict) -> dict:
    """Without times and provenance (tests/test_determinism.scrub): a metrics.json as a `run`
    output already is (scrubbing that again changes nothing)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import test_determinism

    data = test_determinism.scrub(data)
    data.pop("provenance", None)
    return data


def differences(a, b, path=""):
    """Paths whose values differ; a key only one side has is skipped (a change may add outputs)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) & set(b)):
            yield from differences(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from differences(x, y, f"{path}[{i}]")
    elif a != b:
        yield f"{path}: {str(a)[:60]} != {str(b)[:60]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("root", type=Path, help="the checkout to measure (on PYTHONPATH)")
    r.add_argument("out", type=Path)
    r.add_argument("--precision", default="bf16", choices=["fp32", "bf16"])
    r.add_argument("--warmup", type=float, default=0.0, help="train.warmup_ratio")
    r.add_argument("--eval-set", action="append", default=[], metavar="KEY=VALUE",
                   help="an eval option (YAML value), to pin on one side a default the other lacks "
                        "(e.g. chunk_headers=false after the key was added)")
    d = sub.add_parser("diff")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    a = ap.parse_args()
    if a.cmd == "run":
        from kbake.config import parse_sets  # the checkout's own `--set` reader (PYTHONPATH picks the checkout)

        run(a.root, a.out, a.precision, a.warmup, parse_sets(a.eval_set))
        return
    diff = list(differences(comparable(json.loads(a.a.read_text())), comparable(json.loads(a.b.read_text()))))
    print("\n".join(diff[:40]) or "identical (apart from times, provenance and keys one side lacks)")
    print(f"{len(diff)} values differ")


if __name__ == "__main__":
    main()

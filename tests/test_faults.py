"""Faults: SIGKILL at random points of ingest and train, then resume; a full disk."""

from __future__ import annotations

import json
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import torch
from conftest import env_with_tests_on_path

ENV = env_with_tests_on_path(TOKENIZERS_PARALLELISM="false")


def kbake(*args, **kw):
    return subprocess.run([sys.executable, "-m", "kbake.cli", *args], env=ENV, capture_output=True, text=True, **kw)


def kill_after(args: list[str], seconds: float) -> int:
    proc = subprocess.Popen([sys.executable, "-m", "kbake.cli", *args], env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return proc.returncode


def many_docs(folder: Path, n: int = 120) -> Path:
    folder.mkdir()
    rng = random.Random(0)
    words = "pump membrane foundry Muncie Aarhus backlog revenue segment water seal bearing plant".split()
    for i in range(n):
        (folder / f"doc{i:03d}.md").write_text(
            "\n\n".join(" ".join(rng.choice(words) for _ in range(60)) + f" Fact {i}." for _ in range(6)))
    return folder


def test_ingest_killed_then_resumed_equals_uninterrupted(tmp_path, tiny_model):
    docs = many_docs(tmp_path / "docs")
    common = ["--tokenizer", tiny_model, "-q", "--chunk-tokens", "64", "--overlap-tokens", "8"]
    assert kbake("ingest", str(docs), "--run", str(tmp_path / "ref"), *common).returncode == 0
    ref = pq.read_table(tmp_path / "ref" / "chunks.parquet").to_pylist()
    for delay in (random.Random(1).uniform(0.5, 4.0), 0.2):
        run = tmp_path / f"killed{delay:.1f}"
        kill_after(["ingest", str(docs), "--run", str(run), *common], delay)
        if (run / "chunks.parquet").exists():  # if it got that far, it is whole
            pq.read_table(run / "chunks.parquet")
        assert not [p for p in run.glob(".*.tmp")] if run.exists() else True
        r = kbake("ingest", str(docs), "--run", str(run), *common)
        assert r.returncode == 0, r.stderr
        assert pq.read_table(run / "chunks.parquet").to_pylist() == ref


def test_train_killed_then_resumed_matches_within_tolerance(tmp_path, tiny_model):
    from trainfix import small_run

    from kbake.models.trained import load_trained

    run_a, run_b = small_run(tmp_path / "a", tiny_model), small_run(tmp_path / "b", tiny_model)
    sets = ["--method", "full", "--base-model", tiny_model, "-q", "--set", "train.block_size=64",
            "--set", "train.batch_size=2", "--set", "train.max_steps=150", "--set", "train.save_every=30",
            "--set", "train.lr=1e-3", "--set", "train.eval_every=100"]
    assert kbake("train", "--run", str(run_a.root), *sets).returncode == 0
    # Kill once the second checkpoint exists, somewhere in the steps after it.
    proc = subprocess.Popen([sys.executable, "-m", "kbake.cli", "train", "--run", str(run_b.root), *sets], env=ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ckpt = run_b.train_dir / "full" / "checkpoints"
    deadline = time.time() + 240
    while not (ckpt / "step-60" / "DONE").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(random.Random(2).uniform(0.0, 0.3))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (run_b.train_dir / "full" / "model").exists(), "killed too late: the run had finished"
    r = kbake("train", "--run", str(run_b.root), *sets, "--resume")
    assert r.returncode == 0, r.stderr
    state = json.loads((run_b.train_dir / "full" / "trainer_state.json").read_text())
    assert state["resumed_from_step"] in (60, 90, 120) and state["global_step"] == 150
    a, _ = load_trained(run_a.train_dir / "full")
    b, _ = load_trained(run_b.train_dir / "full")
    for (k, v), (_, w) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.allclose(v, w, atol=1e-4), k


def test_full_disk_gives_a_clear_error_and_keeps_the_last_good_output(tmp_path, tiny_model):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Tidewell pumps are cast in Muncie.")
    run = tmp_path / "run"
    assert kbake("ingest", str(docs), "--run", str(run), "--tokenizer", tiny_model, "-q").returncode == 0
    before = (run / "chunks.parquet").read_bytes()
    many_docs(docs / "more", 60)

    def small_files():  # a file-size limit: any write past 2 KiB fails with EFBIG, as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    r = subprocess.run([sys.executable, "-m", "kbake.cli", "ingest", str(docs), "--run", str(run),
                        "--tokenizer", tiny_model, "-q"], env=ENV, capture_output=True, text=True,
                       preexec_fn=small_files)
    assert r.returncode == 1
    assert "error:" in r.stderr and "disk full or file size limit" in r.stderr and "Traceback" not in r.stderr
    assert (run / "chunks.parquet").read_bytes() == before
    assert not list(run.glob(".*.tmp"))

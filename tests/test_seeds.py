"""Seeds as an axis: `kbake train --seeds` writes NAME-sSEED models, eval pools each group."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kbake.eval.report import seed_rows
from kbake.eval.seeds import pool_seeds, seed_groups


def test_groups_need_two_seeds_and_sort_by_seed_number():
    names = ["lora-s10", "lora-s2", "full", "memory-s0", "lora-s0"]
    assert seed_groups(names) == {"lora": ["lora-s0", "lora-s2", "lora-s10"]}
    # a settings comparison also takes a setting trained on one seed
    assert seed_groups(names, min_seeds=1) == {"lora": ["lora-s0", "lora-s2", "lora-s10"], "memory": ["memory-s0"]}


def test_pooled_change_is_the_mean_over_seeds_with_each_seed_beside_it():
    """Base right on 10 of 40 test probes; seed 0 on 20, seed 1 on 24: pooled +30.0, per seed
    +25.0 and +35.0; the interval resamples seeds, so it is wider than either seed's alone."""
    n = 40
    right = {"base": 10, "lora-s0": 20, "lora-s1": 24}
    per_probe = [{"id": f"p{i}", "split": "test", "kind": "fact_qa",
                  "models": {m: {"closed": i < k, "rag": (i < 15) if m == "base" else None} for m, k in right.items()}}
                 for i in range(n)]
    per_probe.append({"id": "d", "split": "dev", "kind": "fact_qa",
                      "models": {m: {"closed": m != "base", "rag": False} for m in right}})
    ge = [{"id": f"g{i}", "models": {m: {"correct": i < 5} for m in right}} for i in range(10)]
    metrics = {"models": [{"name": m} for m in right], "per_probe": per_probe, "general_eval_items": ge}
    [g] = pool_seeds(metrics)
    assert g["group"] == "lora" and g["seeds"] == [0, 1] and g["models"] == ["lora-s0", "lora-s1"]
    c = g["changes"]["closed_book"]
    assert c["diff"] == pytest.approx(0.30) and c["per_seed"] == pytest.approx([0.25, 0.35]) and c["seeds"] == 2
    assert c["lo"] < 0.26 and c["hi"] > 0.34
    assert g["changes"]["closed_book_fact_qa"]["diff"] == pytest.approx(0.30)
    assert g["changes"]["closed_vs_base_rag"]["diff"] == pytest.approx((20 + 24) / 2 / 40 - 15 / 40)
    assert g["changes"]["dev_closed_book"]["diff"] == pytest.approx(1.0)
    assert g["changes"]["dev_closed_book_fact_qa"]["diff"] == pytest.approx(1.0)
    assert g["changes"]["general_eval"]["diff"] == 0.0
    header, rows = seed_rows({"seed_groups": [g]})
    first = rows[0]
    assert first[:3] == ["lora", "0, 1", "closed book, all test probes"] and first[3].startswith("+30.0 [")
    assert first[4] == "+25.0, +35.0"


def test_train_seeds_writes_one_model_per_seed_and_keeps_finished_ones(tmp_path, tiny_model):
    from trainfix import small_run

    run = small_run(tmp_path / "run", tiny_model)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"train:\n  method: lora\n  base_model: {tiny_model}\n  block_size: 64\n  batch_size: 4\n"
                      "  max_steps: 2\n  eval_every: 1000\n  save_every: 1000\n  data: [qa]\n")
    cmd = [sys.executable, "-m", "kbake.cli", "train", "--run", str(run.root), "--recipe", str(recipe), "--seeds", "0,1", "-q"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "'lora-s0'" in out.stdout and "'lora-s1'" in out.stdout
    seeds = [json.loads((run.train_dir / f"lora-s{s}" / "provenance.json").read_text())["seed"] for s in (0, 1)]
    assert seeds == [0, 1]
    stamp = (run.train_dir / "lora-s1" / "trainer_state.json").stat().st_mtime_ns
    again = subprocess.run(cmd[:-3] + ["--seeds", "1", "-q"], capture_output=True, text=True)
    assert again.returncode == 0 and (run.train_dir / "lora-s1" / "trainer_state.json").stat().st_mtime_ns == stamp


def test_fact_seeds_pools_models_evaluated_in_different_runs(tmp_path):
    """benchmarks/fact_seeds.py: seed 0 in one metrics.json, seed 1 in another (same probes and base)."""
    from pathlib import Path

    right = {"base": 10, "lora-s0": 20, "lora-s1": 24}
    files = []
    for seed in (0, 1):
        name = f"lora-s{seed}"
        pp = [{"id": f"p{i}", "split": "test", "kind": "fact_qa",
               "models": {m: {"closed": i < right[m], "rag": (i < 15) if m == "base" else None} for m in ("base", name)}}
              for i in range(40)]
        ge = [{"id": f"g{i}", "models": {m: {"correct": i < 5} for m in ("base", name)}} for i in range(10)]
        metrics = {"provenance": {"git_hash": "x", "seed": seed, "created": "today", "precision": "bf16"},
                   "models": [{"name": "base"}, {"name": name, "general": {"novel_ppl_change": 0.01}, "train_seconds": 60}],
                   "per_probe": pp, "general_eval_items": ge}
        files.append(tmp_path / f"m{seed}.json")
        files[-1].write_text(json.dumps(metrics))
    script = Path(__file__).parents[1] / "benchmarks" / "fact_seeds.py"
    out = subprocess.run([sys.executable, str(script), *map(str, files), "--models", "lora-s0,lora-s1",
                          "--out", str(tmp_path / "pooled.json")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    pooled = json.loads((tmp_path / "pooled.json").read_text())
    assert pooled["kinds"]["fact_qa"]["closed"]["diff"] == pytest.approx(0.30)
    assert pooled["kinds"]["fact_qa"]["closed"]["per_seed"] == pytest.approx([0.25, 0.35])
    assert pooled["kinds"]["fact_qa"]["base_rag"] == pytest.approx(15 / 40) and "+30.0 [" in out.stdout

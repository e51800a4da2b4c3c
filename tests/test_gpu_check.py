"""benchmarks/gpu_check.py in its CPU mode, so the GPU check cannot rot where no GPU is (issue 33)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import env_with_tests_on_path


def test_gpu_check_runs_weight_free_and_prints_every_row(tmp_path):
    script = Path(__file__).parents[1] / "benchmarks" / "gpu_check.py"
    out = subprocess.run([sys.executable, str(script), "--shape", "tiny", "--steps", "1", "--json", str(tmp_path / "r.json")],
                         capture_output=True, text=True, env=env_with_tests_on_path(), timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = {r["what"]: r for r in json.loads((tmp_path / "r.json").read_text())["rows"]}
    assert {"train: bare loop", "train: kbake full", "train: kbake lora", "eval: multiple-choice scoring",
            "generate: batch 1", "generate: batch 128", "peak memory"} <= set(rows)
    assert all(r["value"] > 0 for r in rows.values()) and "| train: kbake lora" in out.stdout

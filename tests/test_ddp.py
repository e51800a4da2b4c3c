"""The shared loop under torchrun with 2 CPU processes (gloo): each rank sees
different data, and both end with identical weights."""

import json
import subprocess
import sys
from pathlib import Path

from conftest import env_with_tests_on_path


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_gloo(tiny_model, tmp_path):
    env = env_with_tests_on_path(OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(_free_port()),
           str(Path(__file__).parent / "ddp_worker.py"), tiny_model, str(tmp_path)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in range(2)]
    assert [r["world"] for r in ranks] == [2, 2] and "gloo" in ranks[0]["backend"]
    a, b = set(ranks[0]["seen"]), set(ranks[1]["seen"])
    assert a and b and not (a & b)  # different blocks on each rank
    assert ranks[0]["weights"] == ranks[1]["weights"]  # gradients were all-reduced

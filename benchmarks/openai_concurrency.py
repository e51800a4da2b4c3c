"""openai backend against a local OpenAI-compatible server: does concurrency really work,
and do retries recover every item from a flaky server?

    .venv/bin/python benchmarks/openai_concurrency.py
"""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from openai_server import FakeOpenAI  # noqa: E402

from kbake.llm import CachedLLM, ChatRequest, ResponseCache, Sampling  # noqa: E402
from kbake.llm.openai_backend import OpenAIBackend  # noqa: E402


def reqs(n, tag):
    return [ChatRequest.chat(None, f"Q: <question> {tag} {i}", Sampling(16, 0.7, 0.95, 0)) for i in range(n)]


def llm(url, tmp, concurrency, **kw):
    return CachedLLM(OpenAIBackend("bench", base_url=url, concurrency=concurrency, backoff_base=0.05, **kw),
                     ResponseCache(Path(tmp) / f"c{time.time_ns()}.sqlite"))


with tempfile.TemporaryDirectory() as tmp:
    with FakeOpenAI(latency=0.1) as server:
        for conc in (1, 16):
            t = time.perf_counter()
            out = llm(server.base_url, tmp, conc).complete(reqs(64, f"c{conc}"))
            dt = time.perf_counter() - t
            print(f"64 calls, 100 ms latency, concurrency {conc:2d}: {dt:.2f}s wall, "
                  f"{sum(c is not None for c in out)}/64 answered, max in flight {server.max_in_flight}")
    with FakeOpenAI(error_rate=0.3, seed=1) as server:
        t = time.perf_counter()
        c = llm(server.base_url, tmp, 16, max_retries=10)
        out = c.complete(reqs(200, "err"))
        print(f"200 calls, 30% HTTP 500: {sum(x is not None for x in out)}/200 items after {c.backend.retries} retries "
              f"({server.requests} requests, {time.perf_counter() - t:.2f}s)")

"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It speaks the chat-completions wire protocol (JSON over HTTP, error bodies, 429 with
Retry-After) with scripted answers and scripted faults: latency, an error rate, rate
limiting, garbage, stalls. Bounded: it serves until the test stops it.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def echo_answer(messages: list[dict]) -> str:
    """Answers in the formats kbake's prompts ask for, built from the prompt itself."""
    user = messages[-1]["content"]
    if "Q: <question>" in user:
        return "Q: What does the excerpt describe?\nA: pumps\nQ: Where are they made?\nA: Muncie"
    if '[{"question"' in user:
        return json.dumps([{"question": "What does the excerpt describe?", "answer": "pumps"},
                           {"question": "Where are they made?", "answer": "Muncie"}])
    if "Question: <question>" in user:
        return "Question: Where are the pumps made?\nAnswer: Muncie\nWrong: Aarhus\nWrong: Osaka\nWrong: Chennai"
    return "This is a faithful rewrite of the text, keeping every name and date exactly as written in the source."


def _excerpts(user: str) -> list[str]:
    return [p.strip() for p in re.findall(r'"""\n(.*?)\n"""', user, flags=re.S)]


def _sentences(text: str) -> list[str]:
    return [x for x in re.split(r"(?<=[.!?])\s+", text.replace("\n", " ")) if len(x.split()) >= 5]


def grounded_answer(messages: list[dict]) -> str:
    """A well-behaved LLM stand-in: answers every kbake prompt in its format, from the excerpt,
    deterministically (so a resumed run must equal an uninterrupted one)."""
    user = messages[-1]["content"]
    parts = _excerpts(user)
    text = "\n\n".join(parts)
    sents = _sentences(text) or [text[:200]]
    if "Q: <question>" in user or '[{"question"' in user:
        if "figures" in user:  # numeric questions: sentences with numbers
            sents = [x for x in sents if re.search(r"\d", x)] or sents
        elif "why or how" in user:
            sents = sents[::-1]
        pairs = [(f"What does sentence {k + 1} say about {' '.join(s.split()[:3])}?", " ".join(s.split()[3:9]))
                 for k, s in enumerate(sents[:3])]
        if '[{"question"' in user:  # the JSON prompt (structured output)
            return json.dumps([{"question": q, "answer": a} for q, a in pairs])
        return "\n".join(f"Q: {q}\nA: {a}" for q, a in pairs)
    if "Question: <question>" in user:
        words = sents[0].split()
        nums = re.findall(r"\d[\d,.]*", text) or ["1"]
        return (f"Question: Which words follow '{' '.join(words[:3])}'?\nAnswer: {' '.join(words[3:7])}\n"
                f"Wrong: {nums[0]} apples\nWrong: the blue moon\nWrong: none of them")
    if '{"question": "<question>"}' in user:  # extract: a question for a given span
        sentence = re.search(r'^It is stated in this sentence: "(.+)"$', user, flags=re.M).group(1)
        return json.dumps({"question": f"What does the sentence beginning '{' '.join(sentence.split()[:2])}' state?"})
    if "Answer with a short phrase copied" in user:  # extract's round trip: quote the asked-about sentence
        start = re.search(r"beginning '(.+?)'", user)
        hit = next((s for s in sents if start and s.startswith(start.group(1))), sents[0])
        return hit
    if "A reader asks:" in user:  # focal: the sentences that share words with the question
        question = user.split("A reader asks:", 1)[1].split("\n")[0]
        words = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", question)}
        hits = [s for s in sents if words & {w.lower() for w in re.findall(r"[A-Za-z]{4,}", s)}] or sents[:2]
        return " ".join(hits[:4]) + " " + " ".join(sents[:2])
    if '"entities"' in user:
        caps = []
        for w in re.findall(r"\b[A-Z][a-zA-Z]{3,}\b", text):
            if w not in caps:
                caps.append(w)
        return json.dumps({"summary": sents[0], "entities": caps[:8]})
    if "relate to each other" in user:
        ents = user.rsplit("this document:", 1)[-1].split("\n")[0].strip(" .").split(", ")
        hits = [s for s in sents if any(e.lower() in s.lower() for e in ents)] or sents[:1]
        return " ".join(hits[:3]) + " " + " ".join(hits[:1])
    return " ".join(reversed(sents[:6]))


class FakeOpenAI:
    def __init__(self, answer: Callable[[list[dict]], str] = echo_answer, latency: float = 0.0,
                 error_rate: float = 0.0, rate_limit_first: int = 0, retry_after: float = 0.05,
                 garbage_rate: float = 0.0, stall_after: int | None = None, seed: int = 0):
        self.answer = answer
        self.latency = latency
        self.error_rate = error_rate
        self.rate_limit_first = rate_limit_first
        self.retry_after = retry_after
        self.garbage_rate = garbage_rate
        self.stall_after = stall_after
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.requests = 0
        self.served = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.seen_auth: list[str] = []
        self.response_formats: list = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _send(self, code: int, body: dict | str, headers: dict | None = None):
                data = (json.dumps(body) if isinstance(body, dict) else body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                req = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests += 1
                    n = server.requests
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server.seen_auth.append(self.headers.get("Authorization", ""))
                    server.response_formats.append(req.get("response_format"))
                    roll = server.rng.random()
                    roll2 = server.rng.random()
                try:
                    if server.stall_after is not None and n > server.stall_after:
                        time.sleep(30)
                        return
                    if server.latency:
                        time.sleep(server.latency)
                    if not self.path.endswith("/chat/completions"):
                        return self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                    if n <= server.rate_limit_first:
                        return self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                                          {"Retry-After": str(server.retry_after)})
                    if roll < server.error_rate:
                        return self._send(500, {"error": {"message": "internal error", "type": "server_error"}})
                    if roll2 < server.garbage_rate:
                        return self._send(200, {"id": "x", "object": "chat.completion", "created": 0,
                                                "model": req.get("model"), "choices": [
                                                    {"index": 0, "finish_reason": "stop",
                                                     "message": {"role": "assistant", "content": ""}}]})
                    text = server.answer(req["messages"])
                    with server.lock:
                        server.served += 1
                    self._send(200, {
                        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": int(time.time()),
                        "model": req.get("model"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": sum(len(m["content"].split()) for m in req["messages"]),
                                  "completion_tokens": len(text.split()),
                                  "total_tokens": 0},
                    })
                finally:
                    with server.lock:
                        server.in_flight -= 1

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default backlog of 5 would serialise concurrent clients

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

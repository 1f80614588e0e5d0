"""A fake OpenAI-compatible embeddings server on loopback, for the HTTP embedder's tests.

A real HTTP server (http.server in a thread), so the embedder's client, timeouts and retries
run as they do against Ollama or LM Studio. Vectors are deterministic bags of character
trigrams hashed into ``dim`` buckets: equal texts get equal vectors and texts sharing words
are closer than unrelated ones. ``fail_next`` queues status codes to answer before the
next good answer; ``dim`` may be changed between requests (a server that switched models).
"""

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def fake_vector(text: str, dim: int) -> list[float]:
    v = np.zeros(dim, dtype=np.float64)
    padded = f"  {text.lower()}  "
    for i in range(len(padded) - 2):
        h = int.from_bytes(hashlib.blake2b(padded[i:i + 3].encode(), digest_size=4).digest(), "little")
        v[h % dim] += 1.0
    return [float(x) for x in v]


@dataclass
class FakeServer:
    dim: int = 48
    fail_next: list[int] = field(default_factory=list)  # status codes to answer first, in order
    answer: Any = None  # a fixed body to answer instead of vectors (a broken server)
    batches: list[int] = field(default_factory=list)  # texts per good request
    requests: int = 0
    auth: list[str | None] = field(default_factory=list)
    url: str = ""


@contextmanager
def fake_embeddings_server(state: FakeServer | None = None) -> Iterator[FakeServer]:
    """Serve ``POST /v1/embeddings`` on 127.0.0.1 (a free port) while the block runs."""
    state = state or FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep the test output clean
            pass

        def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length) or b"{}")
            state.requests += 1
            state.auth.append(self.headers.get("Authorization"))
            if self.path.rstrip("/") != "/v1/embeddings":
                self._send(404, b'{"error": "not found"}')
                return
            if state.fail_next:
                self._send(state.fail_next.pop(0), b'{"error": "busy"}')
                return
            if state.answer is not None:
                body = state.answer if isinstance(state.answer, bytes) else json.dumps(state.answer).encode()
                self._send(200, body)
                return
            texts = payload["input"] if isinstance(payload["input"], list) else [payload["input"]]
            state.batches.append(len(texts))
            data = [{"object": "embedding", "index": i, "embedding": fake_vector(t, state.dim)}
                    for i, t in enumerate(texts)]
            data.reverse()  # the API allows any order; `index` says which is which
            self._send(200, json.dumps({"object": "list", "data": data, "model": payload.get("model")}).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()

"""OpenAIEngine's `json_schema` modes against a small fake chat server on loopback.

The fake speaks just enough of `/v1/chat/completions` to act as the servers memvault meets:
one that takes `response_format` with a JSON schema (llama.cpp, vLLM, LM Studio, Ollama),
one that knows only JSON mode, and one that refuses any `response_format`.
"""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memvault.engines import EngineError, structured
from memvault.engines.openai import OpenAIEngine
from memvault.stages.chunk_model import ChunkReply

REPLY = json.dumps({"chunks": [{"start": "m1", "end": "m2", "label": "Backup schedule"}]})


class FakeServer:
    """Records each request body; answers 400 for the `response_format` types it refuses."""

    def __init__(self, accepts: set[str]) -> None:
        self.accepts = accepts
        self.bodies: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                kind = (body.get("response_format") or {}).get("type")
                if kind is not None and kind not in server.accepts:
                    self._send(400, {"error": {"message": f"response_format type {kind!r} is not supported"}})
                    return
                self._send(200, {"choices": [{"message": {"role": "assistant", "content": REPLY}}],
                                 "usage": {"prompt_tokens": 40, "completion_tokens": 12}})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def kinds(self) -> list[str | None]:
        return [(b.get("response_format") or {}).get("type") for b in self.bodies]


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[FakeServer] = []

    def make(accepts: set[str]) -> FakeServer:
        server = FakeServer(accepts)
        server.thread.start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.httpd.shutdown()
        server.httpd.server_close()


def test_schema_goes_in_response_format(serve: Any) -> None:
    server = serve({"json_schema", "json_object"})
    with OpenAIEngine(server.url, retries=0) as engine:
        result = structured(engine, "sys", "split", ChunkReply, 64)
    assert result.value is not None and len(result.completions) == 1
    sent = server.bodies[0]["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "ChunkReply"
    assert sent["json_schema"]["schema"] == ChunkReply.model_json_schema()


def test_auto_falls_back_to_json_mode_then_plain_and_remembers(serve: Any) -> None:
    json_mode_only = serve({"json_object"})
    with OpenAIEngine(json_mode_only.url, retries=0) as engine:
        for _ in range(2):
            assert structured(engine, "sys", "split", ChunkReply, 64).value is not None
        assert engine.response_format == "json_object"
    assert json_mode_only.kinds() == ["json_schema", "json_object", "json_object"]

    refuses_all = serve(set())
    with OpenAIEngine(refuses_all.url, retries=0) as engine:
        for _ in range(2):
            assert structured(engine, "sys", "split", ChunkReply, 64).value is not None
        assert engine.response_format is None
    assert refuses_all.kinds() == ["json_schema", "json_object", None, None]


def test_on_fails_with_what_to_do_and_off_sends_nothing(serve: Any) -> None:
    server = serve(set())
    with OpenAIEngine(server.url, retries=0, json_schema="on") as engine:
        with pytest.raises(EngineError, match=r"rejected the request: 400.*json_schema = \"auto\""):
            engine.complete("sys", "split", max_tokens=8, json_schema=ChunkReply.model_json_schema())
    with OpenAIEngine(server.url, retries=0, json_schema="off") as engine:
        assert engine.complete("sys", "split", max_tokens=8, json_schema=ChunkReply.model_json_schema()).text == REPLY
    assert server.kinds() == ["json_schema", None]


def test_calls_without_a_schema_send_no_response_format(serve: Any) -> None:
    server = serve({"json_schema"})
    with OpenAIEngine(server.url, retries=0) as engine:
        engine.complete("sys", "hello", max_tokens=8)
    assert server.kinds() == [None]

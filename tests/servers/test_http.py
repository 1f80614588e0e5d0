"""`memvault serve`: a real uvicorn process on a free loopback port, and the bind guard."""

import subprocess
import time
import urllib.parse

import httpx
import pytest
from typer.testing import CliRunner

from memvault.cli import app
from memvault.servers.http import check_bind, host_of, is_loopback
from tests.helpers import MEMVAULT, free_port


def wait_healthy(base: str, proc, log, timeout_s: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"memvault serve exited early with {proc.returncode}: {log.read_text()}")
        try:
            response = httpx.get(f"{base}/health", timeout=5)
            return response.json() | {"_status": response.status_code}
        except httpx.TransportError:
            time.sleep(0.3)
    pytest.fail("memvault serve did not answer /health in time")


def test_http_api_answers_like_the_other_doors(doors_home, spawn, tmp_path) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    with log.open("w") as err:  # a file, not a pipe: a chatty server can never block on a full pipe
        proc = spawn([MEMVAULT, "--home", str(doors_home), "serve", "--port", str(port)],
                     stdout=subprocess.DEVNULL, stderr=err)
    base = f"http://127.0.0.1:{port}"
    health = wait_healthy(base, proc, log)
    assert health["_status"] == 200 and health["status"] == "ok" and health["nodes"] > 0

    with httpx.Client(base_url=base, timeout=120) as client:
        search = client.get("/search", params={"q": "pgBackRest retention", "limit": 5}).json()
        assert 0 < len(search["hits"]) <= 5 and {"id", "title", "path", "score"} <= set(search["hits"][0])
        assert "text" not in search["hits"][0]  # layer 1: no bodies

        recall = client.get("/recall", params={"q": "how long are postgres backups kept on the NAS"}).json()
        assert recall["block"].startswith("<memory-recall>") and "14 days" in recall["block"]
        assert all("explain" in h for h in recall["hits"])

        node = search["hits"][0]["id"]
        timeline = client.get(f"/timeline/{node}", params={"before": 1, "after": 1}).json()
        assert any(r["anchor"] and r["id"] == node for r in timeline)
        got = client.get("/get", params={"ids": node}).json()
        assert [r["id"] for r in got] == [node] and got[0]["text"]

        articles = client.get("/articles").json()
        assert articles and {"title", "path", "words"} <= set(articles[0])
        title = urllib.parse.quote(articles[0]["title"])
        assert "\n---\n# " in client.get(f"/articles/{title}").json()["text"]  # front matter, then the title
        toc = client.get(f"/articles/{title}/toc").json()
        assert toc and client.get(f"/articles/{title}/links").json().keys() >= {"in", "out"}
        section = urllib.parse.quote(toc[0]["title"])
        assert client.get(f"/articles/{title}/sections/{section}").json()["section"] == toc[0]["title"]

        missing = client.get("/articles/No_Such_Article")
        assert missing.status_code == 404 and "memvault articles" in missing.json()["error"]
        assert client.get("/timeline/ffffffffffffffffffffffffffffffff").status_code == 404
        bad = client.get("/search")
        assert bad.status_code == 400 and "missing query parameter q" in bad.json()["error"]
        assert client.get("/search", params={"q": "x", "limit": "many"}).status_code == 400
        assert client.get("/nope").status_code == 404 and "error" in client.get("/nope").json()
        # A page that reached the port through DNS rebinding carries a foreign Host header.
        rebound = client.get("/articles", headers={"Host": "evil.example:8765"})
        assert rebound.status_code == 421 and "loopback" in rebound.json()["error"]


def test_serve_refuses_a_non_loopback_bind_without_the_flag(home) -> None:
    result = CliRunner().invoke(app, ["--home", str(home), "serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "refusing to bind 0.0.0.0" in result.output and "--allow-remote" in result.output
    refused = CliRunner().invoke(app, ["--home", str(home), "serve", "--host", "0.0.0.0", "--allow-remote"])
    assert refused.exit_code == 2 and "without --token-file" in refused.output  # remote needs a token
    check_bind("0.0.0.0", allow_remote=True, token_file="hub.token")  # both flags let it through
    check_bind("127.0.0.1", allow_remote=False)


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.20", False), ("example.com", False), ("", False),
])
def test_loopback_detection(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_host_header_parsing() -> None:
    assert host_of("[::1]:8765") == "::1" and host_of("localhost:80") == "localhost"
    assert host_of("127.0.0.1") == "127.0.0.1" and host_of("Evil.Example:1") == "evil.example"
    assert host_of("::1") == "::1"


def test_guard_checks_host_always_and_the_token_when_set() -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from memvault.servers.auth import Guard

    def ok(request):  # noqa: ANN001, ANN202 - a bare endpoint
        return PlainTextResponse("ok")

    inner = Starlette(routes=[Route(p, ok, methods=["GET", "POST"]) for p in ("/health", "/", "/static/app.js", "/recall")])
    open_app = TestClient(Guard(inner, allowed_hosts=["mini.local"]), base_url="http://127.0.0.1")
    assert open_app.get("/recall").status_code == 200
    assert open_app.get("/recall", headers={"Host": "mini.local:8765"}).status_code == 200
    assert open_app.get("/recall", headers={"Host": "evil.example"}).status_code == 421
    token = "t" * 64
    client = TestClient(Guard(inner, allowed_hosts=["mini.local"], token=token), base_url="http://127.0.0.1")
    assert client.get("/health").status_code == 200 and client.get("/static/app.js").status_code == 200
    assert client.get("/").status_code == 200  # the page shell holds no memory; it asks for the token
    assert client.get("/recall").status_code == 401 and client.post("/").status_code == 401
    assert client.get("/recall", headers={"Authorization": "Bearer " + "x" * 64}).status_code == 401
    assert client.get("/recall", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert client.get("/health", headers={"Host": "evil.example"}).status_code == 421  # the Host check comes first

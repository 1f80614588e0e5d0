"""One memory for several machines: a hub home served by `memvault serve --token-file` and
client homes with a `[hub]` table, in one test, over real HTTP on loopback.

The client's capture hook is the real command (a child process, which starts the pusher
detached); the hub is a real server whose live drainer ingests and indexes what arrives.
"""

import base64
import http.server
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import MEMVAULT, SAMPLES, child_env, free_port, stop
from tests.servers.test_http import wait_healthy

pytestmark = pytest.mark.slow

SESSION = SAMPLES / "claude-code/-Users-sam-src-tidepool/3261b8ab-5e67-5336-a1ad-f00b145dadd3.jsonl"
SESSION_ID = "3261b8ab-5e67-5336-a1ad-f00b145dadd3"


class Hub:
    """A running hub: its home, URL, token, and the server process (restartable)."""

    def __init__(self, home: Path, tmp: Path, env: dict[str, str] | None = None) -> None:
        self.home, self.tmp = home, tmp
        self.token_file = tmp / "hub.token"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**child_env(), **(env or {})}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = self.tmp / "hub.log"
        with log.open("a") as err:
            self.proc = subprocess.Popen([MEMVAULT, "--home", str(self.home), "serve", "--port", str(self.port),
                                          "--token-file", str(self.token_file)],
                                         stdout=subprocess.DEVNULL, stderr=err, env=self.env)
        wait_healthy(self.url, self.proc, log)

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)

    @property
    def token(self) -> str:
        return self.token_file.read_text().strip()

    def client(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60,
                            headers={"Authorization": f"Bearer {token or self.token}"})


@pytest.fixture
def hub(home: Path, tmp_path: Path) -> Iterator[Hub]:
    running = Hub(home, tmp_path, {"MEMVAULT_HUB__MAX_CAPTURE_BYTES": "200000"})
    running.start()
    yield running
    running.stop()


def client_home(tmp: Path, name: str, hub: Hub, url: str | None = None) -> Path:
    """A client home: `.memvault`, a copy of the hub's token, and its `[hub]` table."""
    home = tmp / name
    (home / ".memvault").mkdir(parents=True)
    token = home / "hub.token"
    shutil.copy(hub.token_file, token)
    token.chmod(0o600)
    (home / "memvault.toml").write_text(f'[hub]\nurl = "{url or hub.url}"\ntoken_file = "{token}"\n'
                                        f'machine = "{name}"\n', encoding="utf-8")
    return home


def skewed(line: str, days: int) -> str:
    """A transcript line whose timestamp is moved by ``days`` (a machine whose clock jumped)."""
    from datetime import datetime, timedelta

    obj = json.loads(line)
    if isinstance(obj.get("timestamp"), str):
        when = datetime.fromisoformat(obj["timestamp"].replace("Z", "+00:00")) + timedelta(days=days)
        obj["timestamp"] = when.isoformat().replace("+00:00", "Z")
    return json.dumps(obj) + "\n"


def hook(home: Path, transcript: Path) -> None:
    """The Stop hook, as Claude Code runs it."""
    payload = json.dumps({"session_id": SESSION_ID, "transcript_path": str(transcript), "hook_event_name": "Stop"})
    proc = subprocess.run([MEMVAULT, "--home", str(home), "capture"], input=payload, text=True,
                          capture_output=True, timeout=60, env=child_env())
    assert proc.returncode == 0 and proc.stdout == ""


def wait_for(predicate: Any, what: str, timeout_s: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def conversations(hub: Hub) -> list[dict[str, Any]]:
    with hub.client() as c:
        listed: list[dict[str, Any]] = c.get("/conversations", params={"limit": 0}).json()
        return listed


def spool_empty(home: Path) -> bool:
    folder = home / ".memvault" / "spool"
    return not folder.is_dir() or not list(folder.glob("*.json"))


def test_round_trip_duplicates_skew_and_two_machines(hub: Hub, tmp_path: Path) -> None:
    laptop = client_home(tmp_path, "laptop", hub)
    transcript = tmp_path / "work" / SESSION.name
    transcript.parent.mkdir()
    lines = SESSION.read_text(encoding="utf-8").splitlines(keepends=True)
    # The machine's clock jumped back a day half-way through the session: order must not follow it.
    lines = lines[:6] + [skewed(line, days=-1) for line in lines[6:]]
    transcript.write_text("".join(lines[:6]), encoding="utf-8")

    hook(laptop, transcript)
    found = wait_for(lambda: conversations(hub), "the capture to be ingested on the hub")
    assert len(found) == 1 and found[0]["source"] == "claude-code"
    with hub.client() as c:
        assert c.post("/v1/search", json={"query": "tidepool changelog release"}).json()["hits"]

    # The rest of the session: only the new bytes travel, and the hub's copy is the laptop's file.
    transcript.write_text("".join(lines), encoding="utf-8")
    hook(laptop, transcript)
    wait_for(lambda: spool_empty(laptop), "the laptop's spool to be pushed")
    stored = list((hub.home / "hub" / "laptop" / "claude-code").rglob(SESSION.name))
    assert len(stored) == 1 and stored[0].read_bytes() == transcript.read_bytes()
    acked = json.loads((laptop / ".memvault" / "hub-acked.json").read_text())
    assert acked[str(transcript)]["offset"] == transcript.stat().st_size
    wait_for(lambda: conversations(hub)[0]["messages"] >= 10, "the appended turns")
    total = conversations(hub)[0]["messages"]

    # Sending the same bytes again stores nothing.
    with hub.client() as c:
        again = c.post("/v1/capture", json={"machine": "laptop", "source": "claude-code", "path": str(transcript),
                                             "session_id": SESSION_ID, "offset": 0,
                                             "data": base64.b64encode(transcript.read_bytes()).decode()}).json()
        assert again["stored"] == 0 and again["have"] == transcript.stat().st_size

    # A second laptop with the same session file: stored once, attributed to both machines.
    other = client_home(tmp_path, "desk", hub)
    hook(other, transcript)
    wait_for(lambda: spool_empty(other), "the second machine's push")
    with hub.client() as c:
        wait_for(lambda: c.get("/v1/status").json()["spool"] == 0, "the hub's drain")
        status = c.get("/v1/status").json()
    assert status["sessions_from_several_machines"] == 1 and set(status["machines"]) == {"laptop", "desk"}
    sessions = json.loads((hub.home / ".memvault" / "hub-sessions.json").read_text())
    assert sorted(sessions[f"claude-code:{SESSION_ID}"]["machines"]) == ["desk", "laptop"]
    listed = conversations(hub)
    assert len(listed) == 1 and listed[0]["messages"] == total

    # Clock skew: the order is the transcript's, whatever the timestamps say.
    with hub.client() as c:
        shown = c.get(f"/conversations/{listed[0]['ref']}").json()["messages"]
    users = [json.loads(line)["message"]["content"] for line in lines if '"type":"user"' in line.replace(" ", "")]
    users = [u for u in users if isinstance(u, str)]
    where = [next(i for i, m in enumerate(shown) if m["text"].startswith(u[:40])) for u in users]
    assert len(where) >= 2 and where == sorted(where)
    assert shown[where[-1]]["timestamp"] < shown[where[0]]["timestamp"]  # later in the file, earlier on the clock


def test_token_cap_and_client_commands(hub: Hub, tmp_path: Path) -> None:
    body = {"machine": "laptop", "source": "claude-code", "path": "/x/s.jsonl", "offset": 0,
            "data": base64.b64encode(b'{"a": 1}\n').decode()}
    assert httpx.post(f"{hub.url}/v1/capture", json=body).status_code == 401
    with hub.client("0" * 64) as wrong:
        assert wrong.post("/v1/capture", json=body).status_code == 401
        assert wrong.post("/v1/recall", json={"query": "x"}).status_code == 401
    assert not (hub.home / "hub" / "laptop").exists() and spool_empty(hub.home)
    assert httpx.get(f"{hub.url}/health").status_code in (200, 503)  # open without a token
    assert httpx.get(f"{hub.url}/health", headers={"Host": "evil.example"}).status_code == 421

    big = {**body, "data": base64.b64encode(b"x" * 300_000).decode()}
    with hub.client() as c:
        refused = c.post("/v1/capture", json=big)
        assert refused.status_code == 413 and refused.json()["max_bytes"] == 200_000
        ahead = c.post("/v1/capture", json={**body, "offset": 50})
        assert ahead.status_code == 409 and ahead.json()["have"] == 0

    # The client cuts a transcript larger than the cap into parts the hub accepts.
    laptop = client_home(tmp_path, "laptop", hub)
    transcript = tmp_path / SESSION.name
    transcript.write_bytes(SESSION.read_bytes() * 25)  # ~250 kB, past the 200 kB cap
    hook(laptop, transcript)
    wait_for(lambda: spool_empty(laptop), "the push in parts")
    stored = next((hub.home / "hub" / "laptop").rglob(SESSION.name))
    assert stored.read_bytes() == transcript.read_bytes()

    # recall, search and note on the client ask the hub.
    wait_for(lambda: conversations(hub), "the hub's ingest")
    env = child_env()
    note = subprocess.run([MEMVAULT, "--home", str(laptop), "note", "the kiln fires at 1240 degrees", "--json"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert note.returncode == 0, note.stderr
    assert json.loads(note.stdout)["cite"].startswith("conv:")
    found = subprocess.run([MEMVAULT, "--home", str(laptop), "search", "kiln degrees", "--json"],
                           capture_output=True, text=True, timeout=120, env=env)
    assert found.returncode == 0 and json.loads(found.stdout)["hits"], found.stderr
    recalled = subprocess.run([MEMVAULT, "--home", str(laptop), "recall", "kiln temperature", "--json"],
                              capture_output=True, text=True, timeout=120, env=env)
    assert recalled.returncode == 0 and "1240" in json.loads(recalled.stdout)["block"]
    brief = subprocess.run([MEMVAULT, "--home", str(laptop), "index-brief"], capture_output=True, text=True,
                           timeout=120, env=env)
    assert brief.returncode == 0 and brief.stdout.startswith("<memvault-index>"), brief.stderr


def test_spool_while_the_hub_is_down_then_drain(hub: Hub, tmp_path: Path) -> None:
    laptop = client_home(tmp_path, "laptop", hub)
    transcript = tmp_path / SESSION.name
    shutil.copy(SESSION, transcript)
    hub.stop()

    hook(laptop, transcript)  # returns at once; the pusher finds no hub and keeps the entry
    log = laptop / ".memvault" / "live.log"
    wait_for(lambda: log.exists() and "unreachable" in log.read_text(), "the pusher's line in live.log")
    assert not spool_empty(laptop)
    assert len([ln for ln in log.read_text().splitlines() if "hub push" in ln]) == 1

    hub.start()
    drained = subprocess.run([MEMVAULT, "--home", str(laptop), "drain", "--json"], capture_output=True, text=True,
                             timeout=120, env=child_env())
    assert drained.returncode == 0, drained.stdout + drained.stderr
    assert json.loads(drained.stdout)["pushed"] == 1 and spool_empty(laptop)
    listed = wait_for(lambda: conversations(hub), "the drained capture on the hub")
    # A second drain and a second hook send nothing new: no duplicates.
    hook(laptop, transcript)
    wait_for(lambda: spool_empty(laptop), "the second push")
    assert len(conversations(hub)) == 1 and conversations(hub)[0]["messages"] == listed[0]["messages"]


class _Garbage(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the standard library's name
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html>Welcome to the hotel wifi</html>")

    def log_message(self, *args: Any) -> None:
        pass


def test_a_hub_that_answers_garbage_leaves_the_spool(hub: Hub, tmp_path: Path) -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Garbage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        laptop = client_home(tmp_path, "laptop", hub, url=f"http://127.0.0.1:{server.server_port}")
        transcript = tmp_path / SESSION.name
        shutil.copy(SESSION, transcript)
        hook(laptop, transcript)
        log = laptop / ".memvault" / "live.log"
        wait_for(lambda: log.exists() and "hub push" in log.read_text(), "the pusher's line")
        assert "not memvault's JSON" in log.read_text() and not spool_empty(laptop)
        assert not (laptop / ".memvault" / "hub-acked.json").exists()
    finally:
        server.shutdown()


def test_a_recall_from_a_hub_before_dates_still_reads() -> None:
    # A hub not yet updated answers hits without `date`: the client reads and shows them.
    from memvault.ops.hub_remote import parse
    from memvault.ops.results import Recall
    from memvault.recall.block import render_block

    hit = {"id": "n1", "path": "/conv:ab12cd34/e1/m2", "title": "Backups", "kind": "message", "score": 1.0,
           "text": "assistant: keep 14 days", "cite": "conv:ab12cd34", "project": None, "source": "claude_code",
           "explain": {}}
    got = parse(Recall, {"query": "q", "block": "", "hits": [hit]}, "recall")
    assert got["hits"][0] == hit
    assert "[1] Backups — /conv:ab12cd34/e1/m2 (cite: conv:ab12cd34)\nassistant: keep 14 days" in render_block("q", got["hits"])

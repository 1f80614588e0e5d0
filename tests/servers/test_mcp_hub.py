"""`memvault mcp` on a hub client: the same tools, answered by the hub over real HTTP on loopback.

The hub serves a populated home (`memvault serve --token-file`); the client home has only its
`[hub]` table. One MCP session runs on the hub's home directly and one on the client, both
through the SDK's stdio client: every read tool must give the client what it gives locally.
"""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.helpers import MEMVAULT, child_env
from tests.servers.test_hub import Hub, client_home, wait_for
from tests.servers.test_mcp import conversation, ok, text_of

pytestmark = pytest.mark.slow

SAME = ("search", "list", "toc", "links", "section", "timeline", "get", "article", "scoped", "recall_small")


@pytest.fixture
def hub(demo_copy: Path, tmp_path: Path) -> Iterator[Hub]:
    running = Hub(demo_copy, tmp_path)
    running.start()
    yield running
    running.stop()


def session(home: Path, errlog: Path, then: Any = None) -> dict[str, Any]:
    """`conversation` over `memvault --home HOME mcp`, then ``then(session, out)`` if given."""

    async def run() -> dict[str, Any]:
        params = StdioServerParameters(command=MEMVAULT, args=["--home", str(home), "mcp"], env=child_env())
        with anyio.fail_after(240), errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as s:
                out = await conversation(s)
                if then is not None:
                    await then(s, out)
                return out

    result: dict[str, Any] = anyio.run(run)
    return result


def steady(value: Any) -> Any:
    """``value`` with every ``score`` rounded to four decimals."""
    if isinstance(value, dict):
        return {k: round(v, 4) if k == "score" and isinstance(v, float) else steady(v) for k, v in value.items()}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


def test_the_client_mcp_server_answers_from_the_hub(hub: Hub, tmp_path: Path) -> None:
    local = session(hub.home, tmp_path / "local.log")
    laptop = client_home(tmp_path, "laptop", hub)
    with (laptop / "memvault.toml").open("a", encoding="utf-8") as fh:
        fh.write("\n[mcp]\nallow_write = true\n")
    assert not (laptop / ".memvault" / "index").exists()  # nothing to search here: the hub answers

    async def then(s: ClientSession, out: dict[str, Any]) -> None:
        out["remembered"] = await s.call_tool("remember", {"text": "the glaze kiln vents to the north window",
                                                           "title": "Kiln venting"})
        out["recall_note"] = await s.call_tool("recall", {"query": "where does the glaze kiln vent"})
        hub.stop()  # the hub goes away mid-session
        out["down_remember"] = await s.call_tool("remember", {"text": "the wheel needs a new belt"})
        out["down_search"] = await s.call_tool("search", {"query": "kiln"})

    remote = session(laptop, tmp_path / "client.log", then)

    # Every read tool: the client gets what the hub's own server gives (text and structure). Scores
    # hold a recency prior computed from the clock, so two runs a minute apart may differ in the
    # sixth decimal: they are compared to four.
    for key in SAME:
        assert steady(remote[key].structured_content) == steady(local[key].structured_content), key
        if key not in ("search", "scoped"):  # the text of these two is the JSON with the scores
            assert ok(remote[key]) == ok(local[key]), key
    assert "9414750" in ok(remote["recall"])
    assert remote["resource"].contents[0].text == local["resource"].contents[0].text
    # Errors come back as tool errors with the hub's message (what to do included).
    assert remote["missing"].is_error and "memvault articles" in text_of(remote["missing"])
    assert remote["bad_args"].is_error and remote["empty"].is_error

    # remember on a client stores the note on the hub, where it is recalled at once.
    assert not remote["remember"].is_error, text_of(remote["remember"])
    stored = remote["remembered"].structured_content
    assert not remote["remembered"].is_error and stored["cite"].startswith("conv:") and not stored["queued"]
    assert "north window" in ok(remote["recall_note"])

    # The hub away: a note is spooled for `memvault drain`, a read says the hub is unreachable.
    assert remote["down_remember"].structured_content["queued"] is True
    assert remote["down_search"].is_error and "unreachable" in text_of(remote["down_search"])
    spooled = list((laptop / ".memvault" / "spool").glob("*.json"))
    assert any("new belt" in p.read_text() for p in spooled)

    # Back up: the drain sends the spooled note, and the hub recalls it.
    hub.start()
    drained = subprocess.run([MEMVAULT, "--home", str(laptop), "drain"], capture_output=True, text=True,
                             timeout=120, env=child_env())
    assert drained.returncode == 0, drained.stderr
    with hub.client() as c:
        wait_for(lambda: "new belt" in c.post("/v1/recall", json={"query": "wheel belt"}).json()["block"],
                 "the drained note on the hub")

    # The MCP entry agent-setup writes on a client now answers: doctor says so.
    codex, none = tmp_path / ".codex", tmp_path / "none"
    done = subprocess.run([MEMVAULT, "--home", str(laptop), "agent-setup", "codex", "--codex-dir", str(codex), "--apply"],
                          capture_output=True, text=True, timeout=120, env=child_env())
    assert done.returncode == 0, done.stderr
    doctor = subprocess.run([MEMVAULT, "--home", str(laptop), "doctor", "--json", "--claude-dir", str(none),
                             "--codex-dir", str(codex), "--opencode-dir", str(none)],
                            capture_output=True, text=True, timeout=300, env=child_env())
    checks = {(c["area"], c["item"]): c for c in json.loads(doctor.stdout)["checks"]}
    assert checks[("agents", "codex MCP server")]["state"] == "ok", checks
    assert checks[("hub", hub.url)]["state"] == "ok", checks


def test_the_reader_routes_need_the_token(hub: Hub) -> None:
    import httpx

    for path, body in (("/v1/timeline", {"id": "x"}), ("/v1/get", {"ids": ["x"]}), ("/v1/article", {"title": "x"}),
                       ("/v1/article-section", {"title": "x", "section": "y"}), ("/v1/article-toc", {"title": "x"}),
                       ("/v1/article-links", {"title": "x"})):
        assert httpx.post(f"{hub.url}{path}", json=body).status_code == 401, path
    assert httpx.get(f"{hub.url}/v1/articles").status_code == 401
    with hub.client() as c:
        assert c.post("/v1/get", json={"ids": []}).status_code == 400
        assert c.post("/v1/timeline", json={"id": "x", "before": 99}).status_code == 400
        assert c.post("/v1/article", json={"title": "No Such Article"}).status_code == 404
        assert c.post("/v1/get", json={"ids": ["no-such-node"]}).status_code == 404

"""Prompt-time recall, notes, scoped recall and honest answers, on copies of the demo home."""

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault.cli import app
from memvault.hygiene.noise import strip_memory_blocks
from memvault.live.prompt_gate import GateParams
from tests.live.test_live_capture import MEMVAULT, child_env, settings_of

runner = CliRunner()
RELATED = "which NOAA station does tidepool use by default?"
UNRELATED = "write a haiku about autumn leaves"
GATE = GateParams()


def prompt_hook(home: Path, prompt: str, cwd: str = "/tmp") -> subprocess.CompletedProcess:
    return subprocess.run([MEMVAULT, "--home", str(home), "prompt-recall"], capture_output=True, text=True,
                          input=json.dumps({"session_id": "s", "hook_event_name": "UserPromptSubmit",
                                            "prompt": prompt, "cwd": cwd, "transcript_path": "/x.jsonl"}),
                          timeout=240, env=child_env())


def test_prompt_recall_prints_nothing_unrelated_and_a_block_related(demo_copy: Path) -> None:
    quiet = prompt_hook(demo_copy, UNRELATED)
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stdout
    loud = prompt_hook(demo_copy, RELATED)
    assert loud.returncode == 0, loud.stderr
    block = loud.stdout.strip()
    assert block.startswith("<memory-recall>") and block.endswith("</memory-recall>") and "9414750" in block
    assert len(block) <= 1_500 * 4  # the token budget, at four characters a token
    assert strip_memory_blocks(f"before {block} after") == "before after"
    # Bad input is no prompt: nothing printed, exit 0.
    bad = subprocess.run([MEMVAULT, "--home", str(demo_copy), "prompt-recall"], input="{oops", capture_output=True,
                         text=True, timeout=60, env=child_env())
    assert bad.returncode == 0 and bad.stdout == ""


def test_explain_names_each_signal_and_the_threshold(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_HOOKD", "off")  # answered in this process, as without a daemon
    loud = runner.invoke(app, ["--home", str(demo_copy), "prompt-recall", "--explain", RELATED])
    assert loud.exit_code == 0, loud.output
    assert loud.output.startswith("injected: yes") and "<memory-recall>" in loud.output
    for said in ("content words:", "IDF mass", "unit cosine", "top cosine", "coverage", "threshold 1.279: enough"):
        assert said in loud.output, said
    quiet = runner.invoke(app, ["--home", str(demo_copy), "prompt-recall", "--explain", UNRELATED])
    assert quiet.output.startswith("injected: no") and "threshold 1.279: not enough" in quiet.output
    assert "(nothing injected)" in quiet.output and "{" not in quiet.output  # sentences, not a dict
    trivial = runner.invoke(app, ["--home", str(demo_copy), "prompt-recall", "--explain", "thanks!"])
    assert trivial.output.startswith("injected: no") and "trivial prompt" in trivial.output


def test_prompt_recall_through_a_running_serve(demo_copy: Path, spawn) -> None:
    from tests.helpers import free_port

    port = free_port()
    # A generous timeout (the server publishes it to the hook): a loaded test machine is slow,
    # and this test is about who answers, not how fast.
    spawn([MEMVAULT, "--home", str(demo_copy), "serve", "--port", str(port)], stdout=subprocess.DEVNULL,
          stderr=subprocess.DEVNULL, env={**child_env(), "MEMVAULT_LIVE__PROMPT_TIMEOUT_S": "60"})
    deadline = time.monotonic() + 240
    while True:  # warm the server (its model loads on the first query)
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/prompt-recall?q=warm", timeout=60).read()
            break
        except OSError:
            assert time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.3)
    info = json.loads((demo_copy / ".memvault" / "serve.json").read_text())
    assert info["port"] == port and info["drains"] is True
    loud = prompt_hook(demo_copy, RELATED)
    assert "9414750" in loud.stdout
    assert prompt_hook(demo_copy, UNRELATED).stdout == ""
    log = demo_copy / ".memvault" / "live.log"
    assert not log.exists() or "did not answer" not in log.read_text()  # answered by serve, not in process


def test_the_hook_output_is_stripped_when_its_transcript_is_ingested(demo_copy: Path, tmp_path: Path) -> None:
    from stores.ledger import Ledger
    from memvault.stages.ingest import ingest_roots

    block = prompt_hook(demo_copy, RELATED).stdout.strip()
    assert block
    # Claude Code records a UserPromptSubmit hook's output in the transcript beside the prompt.
    lines = [{"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "hook-echo", "cwd": "/tmp/p",
              "timestamp": "2026-12-01T10:00:00.000Z",
              "message": {"role": "user", "content": f"{block}\n\nWhich station again?"}},
             {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "hook-echo", "cwd": "/tmp/p",
              "timestamp": "2026-12-01T10:00:05.000Z",
              "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Alameda."}]}}]
    path = tmp_path / "hook-echo.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    settings = settings_of(demo_copy)
    with Ledger.open(settings) as ledger:
        ingest_roots(ledger, settings, [("claude-code", path)])
        echo = [c for c in ledger.conversation_ids() if (row := ledger.conversation(c)) and row.native_id == "hook-echo"]
        texts = [m.text for c in echo for m in ledger.active_thread(c)]
    assert texts and all("memory-recall" not in t and "9414750" not in t for t in texts)
    assert any("Which station again?" in t for t in texts)


def test_a_note_is_recallable_at_once_and_cited_in_an_article_after_the_next_run(demo_copy: Path, embedder,
                                                                                   prefect) -> None:
    from memvault.ops.memory import MemoryService
    from memvault.ops.note import add_note
    from tests.helpers import run_flow

    text = ("Sourdough starter Bubbles: from now on feed it 1:4:4 with rye flour, at 24 °C, twice a day; "
            "the sluggish starter recovered after the switch to rye.")
    result = runner.invoke(app, ["--home", str(demo_copy), "note", text, "--title", "Bubbles feeding change",
                                 "--project", "bakelog", "--json"])
    assert result.exit_code == 0, result.output
    note = json.loads(result.output)
    assert note["queued"] is False and note["cite"].startswith("conv:")
    service = MemoryService(settings_of(demo_copy), embedder)
    hits = service.recall("how do I feed Bubbles now, with rye?")["hits"]
    assert any(h["cite"] == note["cite"] and "1:4:4" in h["text"] for h in hits)
    assert all(h["source"] == "note" for h in service.recall("rye feeding", scope=_scope(source="note"))["hits"])
    # A secret in a note is redacted like any transcript's.
    secret = add_note(settings_of(demo_copy), "the NAS token is ghp_" + "a1B2" * 9, embedder=embedder)
    assert secret["redactions"]
    assert "a1B2a1B2" not in json.dumps(service.recall("NAS token", scope=_scope(source="note")))

    import os

    os.environ["MEMVAULT_ENGINE"] = "none"
    report = run_flow(demo_copy)
    assert report["status"] in ("completed", "ok", "success") or report.get("stages"), report
    articles = {p.name: p.read_text() for p in (demo_copy / "articles").glob("*.md")}
    cited = [name for name, body in articles.items() if note["cite"] in body]
    assert cited, f"{note['cite']} is cited by no article: {sorted(articles)}"


def _scope(**kw):
    from memvault.recall.scope import Scope

    return Scope.of(**kw)


def test_scoped_recall_returns_only_what_was_asked(demo_copy: Path, embedder) -> None:
    from memvault.ops.memory import MemoryService

    service = MemoryService(settings_of(demo_copy), embedder)
    query = "backups, releases and trips"
    hits = service.recall(query, scope=_scope(project="tidepool"))["hits"]
    assert hits and all((h["project"] or "").endswith("/tidepool") for h in hits)
    everything = service.recall(query)["hits"]
    assert {h["project"] for h in everything} - {h["project"] for h in hits}  # unscoped reaches further
    chat = service.search(query, 20, scope=_scope(source="chatgpt"))
    rows = service.get([h["id"] for h in chat])
    assert rows and all(r["source"] == "chatgpt" for r in rows)
    autumn = service.search("sourdough", 20, scope=_scope(since="2026-11-01", until="2026-11-30"))
    dates = [r["doc_date"] for r in service.get([h["id"] for h in autumn])]
    assert dates and all(d.startswith("2026-11") for d in dates)
    # The CLI and the HTTP API take the same filters.
    out = runner.invoke(app, ["--home", str(demo_copy), "search", "release", "--project", "tidepool", "--json"])
    assert out.exit_code == 0, out.output
    assert all(h["path"].startswith("/conv:") for h in json.loads(out.output)["hits"])
    bad = runner.invoke(app, ["--home", str(demo_copy), "recall", "x", "--since", "last week"])
    assert bad.exit_code == 2 and "YYYY-MM-DD" in bad.output


def test_the_project_a_recall_is_made_from_is_an_explained_prior(demo_copy: Path, embedder) -> None:
    from memvault.ops.memory import MemoryService

    service = MemoryService(settings_of(demo_copy), embedder)
    inside = service.recall("what did we decide?", cwd="/Users/sam/src/homelab/scripts")["hits"]
    outside = service.recall("what did we decide?", cwd="/somewhere/else")["hits"]
    boosted = [h for h in inside if h["explain"]["project_prior"] > 0]
    assert boosted and all(h["project"] == "/Users/sam/src/homelab" for h in boosted)
    assert all(h["explain"]["project_prior"] == 0 for h in outside)
    share = lambda hits: sum(h["project"] == "/Users/sam/src/homelab" for h in hits)  # noqa: E731
    assert share(inside) >= share(outside)
    off = MemoryService(settings_of(demo_copy, live={"project_boost": 0}), embedder)
    assert all(h["explain"]["project_prior"] == 0
               for h in off.recall("what did we decide?", cwd="/Users/sam/src/homelab")["hits"])


def test_honest_answers_at_the_door(demo_copy: Path) -> None:
    for cmd in (["recall", "   "], ["search", ""]):
        out = runner.invoke(app, ["--home", str(demo_copy), *cmd])
        assert out.exit_code == 2 and "empty" in out.output, cmd
    out = runner.invoke(app, ["--home", str(demo_copy), "recall", "", "--json"])
    assert out.exit_code == 2 and json.loads(out.output)["type"] == "UsageError"
    out = runner.invoke(app, ["--home", str(demo_copy), "get", "feedface" * 4, "0badc0de" * 4])
    assert out.exit_code == 1 and "feedface" * 4 in out.output and "0badc0de" * 4 in out.output
    out = runner.invoke(app, ["--home", str(demo_copy), "note", "  "])
    assert out.exit_code == 2


def test_an_index_without_the_scope_columns_is_refused(tmp_path: Path, embedder) -> None:
    import lancedb
    import pyarrow as pa

    from memvault.errors import IndexMismatchError
    from stores.nodes import META_SCHEMA, NodeIndex, node_schema

    uri = str(tmp_path / "old.lance")
    db = lancedb.connect(uri)
    old = pa.schema([f for f in node_schema(embedder.dim) if f.name not in ("project", "source", "doc_date")])
    db.create_table("nodes", schema=old)
    db.create_table("meta", schema=META_SCHEMA).add([{"key": "embedding_model", "value": embedder.name}])
    with pytest.raises(IndexMismatchError, match="memvault reindex"):
        NodeIndex(uri, embedder.name, embedder.dim, create=False)


@pytest.fixture
def spawn():
    from tests.helpers import stop

    procs: list[subprocess.Popen] = []

    def start(args: list[str], **kwargs) -> subprocess.Popen:
        procs.append(subprocess.Popen(args, **{"env": child_env(), **kwargs}))
        return procs[-1]

    yield start
    for proc in procs:
        stop(proc)


def test_mcp_remember_is_refused_until_allowed(demo_copy: Path, embedder) -> None:
    import anyio

    from memvault.ops.memory import MemoryService
    from memvault.servers import SharedService
    from memvault.servers.mcp import build_server

    from mcp.server.mcpserver.exceptions import ToolError

    def server(allow: bool):
        return build_server(SharedService(MemoryService(settings_of(demo_copy, mcp={"allow_write": allow}), embedder)))

    args = {"text": "The garage door code changed to 7781.", "project": "homelab"}
    with pytest.raises(ToolError, match="allow_write"):
        anyio.run(server(False).call_tool, "remember", args)
    service = MemoryService(settings_of(demo_copy), embedder)
    assert not any("7781" in h["text"] for h in service.recall("garage door code")["hits"])
    allowed = anyio.run(server(True).call_tool, "remember", args)
    assert not allowed.is_error and allowed.structured_content["cite"].startswith("conv:")
    assert strip_memory_blocks(allowed.content[0].text) == ""  # the confirmation is marked like every result
    hits = service.recall("garage door code")["hits"]
    assert any("7781" in h["text"] and h["cite"] == allowed.structured_content["cite"] for h in hits)


def test_http_takes_the_scope_and_answers_the_prompt_hook(demo_copy: Path, embedder) -> None:
    from starlette.testclient import TestClient

    from memvault.ops.memory import MemoryService
    from memvault.servers import SharedService
    from memvault.servers.http import build_app

    client = TestClient(build_app(SharedService(MemoryService(settings_of(demo_copy), embedder))),
                        base_url="http://127.0.0.1")
    hits = client.get("/search", params={"q": "release", "project": "tidepool"}).json()["hits"]
    assert hits and all(h["project"].endswith("/tidepool") for h in hits)
    rec = client.get("/recall", params={"q": "backup", "source": "chatgpt", "cwd": "/Users/sam/src/homelab"}).json()
    assert rec["hits"] and all(h["source"] == "chatgpt" for h in rec["hits"])
    assert client.get("/recall", params={"q": "x", "since": "soon"}).status_code == 400
    assert client.get("/recall", params={"q": "  "}).status_code == 400
    assert client.get("/prompt-recall", params={"q": UNRELATED}).json()["block"] == ""
    assert "9414750" in client.get("/prompt-recall", params={"q": RELATED}).json()["block"]
    assert client.get("/get", params={"ids": "feedface"}).status_code == 404


def test_a_static_home_decides_on_minilm_cosines(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's threshold was chosen on MiniLM's cosines; the static table's run high (on the
    bench they let in 68 % of unrelated prompts). A home indexed with the table ranks with it
    and measures the decision's cosines with the bundled MiniLM."""
    from memvault.config.settings import load_settings
    from memvault.embeddings import INT8_NAME, STATIC_NAME
    from memvault.ops.memory import MemoryService
    from memvault.ops.prompt_recall import _gate_embedder, evaluate, warm
    from memvault.ops.reindex import rebuild_index

    monkeypatch.setenv("MEMVAULT_HOOKD", "off")
    minilm = evaluate(MemoryService(load_settings(demo_copy)), RELATED)
    assert minilm.injected and minilm.signals is not None and minilm.signals.cosines_by == ""
    settings = load_settings(demo_copy, embeddings={"model": STATIC_NAME})
    rebuild_index(settings)
    service = MemoryService(settings)
    warm(service)  # what the hook daemon does at its start: the bundled MiniLM is loaded then
    assert service.embedder.name == STATIC_NAME and service.vectors
    bundled = _gate_embedder(service)
    assert bundled is not None and bundled.name == INT8_NAME and bundled.texts == 1
    loud = evaluate(service, RELATED)
    assert loud.injected and "9414750" in loud.block
    assert loud.signals is not None and loud.signals.cosines_by == INT8_NAME
    assert any(f"measured by the bundled {INT8_NAME}" in r for r in loud.reasons)
    for prompt in (UNRELATED, "suggest ten push notification messages for a shop that sells blankets",
                   "plan a weekly exercise routine with one rest day in between"):
        quiet = evaluate(service, prompt)
        assert not quiet.injected and quiet.signals is not None, prompt
        # Read on the table's own cosines, the last two score 1.29 and 1.23 (measured 2026-12-07).
        assert quiet.signals.evidence(GATE) < GATE.min_evidence - 0.2, (prompt, quiet.signals)

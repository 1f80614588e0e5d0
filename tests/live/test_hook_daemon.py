"""The hook daemon and the prompt-recall hook's edges: one daemon per home, idle exit, a stale
socket replaced, bad stdin, trivial prompts, and a contentless turn never heading a block."""

import json
from datetime import datetime
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memvault.live import hookd_client
from memvault.ops.prompt_recall import prompt_recall
from tests.helpers import child_env

MEMVAULT = str(Path(sys.executable).with_name("memvault"))


def _env(**extra: str) -> dict[str, str]:
    return {**child_env(), "MEMVAULT_HOOKD": "on", **extra}


def _wait(predicate, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


def test_the_daemon_runs_once_per_home_and_exits_when_idle(home: Path) -> None:
    argv = [sys.executable, "-m", "memvault.servers.hookd", "--home", str(home), "--idle-exit", "4"]
    first = subprocess.Popen(argv, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    busy = threading.Event()

    def keep_busy() -> None:  # requests keep it from idling while the second one starts (slowly, on a loaded box)
        while not busy.is_set():
            hookd_client.status(home)
            time.sleep(0.5)

    try:
        _wait(lambda: hookd_client.status(home)["pid"] == first.pid)
        pinger = threading.Thread(target=keep_busy)
        pinger.start()
        try:
            second = subprocess.run(argv, env=_env(), capture_output=True, timeout=300)
        finally:
            busy.set()
            pinger.join()
        assert second.returncode == 0  # the lock is taken: it leaves at once
        assert hookd_client.status(home)["pid"] == first.pid
        path = hookd_client.socket_path(home)
        assert path.stat().st_mode & 0o777 == 0o600
        assert first.wait(timeout=120) == 0  # idle: it exits by itself
        assert not path.exists() and not hookd_client.status(home)["running"]
        log = (home / ".memvault" / "live.log").read_text()
        assert log.count("hookd: serving") == 1 and "hookd: exiting (idle for 4 s)" in log
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


def test_a_stale_socket_is_replaced_by_the_daemon_a_hook_starts(home: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMVAULT_HOOKD", "on")
    monkeypatch.setenv("MEMVAULT_LIVE__DAEMON_IDLE_S", "3")
    path = hookd_client.socket_path(home)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nobody listens: what a killed daemon leaves
    answer = hookd_client.ask(home, {"op": "ping"})
    assert answer is not None and answer["pid"] != os.getpid()
    assert hookd_client.ask(home, {"op": "ping"})["pid"] == answer["pid"]  # the same one answers again
    _wait(lambda: not hookd_client.held(home))  # and it leaves when idle (a ping would keep it busy)


@pytest.mark.parametrize("stdin", [b"", b"\xff\xfe\x00secret-garbage{", b"not json secret-garbage", b"[1, 2]",
                                   b'{"prompt": 5, "secret-garbage": true}', b'{"no_prompt": "secret-garbage"}'])
def test_bad_stdin_exits_0_with_nothing_injected_and_no_echo(home: Path, stdin: bytes) -> None:
    done = subprocess.run([MEMVAULT, "--home", str(home), "prompt-recall"], input=stdin, capture_output=True,
                          timeout=60, env=_env())
    assert done.returncode == 0 and done.stdout == b""
    log = (home / ".memvault" / "live.log").read_text()
    assert len(log.strip().splitlines()) == 1 and "secret-garbage" not in log and "nothing injected" in log
    assert not hookd_client.status(home)["running"]


def test_an_oversized_payload_is_not_parsed(home: Path) -> None:
    raw = json.dumps({"prompt": "x" * (9 << 20)}).encode()
    assert prompt_recall(home, raw) == ("", "error")
    assert "is over" in (home / ".memvault" / "live.log").read_text()


@pytest.mark.parametrize("prompt", ["thanks!", "ok", "👍", "continue", "hi", "/clear"])
def test_a_trivial_prompt_injects_nothing_and_starts_nothing(home: Path, prompt: str, monkeypatch) -> None:
    monkeypatch.setenv("MEMVAULT_HOOKD", "on")
    assert prompt_recall(home, json.dumps({"prompt": prompt, "session_id": "s"})) == ("", "trivial")
    assert not hookd_client.status(home)["running"]


def _index_backup_chat(home: Path, embedder):
    """A home whose index holds one conversation: greetings and "ok" around a real answer."""
    from memvault.markdown.tree import conversation_nodes
    from memvault.config.settings import load_settings
    from stores.nodes import NodeIndex
    from memvault.stages.index import rows_for, write_index

    settings = load_settings(home)
    nodes = NodeIndex.open_or_create(settings)
    turns = ["hi", "Hello! The pgBackRest backup of the postgres cluster runs nightly at 02:00, stanza main.",
             "ok", "Thanks", "what about the retention of the postgres backups?", "Fourteen days of full backups."]
    when = datetime(2026, 3, 1, 10, 0)
    msgs = [(f"t{i}", "user" if i % 2 == 0 else "assistant", t, when) for i, t in enumerate(turns)]
    tree = conversation_nodes("k1", "k1", "postgres backups", "2026-03-01 10:00", "claude-code", msgs)
    write_index(nodes, embedder, rows_for("conv:k1", "conversation", tree, settings.index.context_turns), [], settings.index)
    return settings


def test_a_contentless_turn_never_heads_the_block(home: Path, embedder) -> None:
    from memvault.ops.memory import MemoryService
    from memvault.ops.prompt_recall import evaluate
    from memvault.live.prompt_gate import GateParams

    service = MemoryService(_index_backup_chat(home, embedder), embedder)
    answer = evaluate(service, "hi, when does the postgres backup run at night?",
                      params=GateParams(min_evidence=0.0, min_cos=0.0))
    hits = [ln for ln in answer.block.splitlines() if ln.startswith("»")]
    assert hits and "pgBackRest" in hits[0]
    assert not any(ln.rstrip().endswith((": hi", ": ok", ": Thanks")) for ln in hits)
    # every turn shown was said on 2026-03-01: its date stands on the conversation's title
    assert "[1] 2026-03-01 postgres backups (cite: conv:k1)" in answer.block
    # The session the prompt is typed in is not recalled to itself.
    from memvault.ops.prompt_recall import session_doc

    assert session_doc("abc") != "conv:k1"


def test_the_top_cosine_skips_the_prompts_own_session_and_dates_count_by_the_turns_date(home: Path, embedder) -> None:
    from memvault.markdown.tree import conversation_nodes
    from memvault.ops.memory import MemoryService
    from memvault.ops.prompt_recall import measure, session_doc
    from stores.nodes import NodeIndex
    from memvault.stages.index import rows_for, write_index

    settings = _index_backup_chat(home, embedder)
    own = session_doc("live-1")
    assert own is not None
    echo = [("e0", "user", "when does the postgres backup run at night on 1 March 2026?", datetime(2026, 4, 2, 9, 0))]
    tree = conversation_nodes(own[5:], own[5:], "this session", "2026-04-02 09:00", "claude-code", echo)
    write_index(NodeIndex.open_or_create(settings), embedder, rows_for(own, "conversation", tree, 0), [], settings.index)
    service = MemoryService(settings, embedder)
    prompt = "when does the postgres backup run at night on 1 March 2026?"
    elsewhere, inside = measure(service, prompt), measure(service, prompt, session_id="live-1")
    assert not isinstance(elsewhere, str) and not isinstance(inside, str)
    assert elsewhere[0].top_cos > 0.95 > inside[0].top_cos > 0.3  # the prompt's own turn is not evidence of anything
    assert all(row["doc"] == "conv:k1" for _, row, _ in inside[1])
    undated = measure(service, prompt, session_id="live-1", match_dates=False)
    assert not isinstance(undated, str)
    assert inside[0].coverage > undated[0].coverage  # "1 March 2026" is the pgBackRest turn's date, not its text


def test_the_block_spends_its_budget_on_evidence(home: Path, embedder) -> None:
    from memvault.ops.memory import MemoryService
    from memvault.ops.prompt_recall import evaluate
    from memvault.live.prompt_gate import GateParams
    from memvault.recall.evidence import SHORT_HEADER

    settings = _index_backup_chat(home, embedder)
    service = MemoryService(settings, embedder)
    loose = GateParams(min_evidence=0.0, min_cos=0.0)
    answer = evaluate(service, "when does the postgres backup run at night?", params=loose)
    assert SHORT_HEADER in answer.block and "Query:" not in answer.block  # the agent has the prompt already
    assert len(answer.block) <= settings.live.prompt_max_chars
    tight = evaluate(service, "when does the postgres backup run at night?", params=loose, max_chars=400)
    assert len(tight.block) <= 400 and "pgBackRest" in tight.block


CLIENT = """
import json, sys
sys.argv = ["memvault", "--home", sys.argv[1], sys.argv[2]]
from memvault.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
HEAVY = ("numpy", "pydantic", "typer", "rich", "lancedb", "onnxruntime", "duckdb", "git", "memvault.config.settings")


def test_hook_clients_import_nothing_heavy_when_the_daemon_answers(home: Path, embedder, monkeypatch) -> None:
    _index_backup_chat(home, embedder)
    monkeypatch.setenv("MEMVAULT_HOOKD", "on")
    monkeypatch.setenv("MEMVAULT_LIVE__DAEMON_IDLE_S", "300")
    assert hookd_client.ask(home, {"op": "ping"}) is not None  # started, warm
    for command, stdin in (("prompt-recall", json.dumps({"prompt": "where do the postgres backups go?"})),
                           ("index-brief", "")):
        done = subprocess.run([sys.executable, "-c", CLIENT, str(home), command], input=stdin, capture_output=True,
                              text=True, timeout=300, env=_env())
        loaded = json.loads(done.stderr.strip().splitlines()[-1])
        assert not [m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY], command
        assert done.stdout.startswith("<memvault-index>" if command == "index-brief" else "<memory-recall>")
    assert hookd_client.ask(home, {"op": "stop"}, start_daemon=False)["stopping"]
    _wait(lambda: not hookd_client.held(home))

"""Live capture: hook payloads → spool → drainer → recallable, against real homes.

The hook runs as Claude Code runs it (the `memvault` executable, JSON on stdin); the
drainer it starts is the real detached process. Lock and crash behaviour use a second
process holding the writer lock and the drainer's failpoints (a hard exit, as a kill).
"""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault.live import spool
from tests.helpers import SAMPLES, append_turn, wait_for

MEMVAULT = str(Path(sys.executable).parent / "memvault")
SAMPLE = SAMPLES / "claude-code" / "-Users-sam-src-lisbon-2027" / "691563ff-3759-5e7d-a1c8-46e36e4e06f0.jsonl"


def child_env() -> dict[str, str]:
    import os

    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}


def hook(home: Path, payload: dict | str, *args: str) -> subprocess.CompletedProcess:
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([MEMVAULT, "--home", str(home), "capture", *args], input=raw, capture_output=True,
                          text=True, timeout=60, env=child_env())


def payload(transcript: Path, event: str) -> dict:
    return {"session_id": "691563ff-3759-5e7d-a1c8-46e36e4e06f0", "transcript_path": str(transcript),
            "cwd": "/Users/sam/src/lisbon-2027", "hook_event_name": event, "permission_mode": "default"}



def settings_of(home: Path, **over):
    from memvault.config.settings import load_settings

    return load_settings(home, **over)


def recall_texts(home: Path, embedder, query: str) -> str:
    from memvault.ops.memory import MemoryService

    return "\n".join(h["text"] for h in MemoryService(settings_of(home), embedder).recall(query)["hits"])



def kill_drainer(home: Path) -> None:
    """End a detached drainer a failed test may leave behind (its pid is in drain.lock)."""
    import os
    import signal

    path = home / ".memvault" / spool.DRAIN_LOCK
    if spool.drainer_running(home / ".memvault") and path.read_text().strip().isdigit():
        try:
            os.kill(int(path.read_text().strip()), signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def transcript(tmp_path: Path, home: Path) -> Path:
    from memvault.ops.capture_paths import register_agent_folder

    path = tmp_path / "projects" / SAMPLE.name
    path.parent.mkdir(parents=True)
    shutil.copy(SAMPLE, path)
    register_agent_folder(home / ".memvault", "claude-code", path.parent)  # as agent-setup does
    return path


def test_three_claude_code_events_drive_capture_end_to_end(home: Path, transcript: Path, embedder) -> None:
    from memvault.ops.drain import run_drainer

    # Stop: the hook spools, starts the real detached drainer, and returns before it is done.
    append_turn(transcript, "Decision: the Sintra day trip moves to the 17th, the sitter is Marta.")
    try:
        out = hook(home, payload(transcript, "Stop"))
        assert out.returncode == 0 and out.stdout == "" and out.stderr == ""
        wait_for(lambda: spool.pending(home / ".memvault") == 0 and not spool.drainer_running(home / ".memvault"),
                 240, "the detached drainer")
    finally:
        kill_drainer(home)
    assert "Marta" in recall_texts(home, embedder, "who is the dog sitter for the Sintra trip?")

    # PreCompact and SessionEnd: each appended turn becomes recallable after its drain.
    for event, fact in (("PreCompact", "The vet appointment for Pixel is on 2027-03-04 at 9:30."),
                        ("SessionEnd", "We booked the Alfama tram tour for the 14th at 10:00.")):
        append_turn(transcript, fact)
        # This process plays the running drainer, so the hook starts none: drained here, warm.
        lock = spool.DrainLock(home / ".memvault")
        assert lock.acquire()
        try:
            out = hook(home, payload(transcript, event))
        finally:
            lock.release()
        assert out.returncode == 0 and spool.pending(home / ".memvault") == 1
        totals = run_drainer(settings_of(home), wait=False, embedder=embedder)
        assert spool.pending(home / ".memvault") == 0, totals
    texts = recall_texts(home, embedder, "when is the vet appointment for Pixel?")
    assert "9:30" in texts
    assert "tram tour" in recall_texts(home, embedder, "Alfama tram tour booking")


def test_bad_payloads_exit_zero_and_are_logged(home: Path, tmp_path: Path) -> None:
    for raw in ("", "not json", "[1, 2]", json.dumps({"session_id": "x"})):
        out = hook(home, raw)
        assert out.returncode == 0 and out.stdout == "" and out.stderr == "", raw
    assert spool.pending(home / ".memvault") == 0
    log = (home / ".memvault" / spool.LIVE_LOG).read_text()
    assert log.count("capture:") == 4 and "no transcript_path" in log
    # No home at all: still exit 0, nothing created.
    assert hook(tmp_path / "nowhere", {"transcript_path": "/x.jsonl"}).returncode == 0
    assert not (tmp_path / "nowhere").exists()


def test_codex_notify_rereads_the_configured_codex_sources(home: Path) -> None:
    from memvault.ops.capture import capture

    event = {"type": "agent-turn-complete", "thread-id": "t1", "turn-id": "1", "cwd": "/tmp/x",
             "input-messages": ["hi"], "last-assistant-message": "hello"}
    result = capture(home, json.dumps(event), source="codex", spawn=False)
    entry = json.loads(Path(result["spooled"]).read_text())
    assert entry["op"] == "sources" and entry["source"] == "codex"
    # Through the CLI, with the JSON as the last argument (how Codex calls `notify`); this
    # process holds the drain lock, so the hook starts no drainer.
    lock = spool.DrainLock(home / ".memvault")
    assert lock.acquire()
    try:
        out = subprocess.run([MEMVAULT, "--home", str(home), "capture", "--source", "codex", json.dumps(event)],
                             capture_output=True, text=True, timeout=60, env=child_env())
    finally:
        lock.release()
    assert out.returncode == 0 and spool.pending(home / ".memvault") == 2


def test_spool_written_while_another_process_writes_is_drained_after(home: Path, transcript: Path, embedder) -> None:
    from memvault.ops.capture import capture
    from memvault.ops.drain import run_drainer

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from memvault.lock import writer_lock\n"
         "with writer_lock(Path(sys.argv[1]), 'memvault run (test)'):\n    print('held', flush=True); sys.stdin.read()",
         str(home / ".memvault")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        append_turn(transcript, "The apartment key box code is 4417.")
        assert capture(home, json.dumps(payload(transcript, "Stop")), spawn=False)["spooled"]
        busy = run_drainer(settings_of(home, lock_timeout_s=0.2), wait=False, embedder=embedder)
        assert busy["waiting"] and "is writing" in busy["note"] and busy["drains"] == 0
        assert spool.pending(home / ".memvault") == 1  # kept, not lost
    finally:
        holder.communicate("", timeout=30)
    done = run_drainer(settings_of(home), wait=False, embedder=embedder)
    assert done["drains"] == 1 and spool.pending(home / ".memvault") == 0
    assert "4417" in recall_texts(home, embedder, "what is the key box code of the apartment?")


def _counts(home: Path, e) -> tuple[int, int, int]:
    from memvault.ids import conv_ref
    from stores.ledger import Ledger
    from stores.nodes import NodeIndex

    settings = settings_of(home)
    with Ledger.open(settings, read_only=True) as ledger:
        messages = ledger.counts().messages
        cids = ledger.conversation_ids()
    nodes = NodeIndex.open_existing(settings)
    return messages, len(cids), sum(len(nodes.doc_hashes(conv_ref(c))) for c in cids)


@pytest.mark.parametrize("point", ["ingested", "indexed"])
def test_a_drainer_killed_mid_drain_loses_and_doubles_nothing(home: Path, transcript: Path, embedder, point: str) -> None:
    from memvault.ops.capture import capture
    from memvault.ops.drain import run_drainer

    # A first drain establishes the conversation, then a new turn is killed mid-drain.
    capture(home, json.dumps(payload(transcript, "Stop")), spawn=False)
    run_drainer(settings_of(home), wait=False, embedder=embedder)
    before = _counts(home, embedder)
    append_turn(transcript, "The ferry to Cacilhas leaves every 20 minutes from Cais do Sodré.")
    capture(home, json.dumps(payload(transcript, "Stop")), spawn=False)
    killed = subprocess.run([MEMVAULT, "--home", str(home), "drain"], capture_output=True, text=True, timeout=300,
                            env={**child_env(), "MEMVAULT_FAILPOINT": f"drain:{point}"})
    assert killed.returncode == 86, killed.stderr  # the hard exit, no cleanup
    assert spool.pending(home / ".memvault") == 1  # the entry survives the crash
    totals = run_drainer(settings_of(home), wait=False, embedder=embedder)
    assert totals["drains"] == 1 and spool.pending(home / ".memvault") == 0
    after = _counts(home, embedder)
    assert after[0] == before[0] + 1 and after[1] == before[1]  # one new message, no new conversation
    again = run_drainer(settings_of(home), wait=False, embedder=embedder)  # nothing spooled: no-op
    assert again["drains"] == 0 and _counts(home, embedder) == after
    # The turn is recallable, exactly once.
    from memvault.ops.memory import MemoryService

    hits = MemoryService(settings_of(home), embedder).search("ferry to Cacilhas every 20 minutes", 10)
    texts = [r["text"] for r in MemoryService(settings_of(home), embedder).get([h["id"] for h in hits])
             if r["kind"] == "message" and "Cacilhas" in r["text"]]
    assert len(texts) == 1


def test_watch_polls_configured_sources_and_drains(home: Path, transcript: Path, embedder) -> None:
    import threading

    from memvault.ops.watch import watch

    (home / "memvault.toml").write_text(
        (home / "memvault.toml").read_text() + f'\n[[sources]]\nkind = "claude-code"\npath = "{transcript.parent}"\n')
    settings = settings_of(home, live={"watch_poll_s": 0.3})
    stop = threading.Event()

    def later() -> None:
        time.sleep(1.0)
        append_turn(transcript, "Watch mode saw this: the museum pass costs €28.")

    threading.Thread(target=later, daemon=True).start()
    drains = watch(settings, stop=stop, poll=True, embedder=embedder, max_cycles=1)
    assert drains >= 1 and spool.pending(home / ".memvault") == 0
    assert "€28" in recall_texts(home, embedder, "how much is the museum pass?")

"""`memvault status` while another process holds the writer lock and the ledger read-write,
and the operations fields it adds (schedule, index size and model, next run)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.config.settings import load_settings
from memvault.ops.status import gather_status
from tests.helpers import MEMVAULT, ROOT

FOUNDATION_KEYS = {"home", "engine", "conversations", "messages", "chunks", "buckets", "articles", "nodes", "last_run"}

HOLDER = """
import sys, time
from pathlib import Path
from memvault.lock import writer_lock
from stores.ledger import Ledger
state = Path(sys.argv[1])
with writer_lock(state, "test holder", 5):
    ledger = Ledger(state / "ledger.duckdb")   # read-write, as a run holds it
    ledger.counts()
    print("ready", flush=True)
    sys.stdin.readline()                       # hold until the test says so
    ledger.close()
"""


def _cli(home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([MEMVAULT, "--home", str(home), *args], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, **(env or {})}, timeout=300)


def test_status_answers_while_another_process_writes(demo_copy: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(demo_copy / ".memvault")], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        # The ledger really is unavailable to any other process right now, and the error names the writer.
        from memvault.errors import LedgerBusy
        from stores.ledger import Ledger

        with pytest.raises(LedgerBusy, match=f"pid {holder.pid}, test holder") as busy:
            with Ledger.open(load_settings(demo_copy), read_only=True, retry_s=0):
                pass
        assert "Conflicting lock" not in str(busy.value) and "IO Error" not in str(busy.value)  # not DuckDB's text
        result = _cli(demo_copy, "status", "--json", env={"PREFECT_API_URL": ""})
        assert result.returncode == 0, result.stderr
        data = json.loads(result.stdout)
        assert FOUNDATION_KEYS <= set(data)
        assert "another memvault process" in data["note"] and str(holder.pid) in data["note"]
        assert data["last_run"]["status"] == "completed"
        assert data["nodes"] > 0 and data["articles"] > 0
        text = _cli(demo_copy, "status", env={"PREFECT_API_URL": ""})
        assert text.returncode == 0 and "is writing; counts come from the last run report" in text.stdout
    finally:
        holder.communicate("done\n", timeout=60)
    assert holder.returncode == 0
    after = gather_status(load_settings(demo_copy))
    assert "note" not in after and after["conversations"] > 0


def test_status_reports_index_schedule_and_never_asks_a_server_unasked(demo_copy: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("MEMVAULT_UNIT_DIR", str(demo_copy.parent / "units"))
    data = gather_status(load_settings(demo_copy))
    assert FOUNDATION_KEYS <= set(data)
    assert data["embedding_model"] == "all-MiniLM-L6-v2-int8"  # the default: MiniLM quantised
    index = Path(data["index_uri"])
    assert data["index_bytes"] == sum(p.stat().st_size for p in index.rglob("*") if p.is_file()) > 0
    assert data["engine_in_use"] == "none"
    assert data["schedule"] == {"installed": False, "files": [], "at": "03:00", "timezone": data["schedule"]["timezone"]}
    assert data["next_run"] is None  # no PREFECT_API_URL: no server is asked or started


def test_status_says_when_the_prefect_server_does_not_answer(demo_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv("PREFECT_API_URL", f"http://127.0.0.1:{port}/api")
    data = gather_status(load_settings(demo_copy))
    assert data["next_run"]["next_run"] is None and "did not answer" in data["next_run"]["note"]

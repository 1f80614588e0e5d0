"""A full disk (issue 26 §6), simulated by making one write fail with ENOSPC: read paths never
fail on a log write; write paths end with "disk full: <path>" (JSON under --json) and leave
no half state."""

import errno
import json
import os
from pathlib import Path

import pytest

from tests.helpers import cli


def enospc(path: str):
    def fail(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    return fail


def test_recall_answers_when_the_access_log_cannot_be_appended(demo_copy: Path, monkeypatch, embedder) -> None:
    import memvault.recall.access as access
    from memvault.ops.memory import MemoryService
    from memvault.config.settings import load_settings

    log = demo_copy / ".memvault" / access.ACCESS_LOG
    before = log.read_text() if log.exists() else ""  # earlier recalls on the shared demo may have logged
    monkeypatch.setattr(access.os, "write", enospc(str(log)))
    hits = MemoryService(load_settings(demo_copy), embedder).recall("postgres backups on the NAS")["hits"]
    assert hits and (log.read_text() if log.exists() else "") == before


def test_a_note_on_a_full_disk_says_so_and_stores_nothing(demo_copy: Path, monkeypatch) -> None:
    import memvault.ops.drain as drain
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    settings = load_settings(demo_copy)
    with Ledger.open(settings, read_only=True) as ledger:
        before = ledger.counts().conversations
    lance = str(demo_copy / ".memvault" / "nodes.lance")
    monkeypatch.setattr(drain, "write_index", enospc(lance))
    out = cli("--home", str(demo_copy), "note", "the spare key is under the blue pot", "--json")
    assert out.exit_code == 1
    error = json.loads(out.stdout)
    assert error["type"] == "DiskFullError" and error["error"].startswith(f"disk full: {lance}")
    assert "not stored" in error["error"]
    with Ledger.open(settings, read_only=True) as ledger:
        assert ledger.counts().conversations == before  # no half note


def test_run_json_on_a_full_disk_prints_a_json_error(home: Path, monkeypatch, prefect) -> None:
    from stores.ledger import Ledger

    where = str(home / ".memvault" / "ledger.duckdb")
    monkeypatch.setattr(Ledger, "start_run", enospc(where))
    out = cli("--home", str(home), "run", "--only", "ingest", "--json")
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert json.loads(out.stdout) == {"error": f"disk full: {where} — free some space and run the command again",
                                      "type": "DiskFullError"}


def test_duckdbs_own_io_error_for_a_full_disk_is_called_so(home: Path, monkeypatch, prefect) -> None:
    """DuckDB raises its IOException (not an OSError) when a write finds no space: the message,
    as DuckDB words it, names the file."""
    import duckdb

    from stores.ledger import Ledger

    where = str(home / ".memvault" / "ledger.duckdb.wal")

    def fail(*_a, **_k):
        raise duckdb.IOException(f'IO Error: Could not write file "{where}": {os.strerror(errno.ENOSPC)}')

    monkeypatch.setattr(Ledger, "start_run", fail)
    out = cli("--home", str(home), "run", "--only", "ingest", "--json")
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert json.loads(out.stdout) == {"error": f"disk full: {where} — free some space and run the command again",
                                      "type": "DiskFullError"}
    from memvault.errors import disk_full

    assert disk_full(duckdb.IOException("IO Error: Cannot open file: Permission denied")) is None


@pytest.mark.parametrize("code", [errno.EACCES])
def test_other_os_errors_are_not_called_disk_full(code: int) -> None:
    from memvault.errors import disk_full

    assert disk_full(OSError(code, "denied", "/x")) is None
    assert str(disk_full(OSError(errno.ENOSPC, "full", "/x"))).startswith("disk full: /x")

"""A damaged ledger gets a way out: status, run and backup say what happened and name the copy
to restore; `memvault restore SRC` puts a backup's (or a migration copy's) ledger back, keeping
the damaged file aside; recall keeps working meanwhile."""

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault.errors import LedgerDamagedError, LockedError, UsageError
from memvault.config.settings import load_settings

QUERY = "when does the postgres backup run and how long is it kept"


def _cli(home: Path, *args: str):
    from memvault.cli import app

    return CliRunner().invoke(app, ["--home", str(home), *args], env={"PREFECT_API_URL": None})


def _corrupt(path: Path) -> bytes:
    """Overwrite every block after DuckDB's file headers: each table's data fails its checksum."""
    data = bytearray(path.read_bytes())
    data[12288:] = b"\xa5" * (len(data) - 12288)
    path.write_bytes(bytes(data))
    return bytes(data)


def test_a_damaged_ledger_is_explained_and_restored_from_the_last_backup(demo_copy: Path, tmp_path: Path) -> None:
    home = demo_copy
    settings = load_settings(home)
    original = json.loads(_cli(home, "status", "--json").output)
    dest = tmp_path / "backups" / "copy"
    assert _cli(home, "backup", str(dest)).exit_code == 0
    damaged = _corrupt(settings.ledger_path)

    for args in (("status", "--json"), ("backup", str(tmp_path / "second"), "--json")):
        result = _cli(home, *args)
        assert result.exit_code == 1, args
        error = json.loads(result.output)
        assert error["type"] == "LedgerDamagedError", error
        assert "is damaged" in error["error"] and f"memvault restore {dest}" in error["error"]
    text = _cli(home, "status")
    assert text.exit_code == 1 and "Traceback" not in text.output and "_duckdb" not in text.output
    # Recall reads only the index and the vault: it still answers.
    recall = _cli(home, "recall", QUERY, "--json")
    assert recall.exit_code == 0 and json.loads(recall.output)["hits"]

    restored = _cli(home, "restore", str(dest), "--json")
    assert restored.exit_code == 0, restored.output
    data = json.loads(restored.output)
    assert Path(data["kept_aside"]).read_bytes() == damaged  # kept, never deleted
    after = json.loads(_cli(home, "status", "--json").output)
    for key in ("conversations", "messages", "chunks", "buckets"):
        assert after[key] == original[key] > 0, key


def test_a_run_on_a_damaged_ledger_fails_with_the_way_out(demo_copy: Path, prefect) -> None:
    from tests.helpers import run_flow

    settings = load_settings(demo_copy)
    shutil.copy2(settings.ledger_path, settings.ledger_path.with_name("ledger.duckdb.pre-v3.bak"))
    _corrupt(settings.ledger_path)
    with pytest.raises(LedgerDamagedError, match=r"memvault restore .*ledger\.duckdb\.pre-v3\.bak"):
        run_flow(demo_copy, only=["ingest"])


def test_restore_refuses_while_a_writer_holds_the_lock_and_refuses_bad_sources(home: Path, tmp_path: Path) -> None:
    from memvault.lock import writer_lock
    from memvault.ops.backup import restore_ledger
    from stores.ledger import Ledger

    settings = load_settings(home, lock_timeout_s=0.2)
    Ledger(settings.ledger_path).close()
    copy = tmp_path / "ledger.duckdb.pre-v1.bak"
    shutil.copy2(settings.ledger_path, copy)
    with writer_lock(settings.state_dir, "memvault run test", 1):
        with pytest.raises(LockedError):
            restore_ledger(settings, copy)
    with pytest.raises(UsageError, match="neither a ledger file"):
        restore_ledger(settings, tmp_path / "nothing-here")
    bad = tmp_path / "bad.duckdb"
    shutil.copy2(settings.ledger_path, bad)
    _corrupt(bad)
    before = settings.ledger_path.read_bytes()
    with pytest.raises(LedgerDamagedError):
        restore_ledger(settings, bad)  # a damaged copy is refused before anything moves
    assert settings.ledger_path.read_bytes() == before
    assert restore_ledger(settings, copy)["source"] == str(copy.resolve())

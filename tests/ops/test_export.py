"""`memvault export`: a sample home in JSON Lines and SQLite, read back with the counts the
ledger and the vault have; refusals; and a busy ledger answered with LedgerBusy, not a crash."""

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.config.settings import load_settings
from stores.ledger import Ledger
from stores.vault import Vault
from tests.helpers import ROOT, cli

TABLES = ("conversations", "messages", "chunks", "articles")

HOLDER = """
import sys
from pathlib import Path
from memvault.lock import writer_lock
from stores.ledger import Ledger
state = Path(sys.argv[1])
with writer_lock(state, "test writer", 5):
    ledger = Ledger(state / "ledger.duckdb")   # read-write, as a run holds it
    print("ready", flush=True)
    sys.stdin.readline()
    ledger.close()
"""


def _expected(home: Path) -> dict[str, int]:
    settings = load_settings(home)
    with Ledger.open(settings, read_only=True) as ledger:
        counts = ledger.counts()
    return {"conversations": counts.conversations, "messages": counts.messages, "chunks": counts.chunks,
            "articles": len(Vault(home).list_articles())}


def _a_conversation(home: Path) -> tuple[str, list[str]]:
    """A conversation key and its messages' texts in order, straight from the ledger."""
    with Ledger.open(load_settings(home), read_only=True) as ledger:
        cid = ledger.conversation_ids()[0]
        texts = [r[0] for r in ledger.con.execute(
            "SELECT text FROM messages WHERE conversation_id = ? ORDER BY seq, native_id", [cid]).fetchall()]
    return cid, texts


def test_jsonl_export_reads_back_with_the_ledgers_counts(demo_copy: Path, tmp_path: Path) -> None:
    expected = _expected(demo_copy)
    assert all(expected[t] > 0 for t in TABLES), expected
    dest = tmp_path / "out"
    result = cli("--home", str(demo_copy), "export", "--format", "jsonl", "--json", str(dest))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["format"] == "jsonl" and summary["dest"] == str(dest)
    rows = {}
    for table in TABLES:
        path = Path(summary["tables"][table]["path"])
        assert path == dest / f"{table}.jsonl"
        rows[table] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert summary["tables"][table]["rows"] == len(rows[table]) == expected[table], table
    assert sorted(p.name for p in dest.iterdir()) == sorted(f"{t}.jsonl" for t in TABLES)  # no temp files left

    cid, texts = _a_conversation(demo_copy)
    [conv] = [c for c in rows["conversations"] if c["id"] == cid]
    assert conv["message_count"] == len(texts) and isinstance(conv["ignored"], bool)
    assert conv["started_at"] is None or conv["started_at"].endswith("Z")
    assert [m["text"] for m in rows["messages"] if m["conversation_id"] == cid] == texts
    by_id = {c["id"] for c in rows["conversations"]}
    assert all(ch["conversation_id"] in by_id and isinstance(ch["message_ids"], list) for ch in rows["chunks"])
    assert any(ch["buckets"] for ch in rows["chunks"])
    # Articles cite short ids; the export resolves each to the conversation's full key.
    cited = [c for a in rows["articles"] for c in a["cited_conversations"]]
    assert cited and all(c in by_id for c in cited)
    assert all(a["markdown"].strip() and a["path"].startswith("articles/") for a in rows["articles"])


def test_sqlite_export_has_typed_tables_with_keys_and_the_ledgers_counts(demo_copy: Path, tmp_path: Path) -> None:
    expected = _expected(demo_copy)
    dest = tmp_path / "memvault.db"
    result = cli("--home", str(demo_copy), "export", "--format", "sqlite", "--json", str(dest))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert {t: summary["tables"][t]["rows"] for t in TABLES} == expected
    con = sqlite3.connect(dest)
    try:
        for table in TABLES:
            assert con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == expected[table], table
        info = {r[1]: (r[2], r[5]) for r in con.execute("PRAGMA table_info(messages)")}
        assert info["seq"] == ("INTEGER", 0) and info["text"] == ("TEXT", 0)
        assert info["conversation_id"][1] == 1 and info["native_id"][1] == 2  # the composite primary key
        assert {r[1]: r[5] for r in con.execute("PRAGMA table_info(conversations)")}["id"] == 1
        cid, texts = _a_conversation(demo_copy)
        assert [r[0] for r in con.execute("SELECT text FROM messages WHERE conversation_id = ? ORDER BY seq",
                                          [cid])] == texts
        # A join a reader makes at once: messages per conversation agree with message_count.
        assert con.execute("SELECT count(*) FROM conversations c WHERE message_count != "
                           "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id)").fetchone()[0] == 0
        stem, cited = con.execute("SELECT stem, cited_conversations FROM articles LIMIT 1").fetchone()
        assert stem and isinstance(json.loads(cited), list)
    finally:
        con.close()


def test_an_existing_destination_is_kept_unless_forced(demo_copy: Path, tmp_path: Path) -> None:
    dest = tmp_path / "memvault.db"
    dest.write_text("keep me")
    refused = cli("--home", str(demo_copy), "export", "--format", "sqlite", str(dest))
    assert refused.exit_code == 2 and "--force" in refused.output
    assert dest.read_text() == "keep me"
    folder = cli("--home", str(demo_copy), "export", "--format", "sqlite", "--json", str(tmp_path))
    assert folder.exit_code == 2 and json.loads(folder.output)["type"] == "UsageError"
    forced = cli("--home", str(demo_copy), "export", "--format", "sqlite", "--force", str(dest))
    assert forced.exit_code == 0, forced.output
    assert sqlite3.connect(dest).execute("SELECT count(*) FROM conversations").fetchone()[0] > 0


def test_a_busy_ledger_is_reported_and_nothing_is_written(demo_copy: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import memvault.ops.export as export_ops

    monkeypatch.setattr(export_ops, "OPEN_RETRY_S", 0.3)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(demo_copy / ".memvault")], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = cli("--home", str(demo_copy), "export", "--format", "jsonl", "--json", str(tmp_path / "out"))
        assert result.exit_code == 1
        error = json.loads(result.output)
        assert error["type"] == "LedgerBusy" and f"pid {holder.pid}, test writer" in error["error"]
        assert not any((tmp_path / "out").glob("*.jsonl"))
        text = cli("--home", str(demo_copy), "export", "--format", "sqlite", str(tmp_path / "x.db"))
        assert text.exit_code == 1 and "is writing" in text.output and "try again" in text.output
        assert not (tmp_path / "x.db").exists()
    finally:
        holder.communicate("done\n", timeout=60)
    assert holder.returncode == 0

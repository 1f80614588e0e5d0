"""The ledger: numbered migrations on open (after a copy aside), idempotent upserts."""

from pathlib import Path

import pytest

from memvault.models import Conversation, Message
from stores import migrations
from stores.ledger import Ledger


def conv(*texts: str) -> Conversation:
    msgs, parent = [], None
    for i, t in enumerate(texts):
        msgs.append(Message(native_id=f"m{i}", parent_native_id=parent, role="user" if i % 2 == 0 else "assistant", text=t))
        parent = f"m{i}"
    return Conversation(source="claude-code", native_id="s1", title="t", messages=msgs)


def test_migrations_from_empty_and_reapplied(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    ledger = Ledger(path)
    versions = [m[0] for m in migrations.MIGRATIONS]
    assert ledger.applied_migrations() == versions
    ledger.close()
    ledger = Ledger(path)  # re-applied: nothing pending, nothing copied aside
    assert ledger.applied_migrations() == versions
    ledger.close()
    assert not list(tmp_path.glob("*.bak"))


def test_a_new_migration_copies_the_file_aside_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ledger.duckdb"
    ledger = Ledger(path)
    ledger.upsert_conversation(conv("hello there", "hi"))
    ledger.close()
    extra = (999, "test column", lambda con: con.execute("ALTER TABLE conversations ADD COLUMN extra TEXT"))
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, extra])
    monkeypatch.setattr("stores.ledger.MIGRATIONS", migrations.MIGRATIONS)
    ledger = Ledger(path)
    assert ledger.applied_migrations()[-1] == 999
    assert ledger.counts()["messages"] == 2
    ledger.close()
    backups = list(tmp_path.glob("ledger.duckdb.pre-v999.bak"))
    assert len(backups) == 1
    old = Ledger(backups[0], read_only=True)
    assert 999 not in old.applied_migrations()
    old.close()


def test_upsert_is_idempotent_and_appends(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.duckdb")
    assert ledger.upsert_conversation(conv("a question", "an answer")) == (True, 2, 0)
    assert ledger.upsert_conversation(conv("a question", "an answer")) == (False, 0, 0)
    assert ledger.upsert_conversation(conv("a question", "an answer", "more", "reply")) == (False, 2, 0)
    thread = ledger.active_thread(conv().id)
    assert [m["text"] for m in thread] == ["a question", "an answer", "more", "reply"]
    ledger.close()

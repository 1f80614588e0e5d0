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
    ledger.upsert_conversations([conv("hello there", "hi")])
    ledger.close()
    extra = (999, "test column", lambda con: con.execute("ALTER TABLE conversations ADD COLUMN extra TEXT"))
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, extra])
    monkeypatch.setattr("stores.ledger.MIGRATIONS", migrations.MIGRATIONS)
    ledger = Ledger(path)
    assert ledger.applied_migrations()[-1] == 999
    assert ledger.counts().messages == 2
    ledger.close()
    backups = list(tmp_path.glob("ledger.duckdb.pre-v999.bak"))
    assert len(backups) == 1
    old = Ledger(backups[0], read_only=True)
    assert 999 not in old.applied_migrations()
    old.close()


def test_upsert_is_idempotent_and_appends(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.duckdb")
    assert ledger.upsert_conversations([conv("a question", "an answer")]) == [(True, 2, 0)]
    assert ledger.upsert_conversations([conv("a question", "an answer")]) == [(False, 0, 0)]
    assert ledger.upsert_conversations([conv("a question", "an answer", "more", "reply")]) == [(False, 2, 0)]
    thread = ledger.active_thread(conv().id)
    assert [m.text for m in thread] == ["a question", "an answer", "more", "reply"]
    ledger.close()


def test_since_filters_every_stage_query_by_the_conversations_update(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from memvault.models import Message

    def dated(native: str, when: datetime) -> Conversation:
        return Conversation(source="pi", native_id=native, title=native, started_at=when, updated_at=when,
                            messages=[Message(native_id="m0", role="user", text=f"about {native}")])

    old, new = dated("old", datetime(2024, 1, 1, tzinfo=timezone.utc)), dated("new", datetime(2025, 6, 1, tzinfo=timezone.utc))
    since = datetime(2025, 1, 1, tzinfo=timezone.utc)
    ledger = Ledger(tmp_path / "l.duckdb")
    ledger.upsert_conversations([old, new])
    assert ledger.conversations_to_chunk() == [old.id, new.id]
    assert ledger.conversations_to_chunk(since=since) == [new.id]
    for conv in (old, new):
        ledger.add_chunk(f"chunk-{conv.native_id}", conv.id, ["m0"], conv.native_id, f"about {conv.native_id}",
                         [1.0, 0.0], "run-1")
    assert [c for c, _ in ledger.unassigned_chunks()] == ["chunk-old", "chunk-new"]
    assert [c for c, _ in ledger.unassigned_chunks(since=since)] == ["chunk-new"]
    ledger.upsert_bucket("Topic", "", [1.0, 0.0], 2)
    for chunk_id in ("chunk-old", "chunk-new"):
        ledger.assign(chunk_id, "Topic", 1.0, "run-1")
    assert ledger.pending_by_bucket() == {"Topic": ["chunk-old", "chunk-new"]}
    assert ledger.pending_by_bucket(since=since) == {"Topic": ["chunk-new"]}
    assert ledger.pending_by_bucket(since=datetime(2026, 1, 1, tzinfo=timezone.utc)) == {}
    chunk = ledger.chunk("chunk-new")  # a typed row, with what synthesis cites
    assert (chunk.conversation_id, chunk.conversation_title, chunk.source, chunk.message_ids) == (new.id, "new", "pi", ("m0",))
    assert ledger.chunk_vectors(["chunk-new", "no-such-chunk"]) == {"chunk-new": [1.0, 0.0]}
    assert ledger.chunk_vectors([]) == {}
    ledger.close()


def test_chunks_are_read_in_one_query_in_the_order_asked(tmp_path: Path) -> None:
    c = conv("a question about tide tables", "an answer about tide tables")
    ledger = Ledger(tmp_path / "l.duckdb")
    ledger.upsert_conversations([c])
    for n in (3, 1, 2):
        ledger.add_chunk(f"chunk-{n}", c.id, [f"m{n % 2}"], f"label {n}", f"text {n}", None, "run-1")
    rows = ledger.chunks(["chunk-2", "chunk-3", "chunk-2", "chunk-1"])
    assert [r.id for r in rows] == ["chunk-2", "chunk-3", "chunk-2", "chunk-1"]  # as asked, repeats kept
    assert rows == [ledger.chunk(i) for i in ("chunk-2", "chunk-3", "chunk-2", "chunk-1")]
    assert ledger.chunks([]) == []
    with pytest.raises(KeyError, match="no chunk chunk-9"):
        ledger.chunks(["chunk-1", "chunk-9"])
    ledger.upsert_bucket("Tides", "", [1.0, 0.0], 3)
    for n in (3, 1, 2):
        ledger.assign(f"chunk-{n}", "Tides", 1.0, "run-1")
    assert ledger.assigned_chunk_texts(2) == [ledger.chunk(i).text for i in ledger.assigned_chunk_ids(2)] == ["text 1", "text 2"]
    ledger.close()

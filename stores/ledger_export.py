"""Read-only streams of the ledger's tables for `memvault export` (memvault/ops/export.py).

Each exported table is described once here — its columns, their types and its key — so the
JSON Lines and SQLite writers agree, and rows come out in key order through a second cursor,
a batch at a time, so exporting a ledger of millions of messages holds one batch in memory.
Only what a person would want to read is exported: no vectors, no pipeline bookkeeping.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from stores.ledger import Ledger

ColumnType = Literal["text", "integer", "real", "boolean", "timestamp", "json"]


@dataclass(frozen=True)
class ExportTable:
    """One exported table: ``columns`` as (name, type), its primary key and the query behind it."""

    name: str
    columns: tuple[tuple[str, ColumnType], ...]
    key: tuple[str, ...]
    sql: str = ""

    @property
    def column_names(self) -> list[str]:
        return [name for name, _ in self.columns]


EXPORT_CONVERSATIONS = ExportTable(
    "conversations",
    (("id", "text"), ("source", "text"), ("native_id", "text"), ("agent_id", "text"), ("parent_id", "text"),
     ("title", "text"), ("project", "text"), ("started_at", "timestamp"), ("updated_at", "timestamp"),
     ("leaf_native_id", "text"), ("ingested_at", "timestamp"), ("changed_at", "timestamp"),
     ("ignored", "boolean"), ("message_count", "integer")),
    ("id",),
    "SELECT c.id, c.source, c.native_id, c.agent_id, c.parent_id, c.title, c.project, c.started_at, c.updated_at, "
    "c.leaf_native_id, c.ingested_at, c.changed_at, coalesce(c.ignored, FALSE), "
    "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id) FROM conversations c ORDER BY c.id",
)
EXPORT_MESSAGES = ExportTable(
    "messages",
    (("conversation_id", "text"), ("native_id", "text"), ("parent_native_id", "text"), ("seq", "integer"),
     ("role", "text"), ("kind", "text"), ("text", "text"), ("timestamp", "timestamp"), ("low_value", "boolean")),
    ("conversation_id", "native_id"),
    "SELECT conversation_id, native_id, parent_native_id, seq, role, kind, text, timestamp, coalesce(low_value, FALSE) "
    "FROM messages ORDER BY conversation_id, seq, native_id",
)
EXPORT_CHUNKS = ExportTable(
    "chunks",
    (("id", "text"), ("conversation_id", "text"), ("message_ids", "json"), ("label", "text"), ("text", "text"),
     ("buckets", "json"), ("created_at", "timestamp"), ("run_id", "text")),
    ("id",),
    "SELECT c.id, c.conversation_id, c.message_ids, c.label, c.text, "
    "coalesce((SELECT list(b.bucket ORDER BY b.bucket) FROM chunk_buckets b WHERE b.chunk_id = c.id), []), "
    "c.created_at, c.run_id FROM chunks c ORDER BY c.id",
)
# Articles live in the vault, not the ledger; the ops module fills these from the files.
EXPORT_ARTICLES = ExportTable(
    "articles",
    (("stem", "text"), ("title", "text"), ("path", "text"), ("markdown", "text"), ("words", "integer"),
     ("cited_conversations", "json")),
    ("stem",),
)
EXPORT_TABLES = (EXPORT_CONVERSATIONS, EXPORT_MESSAGES, EXPORT_CHUNKS, EXPORT_ARTICLES)


def export_rows(ledger: Ledger, table: ExportTable, batch: int = 5_000) -> Iterator[list[tuple[Any, ...]]]:
    """The rows of a ledger-backed ``table`` in key order, ``batch`` at a time."""
    cursor = ledger.con.cursor()
    try:
        cursor.execute(table.sql)
        while rows := cursor.fetchmany(batch):
            yield rows
    finally:
        cursor.close()


def export_conversation_ids(ledger: Ledger) -> list[str]:
    """Every conversation key, sorted (to resolve the short ids articles cite)."""
    return [r[0] for r in ledger.con.execute("SELECT id FROM conversations ORDER BY id").fetchall()]

"""Ledger part: bucket file stems, forgotten buckets and forgotten conversations."""

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from stores.ledger_base import LedgerBase
from stores.ledger_time import now as _now
from stores.sql import scalar


class EditorialMixin(LedgerBase):
    """Methods of :class:`stores.ledger.Ledger`."""

    # -- editorial: bucket file stems, forgotten buckets and conversations (migration 4) ----------
    def bucket_stem(self, name: str) -> str:
        """The article file stem of a bucket, stable across runs (assigned once, then stored).

        Synthesis must write `articles/<bucket_stem>.md`: two titles that sanitize alike
        ("C# Tips", "C Tips") get distinct files, and the second keeps its `_2` forever.
        """
        row = self.con.execute("SELECT stem FROM buckets WHERE name = ?", [name]).fetchone()
        if row and row[0]:
            return str(row[0])
        stem = self._free_stem(name)
        if row:
            self.con.execute("UPDATE buckets SET stem = ? WHERE name = ?", [stem, name])
        return stem

    def bucket_for_stem(self, stem: str) -> str | None:
        """The bucket whose article file is ``stem`` (case-insensitive), forgotten or not."""
        row = self.con.execute("SELECT name FROM buckets WHERE lower(stem) = lower(?) ORDER BY created_at LIMIT 1",
                               [stem]).fetchone()
        return row[0] if row else None

    def forget_bucket(self, name: str) -> None:
        """Mark a bucket forgotten (its chunks are never synthesized again); create the row when
        the article was written by hand, so the name stays taken."""
        self.con.execute(
            "INSERT INTO buckets (name, description, centroid, size, created_at, forgotten, stem) "
            "VALUES (?, '', NULL, 0, ?, TRUE, ?) ON CONFLICT (name) DO UPDATE SET forgotten = TRUE",
            [name, _now(), self._free_stem(name)],
        )

    def taken_bucket_names(self) -> set[str]:
        """Casefolded names of every bucket, forgotten ones included: the cluster stage must not
        name a new bucket after one the user forgot (it would re-create that article)."""
        return {r[0].casefold() for r in self.con.execute("SELECT name FROM buckets").fetchall()}

    def conversation_ids_with_prefix(self, prefix: str, include_forgotten: bool = True) -> list[str]:
        """Full ids starting with ``prefix`` (lowercase hex); forgotten ones too, so an
        interrupted `forget --conversation` can be finished by running it again."""
        sql = "SELECT id FROM conversations WHERE starts_with(id, $p)"
        if include_forgotten:
            sql += " UNION SELECT id FROM forgotten_conversations WHERE starts_with(id, $p)"
        return sorted(r[0] for r in self.con.execute(sql, {"p": prefix}).fetchall())

    def forget_conversation(self, cid: str) -> dict[str, int]:
        """Delete a conversation and everything derived from it; leave a tombstone. One transaction.

        Returns rows deleted per table. The source watermark is kept: the file may hold other
        conversations, and the tombstone makes `upsert_conversation` skip this one.
        """
        deleted: dict[str, int] = {}
        chunk_ids = [r[0] for r in self.con.execute("SELECT id FROM chunks WHERE conversation_id = ?", [cid]).fetchall()]
        units = [f"{b}/{c}" for b, c in self.con.execute(
            "SELECT bucket, chunk_id FROM chunk_buckets WHERE list_contains(?::VARCHAR[], chunk_id)", [chunk_ids]).fetchall()]

        def delete(table: str, where: str, params: list[Any]) -> None:
            n = int(self._scalar(f"SELECT count(*) FROM {table} WHERE {where}", params))
            if n:
                self.con.execute(f"DELETE FROM {table} WHERE {where}", params)
            deleted[table] = deleted.get(table, 0) + n

        with self.transaction():
            source = self.con.execute("SELECT source FROM conversations WHERE id = ?", [cid]).fetchone()
            delete("synthesized_bucket_chunks", "list_contains(?::VARCHAR[], chunk_id)", [chunk_ids])
            delete("chunk_buckets", "list_contains(?::VARCHAR[], chunk_id)", [chunk_ids])
            delete("bucket_proposals", "list_contains(?::VARCHAR[], chunk_id)", [chunk_ids])
            # Units are a conversation (chunk), a chunk (cluster) or bucket/chunk (synthesize).
            units_of = "unit = ? OR list_contains(?::VARCHAR[], unit) OR list_contains(?::VARCHAR[], unit)"
            delete("unit_results", units_of, [cid, chunk_ids, units])
            delete("unit_attempts", units_of, [cid, chunk_ids, units])
            # A journaled write that still names one of these chunks: drop the chunk from it.
            for bucket, ids in self.con.execute("SELECT bucket, chunk_ids FROM synthesis_intents").fetchall():
                if set(ids) & set(chunk_ids):
                    self.con.execute("UPDATE synthesis_intents SET chunk_ids = ? WHERE bucket = ?",
                                     [[i for i in ids if i not in chunk_ids], bucket])
            delete("chunks", "conversation_id = ?", [cid])
            delete("messages", "conversation_id = ?", [cid])
            delete("conversations", "id = ?", [cid])
            self.con.execute("INSERT OR IGNORE INTO forgotten_conversations VALUES (?, ?, ?)",
                             [cid, source[0] if source else None, _now()])
        return deleted

"""Ledger part: chunks, buckets, the synthesis journal, unit attempts and model-stage bookkeeping."""

from collections.abc import Sequence
from datetime import datetime
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import duckdb

from stores.ledger_time import naive as _naive
from stores.ledger_time import now as _now


class PipelineMixin:
    """Methods of :class:`stores.ledger.Ledger`; they use ``self.con`` and ``self.transaction``."""

    con: duckdb.DuckDBPyConnection
    if TYPE_CHECKING:  # provided by Ledger and EditorialMixin
        def transaction(self) -> AbstractContextManager[None]: ...

        def _free_stem(self, name: str) -> str: ...

    # -- chunks and buckets -------------------------------------------------------------------
    def chunked_message_ids(self, cid: str) -> set[str]:
        rows = self.con.execute("SELECT message_ids FROM chunks WHERE conversation_id = ?", [cid]).fetchall()
        return {m for r in rows for m in r[0]}

    def add_chunk(self, chunk_id: str, cid: str, message_ids: list[str], label: str, text: str,
                  vector: list[float] | None, run_id: str) -> None:
        self.con.execute(
            "INSERT OR IGNORE INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [chunk_id, cid, message_ids, label, text, vector, _now(), run_id],
        )

    def chunk(self, chunk_id: str) -> dict[str, Any]:
        row = self.con.execute(
            "SELECT c.id, c.conversation_id, c.label, c.text, c.message_ids, v.source, v.title, "
            "coalesce(v.started_at, v.updated_at) FROM chunks c JOIN conversations v ON v.id = c.conversation_id "
            "WHERE c.id = ?", [chunk_id]).fetchone()
        if row is None:
            raise LookupError(f"no chunk {chunk_id} in the ledger")
        keys = ("id", "conversation_id", "label", "text", "message_ids", "source", "conversation_title", "date")
        return dict(zip(keys, row))

    def unassigned_chunks(self) -> list[tuple[str, list[float]]]:
        return [(r[0], r[1]) for r in self.con.execute(
            "SELECT id, vector FROM chunks WHERE id NOT IN (SELECT chunk_id FROM chunk_buckets) ORDER BY created_at, id"
        ).fetchall()]

    def buckets(self, include_forgotten: bool = False) -> list[dict[str, Any]]:
        sql = "SELECT name, description, centroid, size, forgotten FROM buckets"
        if not include_forgotten:
            sql += " WHERE NOT forgotten"
        keys = ("name", "description", "centroid", "size", "forgotten")
        return [dict(zip(keys, r)) for r in self.con.execute(sql + " ORDER BY name").fetchall()]

    def upsert_bucket(self, name: str, description: str, centroid: list[float], size: int) -> None:
        # Columns named (migration 4 added `stem`); a new bucket gets its file stem now.
        stem = None if self.con.execute("SELECT 1 FROM buckets WHERE name = ?", [name]).fetchone() \
            else self._free_stem(name)
        self.con.execute(
            "INSERT INTO buckets (name, description, centroid, size, created_at, forgotten, stem) "
            "VALUES (?, ?, ?, ?, ?, FALSE, ?) ON CONFLICT (name) DO UPDATE SET "
            "description = excluded.description, centroid = excluded.centroid, size = excluded.size",
            [name, description, centroid, size, _now(), stem],
        )

    def assign(self, chunk_id: str, bucket: str, similarity: float, run_id: str) -> None:
        self.con.execute("INSERT OR IGNORE INTO chunk_buckets VALUES (?, ?, ?, ?)", [chunk_id, bucket, similarity, run_id])

    def assigned_chunk_ids(self, limit: int) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT chunk_id FROM chunk_buckets ORDER BY chunk_id LIMIT ?", [limit]).fetchall()]

    def pending_by_bucket(self) -> dict[str, list[str]]:
        """Chunks assigned to a bucket but not yet synthesized into its article (not parked)."""
        rows = self.con.execute("""
            SELECT cb.bucket, cb.chunk_id FROM chunk_buckets cb
            JOIN buckets b ON b.name = cb.bucket AND NOT b.forgotten
            JOIN chunks c ON c.id = cb.chunk_id
            JOIN conversations v ON v.id = c.conversation_id AND NOT v.ignored
            WHERE NOT EXISTS (SELECT 1 FROM synthesized_bucket_chunks s WHERE s.bucket = cb.bucket AND s.chunk_id = cb.chunk_id)
              AND NOT EXISTS (SELECT 1 FROM unit_attempts u WHERE u.stage = 'synthesize' AND u.unit = cb.bucket || '/' || cb.chunk_id AND u.parked)
            ORDER BY cb.bucket, c.created_at, c.id""").fetchall()
        out: dict[str, list[str]] = {}
        for bucket, chunk_id in rows:
            out.setdefault(bucket, []).append(chunk_id)
        return out

    def synthesized_chunks(self, bucket: str) -> list[str]:
        return [r[0] for r in self.con.execute(
            "SELECT chunk_id FROM synthesized_bucket_chunks WHERE bucket = ? ORDER BY synthesized_at, chunk_id", [bucket]
        ).fetchall()]

    # -- the synthesis journal -----------------------------------------------------------------
    def record_intent(self, bucket: str, chunk_ids: list[str], article_hash: str, run_id: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO synthesis_intents VALUES (?, ?, ?, ?, ?)",
                         [bucket, chunk_ids, article_hash, run_id, _now()])

    def intents(self) -> list[dict[str, Any]]:
        keys = ("bucket", "chunk_ids", "article_hash", "run_id")
        return [dict(zip(keys, r)) for r in self.con.execute(
            "SELECT bucket, chunk_ids, article_hash, run_id FROM synthesis_intents").fetchall()]

    def complete_intent(self, bucket: str, committed: bool) -> None:
        """Turn an intent into synthesized rows (when its file was written) or drop it."""
        with self.transaction():
            row = self.con.execute("SELECT chunk_ids, article_hash, run_id FROM synthesis_intents WHERE bucket = ?",
                                   [bucket]).fetchone()
            if row and committed:
                now = _now()
                for chunk_id in row[0]:
                    self.con.execute("INSERT OR IGNORE INTO synthesized_bucket_chunks VALUES (?, ?, ?, ?, ?)",
                                     [bucket, chunk_id, row[2], row[1], now])
            self.con.execute("DELETE FROM synthesis_intents WHERE bucket = ?", [bucket])

    def note_attempt(self, stage: str, unit: str, reason: str, max_attempts: int) -> bool:
        """Count a failed attempt; returns True when the unit is now parked."""
        row = self.con.execute("SELECT attempts FROM unit_attempts WHERE stage = ? AND unit = ?", [stage, unit]).fetchone()
        attempts = (row[0] if row else 0) + 1
        parked = attempts >= max_attempts
        self.con.execute("INSERT OR REPLACE INTO unit_attempts VALUES (?, ?, ?, ?, ?, ?)",
                         [stage, unit, attempts, parked, reason, _now()])
        return parked


    # -- model-backed stages: prompt hashes, proposals, pending Meta writes, backlog ---------------
    def record_unit_result(self, stage: str, unit: str, prompt_hash: str | None, method: str,
                           reason: str | None, run_id: str) -> None:
        """Remember which prompt and path (model, fallback, rejected) made a unit's result."""
        self.con.execute("INSERT OR REPLACE INTO unit_results VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [stage, unit, prompt_hash, method, reason, run_id, _now()])

    def unit_results(self, stage: str) -> dict[str, dict[str, Any]]:
        keys = ("prompt_hash", "method", "reason", "run_id")
        return {r[0]: dict(zip(keys, r[1:])) for r in self.con.execute(
            "SELECT unit, prompt_hash, method, reason, run_id FROM unit_results WHERE stage = ? ORDER BY unit",
            [stage]).fetchall()}

    def unpark_for_new_prompt(self, stage: str, prompt_hash: str) -> int:
        """Give parked units a fresh set of attempts when they failed under another prompt."""
        rows = self.con.execute(
            "SELECT u.unit FROM unit_attempts u JOIN unit_results r ON r.stage = u.stage AND r.unit = u.unit "
            "WHERE u.stage = ? AND u.parked AND r.prompt_hash IS DISTINCT FROM ?", [stage, prompt_hash]).fetchall()
        for (unit,) in rows:
            self.con.execute("DELETE FROM unit_attempts WHERE stage = ? AND unit = ?", [stage, unit])
        return len(rows)

    def parked_units(self, stage: str) -> dict[str, str]:
        return {r[0]: r[1] for r in self.con.execute(
            "SELECT unit, reason FROM unit_attempts WHERE stage = ? AND parked ORDER BY unit", [stage]).fetchall()}

    def propose_bucket(self, name: str, chunk_id: str, description: str, run_id: str) -> None:
        self.con.execute("INSERT OR IGNORE INTO bucket_proposals VALUES (?, ?, ?, ?, ?)",
                         [name, chunk_id, description, run_id, _now()])

    def bucket_proposals(self) -> dict[str, list[tuple[str, str]]]:
        """Proposed bucket name → [(chunk id, description)], oldest first."""
        out: dict[str, list[tuple[str, str]]] = {}
        for name, chunk_id, desc in self.con.execute(
                "SELECT name, chunk_id, description FROM bucket_proposals ORDER BY created_at, chunk_id").fetchall():
            out.setdefault(name, []).append((chunk_id, desc))
        return out

    def drop_bucket_proposal(self, name: str) -> None:
        self.con.execute("DELETE FROM bucket_proposals WHERE name = ?", [name])

    def add_pending_bucket_page(self, name: str, description: str, run_id: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO pending_bucket_pages VALUES (?, ?, ?, ?)",
                         [name, description, run_id, _now()])

    def pending_bucket_pages(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self.con.execute(
            "SELECT name, description FROM pending_bucket_pages ORDER BY created_at, name").fetchall()}

    def clear_pending_bucket_pages(self) -> None:
        self.con.execute("DELETE FROM pending_bucket_pages")

    def last_article_hashes(self) -> dict[str, str]:
        """Bucket → hash of the article text memvault last wrote for it."""
        return {r[0]: r[1] for r in self.con.execute(
            "SELECT bucket, arg_max(article_hash, synthesized_at) FROM synthesized_bucket_chunks GROUP BY bucket"
        ).fetchall()}

    def conversations_updated_since(self, since: datetime) -> set[str]:
        return {r[0] for r in self.con.execute(
            "SELECT id FROM conversations WHERE coalesce(updated_at, started_at, ingested_at) >= ?",
            [_naive(since)]).fetchall()}

    def chunk_conversation_ids(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        if not chunk_ids:
            return {}
        return {r[0]: r[1] for r in self.con.execute(
            "SELECT id, conversation_id FROM chunks WHERE list_contains(?, id)", [list(chunk_ids)]).fetchall()}

    def chunks_per_conversation(self) -> float:
        """Average chunks per chunked conversation (1.0 before any), for dry-run estimates."""
        row = self.con.execute("SELECT count(*), count(DISTINCT conversation_id) FROM chunks").fetchone()
        return float(row[0] / row[1]) if row and row[1] else 1.0

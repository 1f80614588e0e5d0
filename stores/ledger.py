"""The ledger: DuckDB bookkeeping and the durable copy of every transcript.

Opened only by the holder of the writer lock (DuckDB refuses every other process while one
holds the file read-write). Numbered migrations are applied on open, after the file is
copied aside, so a failed migration never costs the only copy of a user's history.
"""

import json
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from memvault.models import Conversation
from stores.migrations import MIGRATIONS


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _naive(ts: datetime | None) -> datetime | None:
    """DuckDB TIMESTAMP is naive; we store UTC."""
    if ts is None:
        return None
    return ts.astimezone(timezone.utc).replace(tzinfo=None) if ts.tzinfo else ts


class Ledger:
    """Narrow interface over ``ledger.duckdb``."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if not read_only:
            self._migrate_with_backup()
        self.con = duckdb.connect(str(path), read_only=read_only)

    # -- schema ---------------------------------------------------------------------------
    def _migrate_with_backup(self) -> None:
        existed = self.path.exists()
        con = duckdb.connect(str(self.path))
        try:
            con.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TIMESTAMP)"
            )
            done = {r[0] for r in con.execute("SELECT version FROM schema_migrations").fetchall()}
            pending = [m for m in MIGRATIONS if m[0] not in done]
            if not pending:
                return
            if existed and done:
                con.execute("CHECKPOINT")
                con.close()
                backup = self.path.with_name(f"{self.path.name}.pre-v{pending[0][0]}.bak")
                shutil.copy2(self.path, backup)
                con = duckdb.connect(str(self.path))
            for version, name, fn in pending:
                con.execute("BEGIN")
                fn(con)
                con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", [version, name, _now()])
                con.execute("COMMIT")
        finally:
            con.close()

    def applied_migrations(self) -> list[int]:
        return [r[0] for r in self.con.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()]

    def close(self) -> None:
        self.con.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def checkpoint(self) -> None:
        self.con.execute("CHECKPOINT")

    # -- sources and watermarks -------------------------------------------------------------
    def watermark(self, path: str) -> dict[str, Any] | None:
        row = self.con.execute(
            "SELECT kind, size, mtime, prefix_hash, byte_offset, state FROM sources WHERE path = ?", [path]
        ).fetchone()
        if row is None:
            return None
        return {"kind": row[0], "size": row[1], "mtime": row[2], "prefix_hash": row[3],
                "byte_offset": row[4], "state": json.loads(row[5]) if row[5] else {}}

    def set_watermark(self, path: str, kind: str, size: int, mtime: float, prefix_hash: str,
                      byte_offset: int, state: dict[str, Any]) -> None:
        self.con.execute(
            "INSERT OR REPLACE INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [path, kind, size, mtime, prefix_hash, byte_offset, json.dumps(state), _now()],
        )

    # -- conversations and messages ---------------------------------------------------------
    def upsert_conversation(self, conv: Conversation) -> tuple[bool, int, int]:
        """Store a (possibly partial) conversation; returns (is_new, messages_new, messages_changed).

        Messages are matched by native id: a re-parse of the same file adds nothing, an
        appended session adds only its new messages, and an edited message is updated.
        """
        cid = conv.id
        now = _now()
        existing = self.con.execute("SELECT title, started_at, updated_at FROM conversations WHERE id = ?", [cid]).fetchone()
        known = {
            r[0]: (r[1], r[2]) for r in self.con.execute(
                "SELECT native_id, text, seq FROM messages WHERE conversation_id = ?", [cid]
            ).fetchall()
        } if existing else {}
        next_seq = max((v[1] for v in known.values()), default=-1) + 1
        new_rows, changed = [], 0
        for m in conv.messages:
            if m.native_id in known:
                if known[m.native_id][0] != m.text:
                    self.con.execute(
                        "UPDATE messages SET text = ?, role = ?, kind = ?, low_value = ? WHERE conversation_id = ? AND native_id = ?",
                        [m.text, m.role, m.kind, m.low_value, cid, m.native_id],
                    )
                    changed += 1
                continue
            known[m.native_id] = (m.text, next_seq)
            new_rows.append([cid, m.native_id, m.parent_native_id, next_seq, m.role, m.kind, m.text,
                             _naive(m.timestamp), m.low_value])
            next_seq += 1
        if new_rows:
            self.con.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", new_rows)
        touched = bool(new_rows or changed)
        if existing is None:
            self.con.execute(
                "INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)",
                [cid, conv.source, conv.native_id, conv.agent_id, conv.parent_conversation, conv.title,
                 conv.project, _naive(conv.started_at), _naive(conv.updated_at), conv.leaf_native_id, now, now],
            )
        else:
            self.con.execute(
                """UPDATE conversations SET
                     title = CASE WHEN ? <> '' THEN ? ELSE title END,
                     started_at = coalesce(started_at, ?),
                     updated_at = greatest(coalesce(updated_at, ?), coalesce(?, updated_at)),
                     leaf_native_id = coalesce(?, leaf_native_id),
                     project = coalesce(project, ?),
                     changed_at = CASE WHEN ? THEN ? ELSE changed_at END
                   WHERE id = ?""",
                [conv.title, conv.title, _naive(conv.started_at), _naive(conv.updated_at), _naive(conv.updated_at),
                 conv.leaf_native_id if touched else None, conv.project, touched, now, cid],
            )
        return existing is None, len(new_rows), changed

    def conversation(self, cid: str) -> dict[str, Any] | None:
        row = self.con.execute(
            "SELECT id, source, native_id, title, project, started_at, updated_at, leaf_native_id FROM conversations WHERE id = ?",
            [cid],
        ).fetchone()
        if row is None:
            return None
        keys = ("id", "source", "native_id", "title", "project", "started_at", "updated_at", "leaf_native_id")
        return dict(zip(keys, row))

    def conversation_ids(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT id FROM conversations ORDER BY id").fetchall()]

    def active_thread(self, cid: str) -> list[dict[str, Any]]:
        """Messages of the active thread, root first: walk parents from the leaf.

        Messages whose parent is unknown start a new root; when the walk from the leaf
        cannot reach every message of a linear transcript, the thread is the walk alone.
        """
        rows = self.con.execute(
            "SELECT native_id, parent_native_id, seq, role, kind, text, timestamp, low_value FROM messages "
            "WHERE conversation_id = ? ORDER BY seq", [cid],
        ).fetchall()
        if not rows:
            return []
        keys = ("native_id", "parent_native_id", "seq", "role", "kind", "text", "timestamp", "low_value")
        by_id = {r[0]: dict(zip(keys, r)) for r in rows}
        leaf = self.con.execute("SELECT leaf_native_id FROM conversations WHERE id = ?", [cid]).fetchone()[0]
        node = by_id.get(leaf) if leaf else None
        node = node or by_id[rows[-1][0]]
        path, seen = [], set()
        while node is not None and node["native_id"] not in seen:
            seen.add(node["native_id"])
            path.append(node)
            node = by_id.get(node["parent_native_id"]) if node["parent_native_id"] else None
        path.reverse()
        return path

    def conversations_to_chunk(self) -> list[str]:
        return [r[0] for r in self.con.execute(
            "SELECT id FROM conversations WHERE chunked_at IS NULL OR changed_at > chunked_at ORDER BY started_at, id"
        ).fetchall()]

    def mark_chunked(self, cid: str) -> None:
        self.con.execute("UPDATE conversations SET chunked_at = ? WHERE id = ?", [_now(), cid])

    def conversations_to_index(self) -> list[str]:
        return [r[0] for r in self.con.execute(
            "SELECT id FROM conversations WHERE indexed_at IS NULL OR changed_at > indexed_at ORDER BY id"
        ).fetchall()]

    def mark_indexed(self, cids: Sequence[str]) -> None:
        now = _now()
        for cid in cids:
            self.con.execute("UPDATE conversations SET indexed_at = ? WHERE id = ?", [now, cid])

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
        self.con.execute(
            "INSERT INTO buckets VALUES (?, ?, ?, ?, ?, FALSE) ON CONFLICT (name) DO UPDATE SET "
            "description = excluded.description, centroid = excluded.centroid, size = excluded.size",
            [name, description, centroid, size, _now()],
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

    # -- runs -------------------------------------------------------------------------------------
    def start_run(self, run_id: str, engine: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, NULL, 'running', ?, NULL)", [run_id, _now(), engine])

    def finish_run(self, run_id: str, status: str, report: dict[str, Any]) -> None:
        self.con.execute("UPDATE runs SET finished_at = ?, status = ?, report = ? WHERE id = ?",
                         [_now(), status, json.dumps(report, default=str), run_id])

    def record_stage(self, run_id: str, stage: str, status: str, seconds: float, counts: dict[str, Any]) -> None:
        self.con.execute(
            "INSERT OR REPLACE INTO stage_results VALUES (?, ?, ?, ?, ?, ?, ?)",
            [run_id, stage, status, seconds, int(counts.get("calls", 0)), int(counts.get("tokens", 0)),
             json.dumps(counts, default=str)],
        )

    def last_run(self) -> dict[str, Any] | None:
        row = self.con.execute(
            "SELECT id, status, finished_at FROM runs WHERE finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT 1"
        ).fetchone()
        return None if row is None else {"run_id": row[0], "status": row[1], "finished_at": row[2].isoformat() + "Z"}

    def counts(self) -> dict[str, int]:
        out = {}
        for table in ("conversations", "messages", "chunks"):
            out[table] = self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        out["buckets"] = self.con.execute("SELECT count(*) FROM buckets WHERE NOT forgotten").fetchone()[0]
        return out

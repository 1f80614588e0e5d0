"""The ledger: DuckDB bookkeeping and the durable copy of every transcript.

Opened only by the holder of the writer lock (DuckDB refuses every other process while one
holds the file read-write). Numbered migrations are applied on open, after the file is
copied aside, so a failed migration never costs the only copy of a user's history.
"""

import json
import os
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
        # Drop the handle too: callers (and Prefect's task-parameter bookkeeping) may keep the
        # Ledger object alive, and a live DuckDB object at interpreter exit triggers leak warnings.
        self.con.close()
        self.con = None  # type: ignore[assignment]

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
        self.set_watermarks([(path, kind, size, mtime, prefix_hash, byte_offset, state)])

    def set_watermarks(self, marks: Sequence[tuple[str, str, int, float, str, int, dict[str, Any]]]) -> None:
        """Store many files' watermarks (path, kind, size, mtime, prefix_hash, byte_offset, state)
        in one statement; a path given twice keeps its last watermark."""
        latest = {m[0]: m for m in marks}
        if not latest:
            return
        import pyarrow as pa  # not before: a no-change run stores nothing and need not load it

        now = _now()
        rows = list(zip(*[(*m[:6], json.dumps(m[6]), now) for m in latest.values()]))
        types = (pa.string(), pa.string(), pa.int64(), pa.float64(), pa.string(), pa.int64(), pa.string(),
                 pa.timestamp("us"))
        names = ("path", "kind", "size", "mtime", "prefix_hash", "byte_offset", "state", "updated_at")
        self._with_arrow("_incoming_marks", pa.table({n: pa.array(c, type=t) for n, c, t in zip(names, rows, types)}),
                         f"INSERT OR REPLACE INTO sources ({', '.join(names)}) SELECT {', '.join(names)} "
                         "FROM _incoming_marks")

    def _with_arrow(self, name: str, table: Any, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Run ``sql`` with the Arrow ``table`` visible as ``name`` (one statement, not one per row)."""
        # DuckDB refuses to register while an earlier execute() still has rows unread (any
        # method that used fetchone); finish that result first.
        self.con.complete()
        self.con.register(name, table)
        try:
            return self.con.execute(sql, list(params)).fetchall()
        finally:
            self.con.unregister(name)

    @contextmanager
    def bulk_load(self, memory_limit: str = "64MB") -> Iterator[None]:
        """Settings for a long ingest: a capped buffer pool (memory stays flat on a huge file,
        DuckDB spills to its file instead of growing) and no insertion-order bookkeeping.
        The previous values come back afterwards."""
        keys = ("memory_limit", "preserve_insertion_order", "checkpoint_threshold")
        before = {k: self.con.execute(f"SELECT current_setting('{k}')").fetchone()[0] for k in keys}
        self.con.execute(f"SET memory_limit = '{memory_limit}'")
        self.con.execute("SET preserve_insertion_order = false")
        # Fewer, larger checkpoints: each one recompresses the table's last row group.
        self.con.execute("SET checkpoint_threshold = '64MB'")
        try:
            yield
        finally:
            if self.con is not None:
                for k, v in before.items():
                    self.con.execute(f"SET {k} = '{v}'")

    # -- conversations and messages ---------------------------------------------------------
    def upsert_conversation(self, conv: Conversation) -> tuple[bool, int, int]:
        """Store a (possibly partial) conversation; returns (is_new, messages_new, messages_changed).

        Messages are matched by native id: a re-parse of the same file adds nothing, an
        appended session adds only its new messages, and an edited message is updated.
        """
        return self.upsert_conversations([conv])[0]

    def upsert_conversations(self, convs: Sequence[Conversation]) -> list[tuple[bool, int, int]]:
        """``upsert_conversation`` for many at once, in a fixed handful of statements.

        Ingest stores thousands of small sessions: per-conversation statements (each a few
        milliseconds in DuckDB) would dominate it. A conversation given twice (a copied file,
        consecutive slices) is merged in order, as if upserted one call after the other.
        """
        if not convs:
            return []
        import pyarrow as pa  # not before: a no-change run stores nothing and need not load it

        now = _now()
        ids = [c.id for c in convs]
        batch = list(dict.fromkeys(ids))
        in_batch = "id IN (SELECT unnest(?::VARCHAR[]))"
        forgotten = {r[0] for r in self.con.execute(f"SELECT id FROM forgotten_conversations WHERE {in_batch}",
                                                    [batch]).fetchall()}
        existing = {r[0] for r in self.con.execute(f"SELECT id FROM conversations WHERE {in_batch}", [batch]).fetchall()}
        # Only the incoming ids are looked up (a join on the batch's keys), never whole
        # conversations: a huge session ingested slice by slice must not reload all it has.
        keys = {(cid, m.native_id): None for cid, c in zip(ids, convs) if cid in existing for m in c.messages}
        known: dict[tuple[str, str], str] = {}
        if keys:
            kc, kn = zip(*keys)
            table = pa.table({"cid": pa.array(kc, pa.string()), "nid": pa.array(kn, pa.string())})
            # Keys first, texts only for the keys found: a join that carried `text` would read
            # the text of every stored message of the conversation, on every slice.
            found = self._with_arrow("_incoming_keys", table, "SELECT cid, nid FROM _incoming_keys k WHERE EXISTS "
                                     "(SELECT 1 FROM messages m WHERE m.conversation_id = k.cid AND m.native_id = k.nid)")
            if found:
                fc, fn = zip(*found)
                table = pa.table({"cid": pa.array(fc, pa.string()), "nid": pa.array(fn, pa.string())})
                known = {(r[0], r[1]): r[2] for r in self._with_arrow(
                    "_incoming_keys", table, "SELECT m.conversation_id, m.native_id, m.text FROM messages m "
                    "JOIN _incoming_keys k ON m.conversation_id = k.cid AND m.native_id = k.nid")}
        next_seq = {r[0]: r[1] + 1 for r in self.con.execute(
            "SELECT conversation_id, max(seq) FROM messages WHERE conversation_id IN (SELECT unnest(?::VARCHAR[])) "
            "GROUP BY conversation_id", [list(existing)]).fetchall()} if existing else {}
        staged: dict[tuple[str, str], list[Any]] = {}  # new message rows of this batch
        changes: dict[tuple[str, str], list[Any]] = {}  # updates of stored messages
        rows: dict[str, dict[str, Any]] = {}  # conversation rows: inserted if new, else merged in
        out: list[tuple[bool, int, int]] = []
        for cid, conv in zip(ids, convs):
            if cid in forgotten:
                out.append((False, 0, 0))  # `memvault forget --conversation`: never stored again
                continue
            is_new = cid not in existing and cid not in rows
            seq, n_new, n_changed = next_seq.get(cid, 0), 0, 0
            for m in conv.messages:
                key = (cid, m.native_id)
                row = staged.get(key)
                if row is not None:  # added earlier in this batch: change the pending row
                    if row[6] != m.text:
                        row[4:7], row[8] = [m.role, m.kind, m.text], m.low_value
                        n_changed += 1
                elif key in known:
                    if known[key] != m.text:
                        known[key] = m.text
                        changes[key] = [cid, m.native_id, m.role, m.kind, m.text, m.low_value]
                        n_changed += 1
                else:
                    # Arrow stores an aware timestamp as UTC, what _naive does, at C speed.
                    staged[key] = [cid, m.native_id, m.parent_native_id, seq, m.role, m.kind, m.text,
                                   m.timestamp, m.low_value]
                    seq, n_new = seq + 1, n_new + 1
            next_seq[cid] = seq
            self._merge_conversation_row(rows, cid, conv, is_new, bool(n_new or n_changed))
            out.append((is_new, n_new, n_changed))
        self._write_upserts(rows, existing, staged, changes, now)
        return out

    @staticmethod
    def _merge_conversation_row(rows: dict[str, dict[str, Any]], cid: str, conv: Conversation, is_new: bool,
                                touched: bool) -> None:
        """Fold ``conv`` into its pending row with the rules of an update (see _write_upserts)."""
        row = rows.get(cid)
        if row is None:
            row = rows[cid] = {"source": conv.source, "native_id": conv.native_id, "agent_id": conv.agent_id,
                               "parent_id": conv.parent_conversation, "title": "", "project": None,
                               "started_at": None, "updated_at": None, "leaf_native_id": None, "touched": is_new}
            if is_new:  # a new conversation takes its leaf whether or not it has messages
                row["leaf_native_id"] = conv.leaf_native_id
        if conv.title:
            row["title"] = conv.title
        row["started_at"] = row["started_at"] or _naive(conv.started_at)
        updated = [t for t in (row["updated_at"], _naive(conv.updated_at)) if t is not None]
        row["updated_at"] = max(updated) if updated else None
        if touched and conv.leaf_native_id:
            row["leaf_native_id"] = conv.leaf_native_id
        row["project"] = row["project"] or conv.project
        row["touched"] = row["touched"] or touched

    def _write_upserts(self, rows: dict[str, dict[str, Any]], existing: set[str],
                       staged: dict[tuple[str, str], list[Any]], changes: dict[tuple[str, str], list[Any]],
                       now: datetime) -> None:
        """The statements of ``upsert_conversations``: one per table and kind of change."""
        import pyarrow as pa

        s, ts = pa.string(), pa.timestamp("us")
        cols = {"id": s, "source": s, "native_id": s, "agent_id": s, "parent_id": s, "title": s, "project": s,
                "started_at": ts, "updated_at": ts, "leaf_native_id": s}

        def conv_table(ids: list[str], extra: dict[str, Any]) -> Any:
            data = {n: pa.array([cid if n == "id" else rows[cid][n] for cid in ids], type=t) for n, t in cols.items()}
            return pa.table({**data, **{n: pa.array([v(cid) for cid in ids], type=t) for n, (v, t) in extra.items()}})

        new_ids = [cid for cid in rows if cid not in existing]
        if new_ids:
            # Columns named: later migrations add columns (with defaults) to this table.
            names = ", ".join([*cols, "ingested_at", "changed_at"])
            self._with_arrow("_incoming_convs", conv_table(new_ids, {"ingested_at": (lambda _: now, ts),
                                                                     "changed_at": (lambda _: now, ts)}),
                             f"INSERT INTO conversations ({names}) SELECT {names} FROM _incoming_convs")
        old_ids = [cid for cid in rows if cid in existing]
        if old_ids:
            self._with_arrow("_incoming_convs", conv_table(old_ids, {"touched": (lambda c: rows[c]["touched"], pa.bool_())}),
                             """UPDATE conversations AS c SET
                                  title = CASE WHEN u.title <> '' THEN u.title ELSE c.title END,
                                  started_at = coalesce(c.started_at, u.started_at),
                                  updated_at = greatest(coalesce(c.updated_at, u.updated_at),
                                                        coalesce(u.updated_at, c.updated_at)),
                                  leaf_native_id = coalesce(u.leaf_native_id, c.leaf_native_id),
                                  project = coalesce(c.project, u.project),
                                  changed_at = CASE WHEN u.touched THEN ?::TIMESTAMP ELSE c.changed_at END
                                FROM _incoming_convs u WHERE c.id = u.id""", [now])
        if staged:
            names = ("conversation_id", "native_id", "parent_native_id", "seq", "role", "kind", "text",
                     "timestamp", "low_value")
            types = (s, s, s, pa.int64(), s, s, s, ts, pa.bool_())
            data = list(zip(*staged.values()))
            staged.clear()  # the rows now live in Arrow buffers: let the Python copies go
            table = pa.table({n: pa.array(c, type=t) for n, c, t in zip(names, data, types)})
            del data
            self._with_arrow("_incoming_messages", table, f"INSERT INTO messages ({', '.join(names)}) "
                             f"SELECT {', '.join(names)} FROM _incoming_messages")
        if changes:
            names = ("cid", "nid", "role", "kind", "text", "low_value")
            data = list(zip(*changes.values()))
            table = pa.table({n: pa.array(c, type=t) for n, c, t in zip(names, data, (s, s, s, s, s, pa.bool_()))})
            self._with_arrow("_changed_messages", table,
                             "UPDATE messages AS m SET text = u.text, role = u.role, kind = u.kind, "
                             "low_value = u.low_value FROM _changed_messages u "
                             "WHERE m.conversation_id = u.cid AND m.native_id = u.nid")

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
            "SELECT id FROM conversations WHERE (chunked_at IS NULL OR changed_at > chunked_at) AND NOT ignored "
            "ORDER BY started_at, id"
        ).fetchall()]

    def mark_chunked(self, cid: str) -> None:
        self.con.execute("UPDATE conversations SET chunked_at = ? WHERE id = ?", [_now(), cid])

    def conversations_to_index(self) -> list[str]:
        return [r[0] for r in self.con.execute(
            "SELECT id FROM conversations WHERE (indexed_at IS NULL OR changed_at > indexed_at) AND NOT ignored ORDER BY id"
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

    # -- ignored topics, small named state, rewriting stored text ----------------------------------
    def state_value(self, key: str) -> str | None:
        row = self.con.execute("SELECT value FROM ledger_state WHERE key = ?", [key]).fetchone()
        return None if row is None else row[0]

    def set_state_value(self, key: str, value: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO ledger_state VALUES (?, ?, ?)", [key, value, _now()])

    def apply_ignored_topics(self, pattern: str | None, ids: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
        """Set ``ignored`` where the regex ``pattern`` matches the title or any message text.

        Judges ``ids`` only (or every conversation); ``None`` as pattern ignores nothing.
        Returns (newly ignored, no longer ignored). A conversation let back in is marked
        changed so the chunk and index stages pick it up again.
        """
        scope, params = ("TRUE", {}) if ids is None else ("list_contains($ids, c.id)", {"ids": list(ids)})
        if pattern is None:
            hit = "FALSE"
        else:
            hit = ("(regexp_matches(coalesce(c.title, ''), $pat) OR EXISTS (SELECT 1 FROM messages m "
                   "WHERE m.conversation_id = c.id AND regexp_matches(m.text, $pat)))")
            params["pat"] = pattern
        rows = self.con.execute(
            f"SELECT c.id, {hit} AS hit FROM conversations c WHERE {scope} AND {hit} <> c.ignored", params
        ).fetchall()
        now_on = [r[0] for r in rows if r[1]]
        now_off = [r[0] for r in rows if not r[1]]
        if now_on:
            self.con.execute("UPDATE conversations SET ignored = TRUE WHERE list_contains(?, id)", [now_on])
        if now_off:
            self.con.execute("UPDATE conversations SET ignored = FALSE, changed_at = ? WHERE list_contains(?, id)",
                             [_now(), now_off])
        return now_on, now_off

    def ignored_conversation_ids(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT id FROM conversations WHERE ignored ORDER BY id").fetchall()]

    def clear_indexed(self, cids: Sequence[str]) -> None:
        """Forget that these conversations were indexed (their nodes were removed)."""
        if cids:
            self.con.execute("UPDATE conversations SET indexed_at = NULL WHERE list_contains(?, id)", [list(cids)])

    # Every stored text a transcript can reach: (table, key columns, text column).
    TEXT_COLUMNS: tuple[tuple[str, tuple[str, ...], str], ...] = (
        ("conversations", ("id",), "title"),
        ("messages", ("conversation_id", "native_id"), "text"),
        ("chunks", ("id",), "text"),
        ("chunks", ("id",), "label"),
        ("buckets", ("name",), "description"),
        ("sources", ("path",), "state"),
    )

    def rewrite_texts(self, fn: Any, batch: int = 10_000) -> tuple[dict[str, int], set[str]]:
        """Apply ``fn(place, text) -> text`` to every stored transcript text; update changed rows.

        ``place`` is ``table.column`` (``sources.state`` holds JSON, so ``fn`` may parse it).

        Returns rows changed per ``table.column`` and the conversations whose text changed.
        Rows are streamed through a second cursor, so memory holds only the changed ones.
        """
        counts: dict[str, int] = {}
        touched: set[str] = set()
        for table, keys, column in self.TEXT_COLUMNS:
            reader = self.con.cursor()
            reader.execute(f"SELECT {', '.join(keys)}, {column} FROM {table} WHERE {column} IS NOT NULL")
            changed: list[list[Any]] = []
            while rows := reader.fetchmany(batch):
                for row in rows:
                    new = fn(f"{table}.{column}", row[-1])
                    if new != row[-1]:
                        changed.append([new, *row[:-1]])
            reader.close()
            if changed:
                where = " AND ".join(f"{k} = ?" for k in keys)
                self.con.executemany(f"UPDATE {table} SET {column} = ? WHERE {where}", changed)
                if table == "conversations":
                    touched.update(r[1] for r in changed)
                elif table == "messages":
                    touched.update(r[1] for r in changed)
                elif table == "chunks":
                    touched.update(self.chunk(r[1])["conversation_id"] for r in changed)
            counts[f"{table}.{column}"] = len(changed)
        return counts, touched

    def compact(self) -> None:
        """Rewrite the ledger file so freed blocks, which may still hold overwritten text, are gone."""
        tmp = self.path.with_name(self.path.name + ".compact")
        tmp.unlink(missing_ok=True)
        self.con.execute("CHECKPOINT")
        name = self.con.execute("SELECT current_database()").fetchone()[0]
        self.con.execute(f"ATTACH '{tmp}' AS memvault_compact")
        self.con.execute(f'COPY FROM DATABASE "{name}" TO memvault_compact')
        self.con.execute("DETACH memvault_compact")
        self.con.close()
        os.replace(tmp, self.path)
        self.con = duckdb.connect(str(self.path))

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
        return row[0] / row[1] if row[1] else 1.0

    # -- editorial: bucket file stems, forgotten buckets and conversations (migration 4) ----------
    def _free_stem(self, name: str) -> str:
        """A file stem for a new bucket: its sanitized title, suffixed `_2`, `_3`… when taken."""
        from memvault.markdown.names import title_to_stem, unique_stem

        taken = {r[0] for r in self.con.execute("SELECT stem FROM buckets WHERE stem IS NOT NULL").fetchall()}
        return unique_stem(title_to_stem(name), taken)

    def bucket_stem(self, name: str) -> str:
        """The article file stem of a bucket, stable across runs (assigned once, then stored).

        Synthesis must write `articles/<bucket_stem>.md`: two titles that sanitize alike
        ("C# Tips", "C Tips") get distinct files, and the second keeps its `_2` forever.
        """
        row = self.con.execute("SELECT stem FROM buckets WHERE name = ?", [name]).fetchone()
        if row and row[0]:
            return row[0]
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

    def is_forgotten_conversation(self, cid: str) -> bool:
        return self.con.execute("SELECT 1 FROM forgotten_conversations WHERE id = ?", [cid]).fetchone() is not None

    def forgotten_conversation_ids(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT id FROM forgotten_conversations ORDER BY id").fetchall()]

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
            n = self.con.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()[0]
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

    def watermarks(self) -> dict[str, dict[str, Any]]:
        """Every file's watermark without its parser state (one query; `watermark` has the state)."""
        rows = self.con.execute("SELECT path, kind, size, mtime, prefix_hash, byte_offset FROM sources").fetchall()
        return {r[0]: {"kind": r[1], "size": r[2], "mtime": r[3], "prefix_hash": r[4], "byte_offset": r[5]}
                for r in rows}

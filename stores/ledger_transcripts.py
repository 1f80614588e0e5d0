"""Ledger part: sources and watermarks, conversations and messages (the durable transcripts)."""

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memvault.models import Conversation
from stores.ledger_base import LedgerBase
from stores.ledger_time import naive as _naive
from stores.ledger_time import now as _now
from stores.ledger_time import updated_since
from stores.rows import ConversationRow, MessageRow, Watermark

if TYPE_CHECKING:  # pyarrow loads only when something is stored (see set_watermarks)
    import pyarrow as pa


class TranscriptsMixin(LedgerBase):
    """Methods of :class:`stores.ledger.Ledger`."""

    # -- sources and watermarks -------------------------------------------------------------
    def watermark(self, path: str) -> Watermark | None:
        """One file's watermark with its parser state."""
        row = self.con.execute(
            "SELECT kind, size, mtime, prefix_hash, byte_offset, state FROM sources WHERE path = ?", [path]
        ).fetchone()
        if row is None:
            return None
        return Watermark(kind=row[0], size=row[1], mtime=row[2], prefix_hash=row[3], byte_offset=row[4],
                         state=json.loads(row[5]) if row[5] else {})

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

    def _with_arrow(self, name: str, table: "pa.Table", sql: str, params: Sequence[Any] = ()) -> list[Any]:
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
        before = {k: self._scalar(f"SELECT current_setting('{k}')") for k in keys}
        self.con.execute(f"SET memory_limit = '{memory_limit}'")
        self._bulk_cap = self._bulk_limit = _bytes(memory_limit)
        self.con.execute("SET preserve_insertion_order = false")
        # Fewer, larger checkpoints: each one recompresses the table's last row group.
        self.con.execute("SET checkpoint_threshold = '64MB'")
        try:
            yield
        finally:
            self._bulk_cap = self._bulk_limit = 0
            if self.con is not None:
                for k, v in before.items():
                    self.con.execute(f"SET {k} = '{v}'")

    _bulk_cap = _bulk_limit = 0  # bytes: bulk_load's cap, and the limit in force (0: not bulk loading)

    def _fit_indexes(self) -> None:
        """Keep bulk_load's cap above the primary-key indexes: DuckDB cannot spill an ART index,
        so a fixed cap fails every insert once the ledger is big enough (measured: ~60 bytes a
        message; a 64 MB cap failed a 1 GB export near 700k messages). The cap is raised to the
        indexes' size plus the original cap, so working memory stays what it was."""
        if not self._bulk_cap:
            return
        art = int(self._scalar("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() "
                               "WHERE tag = 'ART_INDEX'"))
        if art + self._bulk_cap > self._bulk_limit:
            self._bulk_limit = art * 2 + self._bulk_cap  # room to grow before the next check
            self.con.execute(f"SET memory_limit = '{self._bulk_limit // 2**20}MB'")

    # -- conversations and messages ---------------------------------------------------------
    def upsert_conversations(self, convs: Sequence[Conversation]) -> list[tuple[bool, int, int]]:
        """Store (possibly partial) conversations; returns (is_new, messages_new,
        messages_changed) for each, in a fixed handful of statements.

        Messages are matched by native id: a re-parse of the same file adds nothing, an
        appended session adds only its new messages, and an edited message is updated.
        Ingest stores thousands of small sessions: per-conversation statements (each a few
        milliseconds in DuckDB) would dominate it. A conversation given twice (a copied file,
        consecutive slices) is merged in order, as if upserted one call after the other.
        """
        if not convs:
            return []
        self._fit_indexes()

        now = _now()
        ids = [c.id for c in convs]
        batch = list(dict.fromkeys(ids))
        in_batch = "id IN (SELECT unnest(?::VARCHAR[]))"
        forgotten = {r[0] for r in self.con.execute(f"SELECT id FROM forgotten_conversations WHERE {in_batch}",
                                                    [batch]).fetchall()}
        existing = {r[0] for r in self.con.execute(f"SELECT id FROM conversations WHERE {in_batch}", [batch]).fetchall()}
        known = self._stored_texts(ids, convs, existing)
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
            seq, n_new, n_changed = _stage_messages(cid, conv, next_seq.get(cid, 0), staged, changes, known)
            next_seq[cid] = seq
            self._merge_conversation_row(rows, cid, conv, is_new, bool(n_new or n_changed))
            out.append((is_new, n_new, n_changed))
        self._write_upserts(rows, existing, staged, changes, now)
        return out

    def _stored_texts(self, ids: list[str], convs: Sequence[Conversation],
                      existing: set[str]) -> dict[tuple[str, str], str]:
        """The stored text of each incoming message already in the ledger, by (conversation, native id).

        Only the incoming ids are looked up (a join on the batch's keys), never whole
        conversations: a huge session ingested slice by slice must not reload all it has.
        """
        keys = {(cid, m.native_id): None for cid, c in zip(ids, convs) if cid in existing for m in c.messages}
        if not keys:
            return {}
        import pyarrow as pa  # not before: a no-change run stores nothing and need not load it

        kc, kn = zip(*keys)
        table = pa.table({"cid": pa.array(kc, pa.string()), "nid": pa.array(kn, pa.string())})
        # Keys first, texts only for the keys found: a join that carried `text` would read
        # the text of every stored message of the conversation, on every slice.
        found = self._with_arrow("_incoming_keys", table, "SELECT cid, nid FROM _incoming_keys k WHERE EXISTS "
                                 "(SELECT 1 FROM messages m WHERE m.conversation_id = k.cid AND m.native_id = k.nid)")
        if not found:
            return {}
        fc, fn = zip(*found)
        table = pa.table({"cid": pa.array(fc, pa.string()), "nid": pa.array(fn, pa.string())})
        return {(r[0], r[1]): r[2] for r in self._with_arrow(
            "_incoming_keys", table, "SELECT m.conversation_id, m.native_id, m.text FROM messages m "
            "JOIN _incoming_keys k ON m.conversation_id = k.cid AND m.native_id = k.nid")}

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
            message_columns = ("conversation_id", "native_id", "parent_native_id", "seq", "role", "kind", "text",
                               "timestamp", "low_value")
            types = (s, s, s, pa.int64(), s, s, s, ts, pa.bool_())
            data = list(zip(*staged.values()))
            staged.clear()  # the rows now live in Arrow buffers: let the Python copies go
            table = pa.table({n: pa.array(c, type=t) for n, c, t in zip(message_columns, data, types)})
            del data
            self._with_arrow("_incoming_messages", table, f"INSERT INTO messages ({', '.join(message_columns)}) "
                             f"SELECT {', '.join(message_columns)} FROM _incoming_messages")
        if changes:
            columns = ("cid", "nid", "role", "kind", "text", "low_value")
            data = list(zip(*changes.values()))
            table = pa.table({n: pa.array(c, type=t) for n, c, t in zip(columns, data, (s, s, s, s, s, pa.bool_()))})
            self._with_arrow("_changed_messages", table,
                             "UPDATE messages AS m SET text = u.text, role = u.role, kind = u.kind, "
                             "low_value = u.low_value FROM _changed_messages u "
                             "WHERE m.conversation_id = u.cid AND m.native_id = u.nid")

    def conversation(self, cid: str) -> ConversationRow | None:
        row = self.con.execute(
            "SELECT id, source, native_id, title, project, started_at, updated_at, leaf_native_id FROM conversations WHERE id = ?",
            [cid],
        ).fetchone()
        return None if row is None else ConversationRow(*row)

    def conversation_ids(self) -> list[str]:
        return [r[0] for r in self.con.execute("SELECT id FROM conversations ORDER BY id").fetchall()]

    def active_thread(self, cid: str) -> list[MessageRow]:
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
        by_id = {r[0]: MessageRow(*r) for r in rows}
        leaf = self._scalar("SELECT leaf_native_id FROM conversations WHERE id = ?", [cid])
        node = by_id.get(leaf) if leaf else None
        node = node or by_id[rows[-1][0]]
        path: list[MessageRow] = []
        seen: set[str] = set()
        while node is not None and node.native_id not in seen:
            seen.add(node.native_id)
            path.append(node)
            node = by_id.get(node.parent_native_id) if node.parent_native_id else None
        path.reverse()
        return path

    def conversations_to_chunk(self, since: datetime | None = None) -> list[str]:
        """Conversations changed since they were chunked (not ignored), oldest first; only
        those updated since ``since``, when given."""
        sql = "SELECT id FROM conversations WHERE (chunked_at IS NULL OR changed_at > chunked_at) AND NOT ignored"
        params: list[Any] = []
        if since is not None:
            sql += f" AND {updated_since()}"
            params.append(_naive(since))
        return [r[0] for r in self.con.execute(sql + " ORDER BY started_at, id", params).fetchall()]

    def mark_chunked(self, cid: str) -> None:
        self.con.execute("UPDATE conversations SET chunked_at = ? WHERE id = ?", [_now(), cid])

    def conversations_to_index(self) -> list[str]:
        return [r[0] for r in self.con.execute(
            "SELECT id FROM conversations WHERE (indexed_at IS NULL OR changed_at > indexed_at) AND NOT ignored ORDER BY id"
        ).fetchall()]

    def indexed_conversation_ids(self) -> list[str]:
        """Conversations the ledger records as indexed (what the node index must hold)."""
        return [r[0] for r in self.con.execute(
            "SELECT id FROM conversations WHERE indexed_at IS NOT NULL AND NOT ignored ORDER BY id").fetchall()]

    def mark_indexed(self, cids: Sequence[str]) -> None:
        now = _now()
        for cid in cids:
            self.con.execute("UPDATE conversations SET indexed_at = ? WHERE id = ?", [now, cid])

    def watermarks(self) -> dict[str, Watermark]:
        """Every file's watermark without its parser state (one query; `watermark` has the state)."""
        rows = self.con.execute("SELECT path, kind, size, mtime, prefix_hash, byte_offset FROM sources").fetchall()
        return {r[0]: Watermark(kind=r[1], size=r[2], mtime=r[3], prefix_hash=r[4], byte_offset=r[5]) for r in rows}


def _bytes(size: str) -> int:
    """``"64MB"`` → bytes (the units bulk_load is given: KB, MB, GB)."""
    units = {"KB": 2**10, "MB": 2**20, "GB": 2**30}
    return int(float(size[:-2]) * units[size[-2:].upper()])


def _stage_messages(cid: str, conv: Conversation, seq: int, staged: dict[tuple[str, str], list[Any]],
                    changes: dict[tuple[str, str], list[Any]],
                    known: dict[tuple[str, str], str]) -> tuple[int, int, int]:
    """Sort ``conv``'s messages into new rows (``staged``) and updates of stored ones
    (``changes``); returns the next seq and the counts of new and changed messages."""
    n_new = n_changed = 0
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
    return seq, n_new, n_changed

"""Ledger part: chunks, buckets, the synthesis journal, unit attempts and model-stage bookkeeping."""

from datetime import datetime
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from stores.ledger_base import LedgerBase
from stores.ledger_time import naive as _naive
from stores.ledger_time import now as _now
from stores.ledger_time import updated_since
from stores.rows import BucketRow, ChunkRow, Intent, UnitResult


class PipelineMixin(LedgerBase):
    """Methods of :class:`stores.ledger.Ledger`."""

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

    _CHUNK_ROW = ("SELECT c.id, c.conversation_id, c.label, c.text, c.message_ids, v.source, v.title, "
                  "coalesce(v.started_at, v.updated_at) FROM chunks c JOIN conversations v ON v.id = c.conversation_id ")

    def chunk(self, chunk_id: str) -> ChunkRow:
        return self.chunks([chunk_id])[0]

    def chunks(self, chunk_ids: list[str]) -> list[ChunkRow]:
        """The rows of ``chunk_ids``, in that order, in one query: a DuckDB point query costs
        about a millisecond, and the no-model stages read tens of thousands a run (each
        synthesized topic re-read 200 background chunks: 8 % of a run, bench/index_rate.py)."""
        if not chunk_ids:
            return []
        rows = self.con.execute(self._CHUNK_ROW + "WHERE c.id IN (SELECT unnest(?))", [list(dict.fromkeys(chunk_ids))]).fetchall()
        found = {r[0]: ChunkRow(id=r[0], conversation_id=r[1], label=r[2], text=r[3], message_ids=tuple(r[4]),
                                source=r[5], conversation_title=r[6], date=r[7]) for r in rows}
        missing = next((c for c in chunk_ids if c not in found), None)
        if missing is not None:
            raise KeyError(f"no chunk {missing} in the ledger")
        return [found[c] for c in chunk_ids]

    def assigned_chunk_texts(self, limit: int) -> list[str]:
        """The texts of the first ``limit`` assigned chunks by id (what ``assigned_chunk_ids``
        lists): the background other topics give a topic's names, in one query."""
        return [r[0] for r in self.con.execute(
            "SELECT c.text FROM (SELECT chunk_id FROM chunk_buckets ORDER BY chunk_id LIMIT ?) a "
            "JOIN chunks c ON c.id = a.chunk_id JOIN conversations v ON v.id = c.conversation_id "
            "ORDER BY a.chunk_id", [limit]).fetchall()]

    def chunk_vectors(self, chunk_ids: list[str]) -> dict[str, list[float]]:
        """The stored vector of each of ``chunk_ids`` that has one, by id."""
        if not chunk_ids:
            return {}
        rows = self.con.execute("SELECT id, vector FROM chunks WHERE id IN (SELECT unnest(?)) AND vector IS NOT NULL",
                                [chunk_ids]).fetchall()
        return {r[0]: r[1] for r in rows}

    def chunks_of_other_width(self, dim: int) -> list[tuple[str, str]]:
        """``(id, text)`` of the chunks whose vector is not ``dim`` wide: embedded by another model."""
        return [(r[0], r[1]) for r in self.con.execute(
            "SELECT id, text FROM chunks WHERE vector IS NOT NULL AND len(vector) <> ? ORDER BY id", [dim]).fetchall()]

    def set_chunk_vectors(self, vectors: dict[str, list[float]]) -> None:
        """Replace the vectors of the chunks named (re-embedded by the topic stages' model)."""
        self.con.executemany("UPDATE chunks SET vector = ? WHERE id = ?", [[v, k] for k, v in vectors.items()])

    def bucket_member_vectors(self, names: list[str]) -> dict[str, list[list[float]]]:
        """The vectors of each named bucket's chunks, by bucket (a bucket without chunks is left out)."""
        out: dict[str, list[list[float]]] = {}
        for bucket, vector in self.con.execute(
                "SELECT cb.bucket, c.vector FROM chunk_buckets cb JOIN chunks c ON c.id = cb.chunk_id "
                "WHERE cb.bucket IN (SELECT unnest(?)) AND c.vector IS NOT NULL ORDER BY cb.bucket, c.id", [names]).fetchall():
            out.setdefault(bucket, []).append(vector)
        return out

    def unassigned_chunks(self, since: datetime | None = None) -> list[tuple[str, list[float]]]:
        """Chunks in no bucket yet, oldest first, with their vectors (of conversations
        updated since ``since``, when given)."""
        sql = ("SELECT c.id, c.vector FROM chunks c JOIN conversations v ON v.id = c.conversation_id "
               "WHERE c.id NOT IN (SELECT chunk_id FROM chunk_buckets)")
        params: list[Any] = []
        if since is not None:
            sql += f" AND {updated_since('v')}"
            params.append(_naive(since))
        return [(r[0], r[1]) for r in self.con.execute(sql + " ORDER BY c.created_at, c.id", params).fetchall()]

    def bucket_projects(self) -> dict[str, dict[str, int]]:
        """Per bucket, how many of its chunks come from each project (conversations without one left out)."""
        out: dict[str, dict[str, int]] = {}
        for bucket, project, n in self.con.execute(
                "SELECT cb.bucket, v.project, count(*) FROM chunk_buckets cb JOIN chunks c ON c.id = cb.chunk_id "
                "JOIN conversations v ON v.id = c.conversation_id WHERE v.project IS NOT NULL AND v.project <> '' "
                "GROUP BY cb.bucket, v.project").fetchall():
            out.setdefault(bucket, {})[project] = n
        return out

    def bucket_texts(self, chars: int = 2000) -> dict[str, list[str]]:
        """Per bucket, the start (``chars``) of each of its chunks' texts: what cluster reads
        a bucket's script from (memvault.naming.scripts)."""
        out: dict[str, list[str]] = {}
        for bucket, text in self.con.execute(
                "SELECT cb.bucket, substr(c.text, 1, ?) FROM chunk_buckets cb JOIN chunks c ON c.id = cb.chunk_id "
                "ORDER BY cb.bucket, c.id", [chars]).fetchall():
            out.setdefault(bucket, []).append(text or "")
        return out

    def buckets(self, include_forgotten: bool = False) -> list[BucketRow]:
        sql = "SELECT name, description, centroid, size, forgotten FROM buckets"
        if not include_forgotten:
            sql += " WHERE NOT forgotten"
        return [BucketRow(name=r[0], description=r[1] or "", centroid=tuple(r[2]) if r[2] else None,
                          size=r[3] or 0, forgotten=bool(r[4]))
                for r in self.con.execute(sql + " ORDER BY name").fetchall()]

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

    def pending_by_bucket(self, since: datetime | None = None) -> dict[str, list[str]]:
        """Chunks assigned to a bucket but not yet synthesized into its article (not parked),
        of conversations updated since ``since`` when given."""
        recent = f"AND {updated_since('v')}" if since is not None else ""
        rows = self.con.execute(f"""
            SELECT cb.bucket, cb.chunk_id FROM chunk_buckets cb
            JOIN buckets b ON b.name = cb.bucket AND NOT b.forgotten
            JOIN chunks c ON c.id = cb.chunk_id
            JOIN conversations v ON v.id = c.conversation_id AND NOT v.ignored
            WHERE NOT EXISTS (SELECT 1 FROM synthesized_bucket_chunks s WHERE s.bucket = cb.bucket AND s.chunk_id = cb.chunk_id)
              AND NOT EXISTS (SELECT 1 FROM unit_attempts u WHERE u.stage = 'synthesize' AND u.unit = cb.bucket || '/' || cb.chunk_id AND u.parked)
              {recent}
            ORDER BY cb.bucket, c.created_at, c.id""", [] if since is None else [_naive(since)]).fetchall()
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

    def intents(self) -> list[Intent]:
        return [Intent(bucket=r[0], chunk_ids=tuple(r[1]), article_hash=r[2], run_id=r[3]) for r in self.con.execute(
            "SELECT bucket, chunk_ids, article_hash, run_id FROM synthesis_intents ORDER BY bucket").fetchall()]

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
        self.con.execute("INSERT OR REPLACE INTO unit_attempts (stage, unit, attempts, parked, reason, updated_at, "
                         "input_hash) VALUES (?, ?, ?, ?, ?, ?, NULL)", [stage, unit, attempts, parked, reason, _now()])
        return parked

    def park(self, stage: str, unit: str, reason: str, input_hash: str) -> None:
        """Park a unit at once: its failure cannot change until its input (``input_hash``) does."""
        row = self.con.execute("SELECT attempts FROM unit_attempts WHERE stage = ? AND unit = ?", [stage, unit]).fetchone()
        self.con.execute("INSERT OR REPLACE INTO unit_attempts (stage, unit, attempts, parked, reason, updated_at, "
                         "input_hash) VALUES (?, ?, ?, TRUE, ?, ?, ?)",
                         [stage, unit, (row[0] if row else 0) + 1, reason, _now(), input_hash])

    def parked_by_bucket(self) -> dict[str, dict[str, tuple[str | None, str]]]:
        """Parked synthesize units of live buckets: bucket → chunk id → (input hash, reason)."""
        rows = self.con.execute("""
            SELECT cb.bucket, cb.chunk_id, u.input_hash, u.reason FROM unit_attempts u
            JOIN chunk_buckets cb ON u.unit = cb.bucket || '/' || cb.chunk_id
            JOIN buckets b ON b.name = cb.bucket AND NOT b.forgotten
            WHERE u.stage = 'synthesize' AND u.parked
              AND NOT EXISTS (SELECT 1 FROM synthesized_bucket_chunks s WHERE s.bucket = cb.bucket AND s.chunk_id = cb.chunk_id)
            ORDER BY cb.bucket, cb.chunk_id""").fetchall()
        out: dict[str, dict[str, tuple[str | None, str]]] = {}
        for bucket, chunk_id, input_hash, reason in rows:
            out.setdefault(bucket, {})[chunk_id] = (input_hash, reason or "")
        return out

    def unpark(self, stage: str, units: list[str]) -> None:
        """Give units a fresh start: their input changed, so their failure may not repeat."""
        for unit in units:
            self.con.execute("DELETE FROM unit_attempts WHERE stage = ? AND unit = ?", [stage, unit])

    # -- model-backed stages: prompt hashes, proposals, pending Meta writes, backlog ---------------
    def record_unit_result(self, stage: str, unit: str, prompt_hash: str | None, method: str,
                           reason: str | None, run_id: str) -> None:
        """Remember which prompt and path (model, fallback, rejected) made a unit's result."""
        self.con.execute("INSERT OR REPLACE INTO unit_results VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [stage, unit, prompt_hash, method, reason, run_id, _now()])

    def unit_results(self, stage: str) -> dict[str, UnitResult]:
        """Unit → how its result was made, for one stage."""
        return {r[0]: UnitResult(prompt_hash=r[1], method=r[2], reason=r[3], run_id=r[4]) for r in self.con.execute(
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

    def chunks_per_conversation(self) -> float:
        """Average chunks per chunked conversation (1.0 before any), for dry-run estimates."""
        chunks, conversations = self._one("SELECT count(*), count(DISTINCT conversation_id) FROM chunks")
        return float(chunks / conversations) if conversations else 1.0

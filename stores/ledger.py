"""The ledger: DuckDB bookkeeping and the durable copy of every transcript.

Opened read-write only by the holder of the writer lock, and only through
:meth:`Ledger.open`: DuckDB refuses every other process while one holds the file read-write
(and a writer while readers hold it), so the opener retries briefly, then raises
:class:`~memvault.errors.LedgerBusy` naming the writer. Numbered migrations are applied on
open, after the file is copied aside, so a failed migration never costs the only copy of a
user's history.

A damaged file (DuckDB finds a block whose checksum does not match, on open or on any later
query) raises LedgerDamagedError, which names the newest copies to restore from
(`memvault restore SRC`) instead of DuckDB's raw error.
"""

import atexit
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from memvault.errors import LedgerBusy, LedgerDamagedError
from memvault.config.settings import Settings
from stores.ledger_browse import BrowseMixin
from stores.ledger_editorial import EditorialMixin
from stores.ledger_ingest_errors import IngestErrorsMixin
from stores.ledger_pipeline import PipelineMixin
from stores.ledger_time import now as _now
from stores.ledger_transcripts import TranscriptsMixin
from stores.migrations import MIGRATIONS
from stores.rows import LedgerCounts, RunSummary
from stores.sql import scalar

# How long an opener waits for another process to let go of the ledger (DESIGN: readers
# retry briefly, then fall back). A run holds it for its whole length, so longer is no use.
OPEN_RETRY_S = 1.0
_RETRY_EVERY_S = 0.1


@atexit.register
def _drop_duckdb_type_constants() -> None:
    """At exit, drop DuckDB's module-level type constants (``duckdb.sqltypes.BIGINT``, …).

    After a Prefect flow run they outlive interpreter shutdown, and DuckDB's bindings
    (nanobind) then print ~40 lines of "leaked instance" warnings at the end of every
    command. Nothing queries DuckDB once the interpreter is exiting; removing the names
    frees nothing that matters and keeps the terminal clean.
    """
    for name, module in list(sys.modules.items()):
        if module is not None and name.split(".")[0] in ("duckdb", "_duckdb"):
            for attr, value in list(vars(module).items()):
                if type(value).__name__ == "DuckDBPyType":
                    delattr(module, attr)


# What DuckDB says when the file itself is damaged (not busy, not a bad query).
_DAMAGE = ("Corrupt database file", "not a valid DuckDB database", "does not match stored checksum",
           "Could not read enough bytes from file")  # a file cut short (a full disk, a partial copy)
LAST_BACKUP = "last-backup.json"  # written by `memvault backup` beside the ledger


def restore_sources(path: Path) -> list[str]:
    """Copies a damaged ledger can be restored from, newest first: the last `memvault backup`
    (when its folder still exists) and the migration copies `ledger.duckdb.pre-vN.bak`."""
    out: list[tuple[float, str]] = []
    record = path.parent / LAST_BACKUP
    if record.is_file():
        try:
            info = json.loads(record.read_text(encoding="utf-8"))
            dest = Path(info["dest"])
            if (dest / ".memvault" / path.name).is_file():
                out.append((float(info.get("time", 0)), str(dest)))
        except (ValueError, KeyError, TypeError):
            pass  # an unreadable record is no source; the migration copies still are
    out += [(p.stat().st_mtime, str(p)) for p in path.parent.glob(f"{path.name}.pre-v*.bak") if p.is_file()]
    return [s for _, s in sorted(out, reverse=True)]


def damage_error(path: Path, exc: BaseException) -> LedgerDamagedError | None:
    """The user-facing error for DuckDB's "corrupt file" errors; None for any other error."""
    if not isinstance(exc, duckdb.Error) or not any(m in str(exc) for m in _DAMAGE):
        return None
    sources = restore_sources(path)
    what = (f"`memvault restore {sources[0]}` (newest of: {', '.join(sources)})" if sources else
            "`memvault restore SRC` with a copy made by `memvault backup` (no backup or migration copy was found "
            f"beside it in {path.parent})")
    return LedgerDamagedError(
        f"the ledger {path} is damaged ({str(exc).splitlines()[0][:160]}). Recall still works (it reads only the "
        f"index and the vault); runs, ingest and status need the ledger. To recover, restore a copy: {what}. "
        "The damaged file is kept aside, never deleted.")


class _Guarded:
    """A DuckDB connection whose "corrupt file" errors become LedgerDamagedError.

    Damage shows on whichever query first reads the bad block, so every call is guarded,
    not only the open.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path) -> None:
        self._con, self._path = con, path

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._con, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                out = attr(*args, **kwargs)
            except duckdb.Error as exc:
                damaged = damage_error(self._path, exc)
                if damaged is None:
                    raise
                raise damaged from None
            if out is self._con:
                return self
            return _Guarded(out, self._path) if isinstance(out, duckdb.DuckDBPyConnection) else out

        return call


def _is_lock_conflict(exc: duckdb.IOException) -> bool:
    """DuckDB's "Could not set lock on file … Conflicting lock is held" (not a missing or broken file)."""
    return "lock" in str(exc).lower()


class Ledger(TranscriptsMixin, PipelineMixin, EditorialMixin, IngestErrorsMixin, BrowseMixin):
    """Narrow interface over ``ledger.duckdb`` (its methods are grouped in the mixin modules)."""

    def __init__(self, path: Path, read_only: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if not read_only:
                self._migrate_with_backup()
            self.con = _Guarded(duckdb.connect(str(path), read_only=read_only), path)  # type: ignore[assignment]
        except duckdb.Error as exc:
            damaged = damage_error(path, exc)
            if damaged is None:
                raise
            raise damaged from None

    @classmethod
    @contextmanager
    def open(cls, settings: Settings, read_only: bool = False, retry_s: float = OPEN_RETRY_S) -> Iterator["Ledger"]:
        """The ledger of ``settings.home`` for the length of the block, closed after it.

        Read-write (migrations applied) unless ``read_only``. While another process holds the
        file, the open is retried for ``retry_s``; then :class:`LedgerBusy` says who writes
        (from the writer lock's note) and what to do — never DuckDB's own lock text.
        """
        from memvault.lock import holder

        deadline = time.monotonic() + retry_s
        while True:
            try:
                ledger = cls(settings.ledger_path, read_only=read_only)
                break
            except duckdb.IOException as exc:
                if not _is_lock_conflict(exc):
                    raise
                if time.monotonic() >= deadline:
                    writer = holder(settings.state_dir)
                    # Our own note (we hold the writer lock; a reader holds the file) names nobody.
                    known = writer if writer and writer.get("pid") != os.getpid() else None
                    raise LedgerBusy(settings.home, known) from None
                time.sleep(_RETRY_EVERY_S)
        try:
            yield ledger
        finally:
            if ledger.con is not None:
                ledger.close()

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

    def checkpoint(self) -> None:
        self.con.execute("CHECKPOINT")

    def verify(self) -> dict[str, int]:
        """Read every row of every table (so every data block's checksum is checked); rows
        per table. Raises LedgerDamagedError on the first damaged block."""
        tables = [r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_type = 'BASE TABLE' "
            "ORDER BY table_name").fetchall()]
        # hash() of the whole row makes DuckDB read every column, not just the row counts.
        return {t: int(scalar(self.con, f'SELECT count(*), bit_xor(hash(x)) FROM "{t}" AS x')) for t in tables}

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

    def last_run(self) -> RunSummary | None:
        row = self.con.execute(
            "SELECT id, status, finished_at FROM runs WHERE finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT 1"
        ).fetchone()
        return None if row is None else RunSummary(run_id=row[0], status=row[1], finished_at=row[2].isoformat() + "Z")

    def counts(self) -> LedgerCounts:
        out = {table: int(self._scalar(f"SELECT count(*) FROM {table}")) for table in ("conversations", "messages", "chunks")}
        out["buckets"] = int(self._scalar("SELECT count(*) FROM buckets WHERE NOT forgotten"))
        return LedgerCounts(**out)

    # -- ignored topics, small named state, rewriting stored text ----------------------------------
    def state_value(self, key: str) -> str | None:
        row = self.con.execute("SELECT value FROM ledger_state WHERE key = ?", [key]).fetchone()
        return None if row is None else str(row[0])

    def set_state_value(self, key: str, value: str) -> None:
        self.con.execute("INSERT OR REPLACE INTO ledger_state VALUES (?, ?, ?)", [key, value, _now()])

    def apply_ignored_topics(self, pattern: str | None, ids: Sequence[str] | None = None) -> tuple[list[str], list[str]]:
        """Set ``ignored`` where the regex ``pattern`` matches the title or any message text.

        Judges ``ids`` only (or every conversation); ``None`` as pattern ignores nothing.
        Returns (newly ignored, no longer ignored). A conversation let back in is marked
        changed so the chunk and index stages pick it up again.
        """
        params: dict[str, Any] = {} if ids is None else {"ids": list(ids)}
        scope = "TRUE" if ids is None else "list_contains($ids, c.id)"
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

    def rewrite_texts(self, fn: Callable[[str, str], str], batch: int = 10_000) -> tuple[dict[str, int], set[str]]:
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
                    touched.update(self.chunk(r[1]).conversation_id for r in changed)
            counts[f"{table}.{column}"] = len(changed)
        return counts, touched

    def compact(self) -> None:
        """Rewrite the ledger file so freed blocks, which may still hold overwritten text, are gone."""
        tmp = self.path.with_name(self.path.name + ".compact")
        tmp.unlink(missing_ok=True)
        self.con.execute("CHECKPOINT")
        name = self._scalar("SELECT current_database()")
        self.con.execute(f"ATTACH '{tmp}' AS memvault_compact")
        self.con.execute(f'COPY FROM DATABASE "{name}" TO memvault_compact')
        self.con.execute("DETACH memvault_compact")
        self.con.close()
        os.replace(tmp, self.path)
        self.con = _Guarded(duckdb.connect(str(self.path)), self.path)  # type: ignore[assignment]

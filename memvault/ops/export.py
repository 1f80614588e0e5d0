"""`memvault export`: conversations, messages, chunks and articles in an open format.

Two formats a person can take to Datasette, pandas, DuckDB or a spreadsheet:

* ``jsonl`` — a folder with one ``<table>.jsonl`` per table, one JSON object a line
  (``pandas.read_json(path, lines=True)``); times are ISO-8601 UTC strings, lists are lists.
* ``sqlite`` — one SQLite file with one table per kind, typed columns and primary keys
  (``datasette export.db``); times are ISO-8601 TEXT, flags INTEGER 0/1, lists JSON TEXT.

Read-only: it takes no writer lock and opens the ledger read-only, so a running nightly job
is never disturbed; DuckDB lets no reader in beside a writer, so while one writes, export
waits briefly and then says who is writing (LedgerBusy). Every file is written beside its
destination and moved into place when complete, so a failed export leaves no half file.
"""

import bisect
import json
import sqlite3
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

from memvault.errors import MemvaultError, UsageError
from memvault.files import atomic_path
from memvault.ops.admin_results import ExportReport
from memvault.ops.home import require_home
from memvault.config.settings import Settings

ExportFormat = Literal["jsonl", "sqlite"]
FORMATS: tuple[ExportFormat, ...] = ("jsonl", "sqlite")
OPEN_RETRY_S = 5.0  # a status-like read: worth a few seconds' wait for a writer to let go
_SQLITE_TYPES = {"text": "TEXT", "integer": "INTEGER", "real": "REAL", "boolean": "INTEGER",
                 "timestamp": "TEXT", "json": "TEXT"}


def _iso(value: datetime) -> str:
    # The ledger stores naive UTC times: say so, as `memvault status` does.
    return value.isoformat() + ("Z" if value.tzinfo is None else "")


def _jsonl_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return _iso(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    return value


def _sqlite_value(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "timestamp" and isinstance(value, datetime):
        return _iso(value)
    if kind == "boolean":
        return int(bool(value))
    if kind == "json":
        return json.dumps(list(value) if isinstance(value, tuple) else value, ensure_ascii=False)
    return value


def _article_rows(settings: Settings, conversation_ids: list[str]) -> Iterator[tuple[Any, ...]]:
    """Rows of the articles table, from the vault's files; cited short ids resolved to keys."""
    from memvault.markdown.footnotes import citations
    from stores.vault import Vault

    vault = Vault(settings.home)
    for stem, (path, text) in sorted(vault.read_articles().items()):
        cited: list[str] = []
        for short in citations(text):
            at = bisect.bisect_left(conversation_ids, short)
            match = conversation_ids[at] if at < len(conversation_ids) else ""
            cited.append(match if match.startswith(short) else short)  # unknown: kept as written
        yield (stem, vault.title_of(path), path.relative_to(settings.home).as_posix(), text, len(text.split()),
               cited)


def _table_batches(ledger: Any, settings: Settings, table: Any, ids: list[str]) -> Iterator[list[tuple[Any, ...]]]:
    from stores.ledger_export import export_rows

    if table.sql:
        yield from export_rows(ledger, table)
    else:
        rows = list(_article_rows(settings, ids))
        if rows:
            yield rows


def _check_dest(dest: Path, fmt: ExportFormat, force: bool, names: list[str]) -> list[Path]:
    """The files the export will write; refuses to overwrite unless ``force``."""
    if fmt == "jsonl":
        if dest.exists() and not dest.is_dir():
            raise UsageError(f"{dest} is a file; `--format jsonl` writes a folder of .jsonl files — name a folder")
        targets = [dest / f"{name}.jsonl" for name in names]
    else:
        if dest.is_dir():
            raise UsageError(f"{dest} is a folder; `--format sqlite` writes one file — name a file such as "
                             f"{dest / 'memvault.db'}")
        targets = [dest]
    existing = [t for t in targets if t.exists()]
    if existing and not force:
        raise UsageError(f"{existing[0]} already exists — pass --force to overwrite it, or name another destination")
    return targets


def export_home(settings: Settings, fmt: ExportFormat, dest: Path, force: bool = False,
                retry_s: float | None = None) -> ExportReport:
    """Write the home's conversations, messages, chunks and articles to ``dest`` as ``fmt``.

    Returns a summary: format, destination, and per table its row count and file.
    Raises UsageError for a bad destination, LedgerBusy while another process holds the
    ledger past ``retry_s`` (default ``OPEN_RETRY_S``).
    """
    from stores.ledger import Ledger
    from stores.ledger_export import EXPORT_TABLES, export_conversation_ids

    require_home(settings.home)
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    dest = dest.expanduser().absolute()
    targets = _check_dest(dest, fmt, force, [t.name for t in EXPORT_TABLES])
    if not settings.ledger_path.exists():
        raise MemvaultError(f"{settings.home} has no ledger yet — run `memvault ingest` or `memvault run` first")
    with Ledger.open(settings, read_only=True, retry_s=OPEN_RETRY_S if retry_s is None else retry_s) as ledger:
        (dest if fmt == "jsonl" else dest.parent).mkdir(parents=True, exist_ok=True)  # only once the ledger opened
        ids = export_conversation_ids(ledger)
        if fmt == "jsonl":
            counts = {t.name: _write_jsonl(target, t, _table_batches(ledger, settings, t, ids))
                      for t, target in zip(EXPORT_TABLES, targets)}
        else:
            counts = _write_sqlite(dest, [(t, _table_batches(ledger, settings, t, ids)) for t in EXPORT_TABLES])
    files = {t.name: str(target) for t, target in zip(EXPORT_TABLES, targets)} if fmt == "jsonl" else \
        {t.name: f"{dest}#{t.name}" for t in EXPORT_TABLES}
    return {"format": fmt, "dest": str(dest),
            "tables": {name: {"rows": n, "path": files[name]} for name, n in counts.items()}}


def _write_jsonl(path: Path, table: Any, batches: Iterator[list[tuple[Any, ...]]]) -> int:
    """One table as JSON Lines, written aside and moved into place; its row count."""
    names = table.column_names
    n = 0
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as fh:
        for rows in batches:
            for row in rows:
                fh.write(json.dumps(dict(zip(names, map(_jsonl_value, row))), ensure_ascii=False) + "\n")
            n += len(rows)
    return n


def _write_sqlite(dest: Path, tables: list[tuple[Any, Iterator[list[tuple[Any, ...]]]]]) -> dict[str, int]:
    """Every table into one new SQLite file, written aside and moved into place; row counts."""
    counts: dict[str, int] = {}
    with atomic_path(dest) as tmp:
        tmp.unlink()  # SQLite makes its own file
        con = sqlite3.connect(tmp)
        try:
            for table, batches in tables:
                columns = ", ".join(f'"{name}" {_SQLITE_TYPES[kind]}' for name, kind in table.columns)
                key = ", ".join(f'"{k}"' for k in table.key)
                con.execute(f'CREATE TABLE "{table.name}" ({columns}, PRIMARY KEY ({key}))')
                marks = ", ".join("?" for _ in table.columns)
                kinds = [kind for _, kind in table.columns]
                n = 0
                for rows in batches:
                    con.executemany(f'INSERT INTO "{table.name}" VALUES ({marks})',
                                    [[_sqlite_value(v, k) for v, k in zip(row, kinds)] for row in rows])
                    n += len(rows)
                counts[table.name] = n
            _sqlite_indexes(con)
            con.commit()
        finally:
            con.close()
    return counts


def _sqlite_indexes(con: sqlite3.Connection) -> None:
    # The joins a reader makes first: a conversation's messages and chunks.
    con.execute('CREATE INDEX "chunks_by_conversation" ON "chunks" ("conversation_id")')
    con.execute('CREATE INDEX "conversations_by_started_at" ON "conversations" ("started_at")')

"""Ledger part: problems found in transcript files, kept until the file changes.

Keyed like the watermarks (the file's resolved path); written in the same transaction as the
file's watermark, so a run killed after reading a bad file still reports it next time.
"""

from collections.abc import Sequence

import duckdb

from memvault.files import storable_path
from memvault.models import LineError
from stores.ledger_time import now as _now

# A file with a million bad lines is reported by its first ones; the rest are counted.
KEEP_PER_FILE = 200


class IngestErrorsMixin:
    """Methods of :class:`stores.ledger.Ledger`; they use ``self.con``."""

    con: duckdb.DuckDBPyConnection

    def record_ingest_errors(self, path: str, errors: Sequence[LineError], replace: bool) -> None:
        """Store ``errors`` of the file keyed ``path``; ``replace`` drops what was stored before
        (the file was read from its start), else they add to it (a later slice)."""
        if replace:
            self.con.execute("DELETE FROM ingest_errors WHERE path = ?", [path])
        if not errors:
            return
        row = self.con.execute("SELECT count(*), coalesce(max(seq), -1) FROM ingest_errors WHERE path = ?",
                               [path]).fetchone()
        held, last = (row[0], row[1]) if row else (0, -1)
        room = max(KEEP_PER_FILE - held, 0)
        kept = list(errors[:room])
        if len(errors) > room:
            kept.append(LineError(file=errors[0].file, error=f"… and {len(errors) - room} more problems in this file"))
        now = _now()
        self.con.executemany(
            "INSERT INTO ingest_errors (path, seq, file, line, error, recorded_at) VALUES (?, ?, ?, ?, ?, ?)",
            [[path, last + 1 + i, storable_path(e.file), e.line, storable_path(e.error), now] for i, e in enumerate(kept)],
        )

    def ingest_errors(self) -> dict[str, list[LineError]]:
        """Every stored problem, per file key, in the order found."""
        rows = self.con.execute("SELECT path, file, line, error FROM ingest_errors ORDER BY path, seq").fetchall()
        out: dict[str, list[LineError]] = {}
        for path, file, line, error in rows:
            out.setdefault(path, []).append(LineError(file=file, line=line, error=error))
        return out

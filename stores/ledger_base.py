"""What every part of the ledger shares: the connection, transactions, one-row reads and the
file stems buckets get (stores/ledger.py assembles the parts into :class:`Ledger`)."""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb


class LedgerBase:
    """The base of :class:`stores.ledger.Ledger` and its mixins."""

    con: duckdb.DuckDBPyConnection

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def _one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...]:
        """The single row of an aggregate or a lookup that always finds one."""
        row = self.con.execute(sql, list(params)).fetchone()
        if row is None:
            raise LookupError(f"the ledger returned no row for: {sql}")
        return row

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._one(sql, params)[0]

    def _free_stem(self, name: str) -> str:
        """A file stem for a new bucket: its sanitized title, suffixed `_2`, `_3`… when taken."""
        from memvault.markdown.names import title_to_stem, unique_stem

        taken = {r[0] for r in self.con.execute("SELECT stem FROM buckets WHERE stem IS NOT NULL").fetchall()}
        return unique_stem(title_to_stem(name), taken)

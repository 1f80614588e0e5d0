"""Small helpers over DuckDB cursors shared by the ledger's mixins."""

from collections.abc import Sequence
from typing import Any

import duckdb


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> Any:
    """The first column of the row a query always returns (a count, a setting, a known id's field)."""
    row = con.execute(sql, params).fetchone() if params is not None else con.execute(sql).fetchone()
    if row is None:
        raise LookupError(f"the ledger returned no row for: {sql}")
    return row[0]

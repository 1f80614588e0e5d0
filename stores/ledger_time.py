"""Timestamps as the ledger stores them: naive UTC (DuckDB TIMESTAMP has no zone)."""

from datetime import datetime, timezone


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def naive(ts: datetime | None) -> datetime | None:
    """An aware time in naive UTC; a naive one is taken as UTC already."""
    if ts is None:
        return None
    return ts.astimezone(timezone.utc).replace(tzinfo=None) if ts.tzinfo else ts


def updated_since(alias: str = "") -> str:
    """The SQL condition of `--since` on a conversations row (``?`` is the naive UTC time): a
    conversation counts when it was updated, else started, else ingested since then."""
    v = f"{alias}." if alias else ""
    return f"coalesce({v}updated_at, {v}started_at, {v}ingested_at) >= ?"

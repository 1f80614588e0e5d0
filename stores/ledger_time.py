"""Timestamps as the ledger stores them: naive UTC (DuckDB TIMESTAMP has no zone)."""

from datetime import datetime, timezone


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def naive(ts: datetime | None) -> datetime | None:
    """An aware time in naive UTC; a naive one is taken as UTC already."""
    if ts is None:
        return None
    return ts.astimezone(timezone.utc).replace(tzinfo=None) if ts.tzinfo else ts

"""Scoped recall: which project, source kind and dates a recall may draw from, and which
project it is made from (a soft prior, not a filter).

A conversation's project is the working directory its source records (Claude Code's, Codex's
and pi's ``cwd``), a note's the name given with ``--project``. A recall made inside a
project (its cwd) boosts nodes whose project is that directory or one above it.
"""

from dataclasses import dataclass
from datetime import datetime, time
from pathlib import PurePosixPath

from memvault.errors import UsageError
from memvault.sources.kinds import SCOPE_KINDS

SOURCES = SCOPE_KINDS


def parse_day(value: str | datetime | None, name: str, end: bool = False) -> datetime | None:
    """``YYYY-MM-DD`` or an ISO time; a bare date as an ``--until`` bound means its whole day."""
    if value is None or isinstance(value, datetime):
        return value
    raw = value.strip()
    if not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise UsageError(f"{name} {raw!r} is not a date — use YYYY-MM-DD (e.g. {name} 2026-03-01)") from None
    if end and len(raw) <= 10:
        parsed = datetime.combine(parsed.date(), time.max)
    return parsed


@dataclass(frozen=True)
class Scope:
    """Hard filters of a recall (each None: not filtered)."""

    project: str | None = None
    source: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def of(cls, project: str | None = None, source: str | None = None,
           since: str | datetime | None = None, until: str | datetime | None = None) -> "Scope":
        """Validated from a door's raw values (``UsageError`` names what is wrong)."""
        if source is not None and source.strip() and source.strip() not in SOURCES:
            raise UsageError(f"unknown source {source!r} — one of {', '.join(SOURCES)}")
        lo, hi = parse_day(since, "--since"), parse_day(until, "--until", end=True)
        if lo is not None and hi is not None and lo > hi:
            raise UsageError(f"--since {since} is after --until {until}")
        return cls((project or "").strip() or None, (source or "").strip() or None, lo, hi)

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.project, self.source, self.since, self.until))


def in_project(node_project: str | None, cwd: str | None) -> bool:
    """True when a node of ``node_project`` belongs to the project a recall is made from.

    A path project matches when ``cwd`` is that directory or inside it; a named project (a
    note's ``--project memvault``) when it is one of ``cwd``'s directory names.
    """
    if not node_project or not cwd:
        return False
    here = PurePosixPath(cwd)
    if "/" not in node_project:
        return node_project in here.parts
    there = PurePosixPath(node_project.rstrip("/") or "/")
    return here == there or there in here.parents

"""What the ledger returns: one frozen dataclass per kind of row, named as the columns are.

Callers read attributes (``chunk.conversation_title``), never guess dictionary keys; a
sequence column comes back as a tuple, so a row stays the value it was read as.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memvault.models import LineError


@dataclass(frozen=True)
class Watermark:
    """How far ingest has read one transcript file (``state``: the parser's resume state;
    empty when read in bulk by :meth:`Ledger.watermarks`; ``errors``: the problems found in
    it so far, filled in by ingest from :meth:`Ledger.ingest_errors`)."""

    kind: str
    size: int
    mtime: float
    prefix_hash: str
    byte_offset: int
    state: dict[str, Any] = field(default_factory=dict)
    errors: tuple[LineError, ...] = ()


@dataclass(frozen=True)
class ConversationRow:
    id: str
    source: str
    native_id: str
    title: str | None
    project: str | None
    started_at: datetime | None
    updated_at: datetime | None
    leaf_native_id: str | None

    @property
    def date(self) -> datetime | None:
        """When it happened: its start, else its last update."""
        return self.started_at or self.updated_at


@dataclass(frozen=True)
class MessageRow:
    native_id: str
    parent_native_id: str | None
    seq: int
    role: str
    kind: str
    text: str
    timestamp: datetime | None
    low_value: bool


@dataclass(frozen=True)
class ChunkRow:
    """A chunk with what synthesis cites of its conversation (source, title, date)."""

    id: str
    conversation_id: str
    label: str | None
    text: str
    message_ids: tuple[str, ...]
    source: str
    conversation_title: str | None
    date: datetime | None


@dataclass(frozen=True)
class BucketRow:
    name: str
    description: str
    centroid: tuple[float, ...] | None
    size: int
    forgotten: bool


@dataclass(frozen=True)
class Intent:
    """A journaled article write (see memvault/stages/synthesize.py): recorded before the file is written."""

    bucket: str
    chunk_ids: tuple[str, ...]
    article_hash: str
    run_id: str | None


@dataclass(frozen=True)
class UnitResult:
    """Which prompt and which path (model, fallback, proposal, rejected) made a unit's result."""

    prompt_hash: str | None
    method: str
    reason: str | None
    run_id: str | None


@dataclass(frozen=True)
class RunSummary:
    """The last finished run, as `memvault status` shows it."""

    run_id: str
    status: str
    finished_at: str  # ISO 8601, UTC


@dataclass(frozen=True)
class LedgerCounts:
    conversations: int
    messages: int
    chunks: int
    buckets: int  # not forgotten


@dataclass(frozen=True)
class ConversationSummary:
    """One line of `memvault conversations`: a conversation and how many messages it holds."""

    id: str
    source: str
    title: str | None
    project: str | None
    started_at: datetime | None
    updated_at: datetime | None
    ingested_at: datetime | None
    messages: int  # every stored message, abandoned branches included
    ignored: bool  # matched `ignored_topics`: kept in the ledger, left out of chunks and recall

    @property
    def date(self) -> datetime | None:
        """When it happened: its start, else its last update, else when it was stored."""
        return self.started_at or self.updated_at or self.ingested_at

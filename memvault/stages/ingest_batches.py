"""Batches of the ingest stage: parsed slices stored and committed together, and the stage's result.

Split from `memvault/stages/ingest.py` (which reads the files); this module only writes what it is
given to the ledger, one transaction per batch.
"""

import re
from typing import Any, Protocol

from pydantic import Field

from memvault.errors import MemvaultError
from memvault.failpoints import failpoint
from memvault.models import Conversation, LineError
from memvault.stages.result import StageResult
from stores.ledger import Ledger

# A single message longer than this (a pasted log, a base64 blob) is stored cut: one 30 MB
# message made DuckDB run out of memory mid-batch, costing every file of the run.
MAX_MESSAGE_CHARS = 1_000_000
TRUNCATED = "\n[… {n} more characters cut by memvault: the message was too large to store whole]"


class IngestResult(StageResult):
    """What ingest did: files read, conversations and messages stored, what was cut, redacted or
    skipped, and every problem found (with its file and line)."""

    files_seen: int = 0
    files_changed: int = 0
    conversations_new: int = 0
    conversations_updated: int = 0
    conversations_ignored: int = Field(default=0, description="Newly flagged by Meta/Topics_to_Ignore.md")
    messages_new: int = 0
    bytes_read: int = 0
    redactions: dict[str, int] = Field(default_factory=dict)
    skipped_types: dict[str, int] = Field(default_factory=dict)
    skipped_own: int = 0
    messages_truncated: int = Field(default=0, description=f"Messages stored cut at {MAX_MESSAGE_CHARS} characters")
    errors: list[LineError] = Field(default_factory=list)
    errors_from_earlier_runs: int = Field(default=0, description="Of `errors`, problems of unchanged files found before")
    # Conversations that became ignored this run; their index nodes must go (not reported).
    newly_ignored: list[str] = Field(default_factory=list, exclude=True)
    slices: int = Field(default=0, exclude=True)  # slices stored this run (the failpoint counts them)


class FileRun(Protocol):
    """One file's counts as `Batches` updates them (the ingest stage's per-file run)."""

    def note(self, cid: str, is_new: bool, n_new: int, n_changed: int) -> None: ...

    def finish(self) -> None: ...


class Batches:
    """Stores parsed slices in batches: every ``limit_bytes`` read or ``limit_files`` files,
    whichever comes first (and after each slice of a file that goes on), one upsert of all
    their conversations, one write of their watermarks, one commit.

    Stored slices and their watermarks always commit together, so a crash loses at most the
    open batch, which the next run simply reads again. Batching small files matters: per-file
    statements and commits (each an fsync) would otherwise dominate a thousand small sessions.
    """

    def __init__(self, ledger: Ledger, result: IngestResult, limit_bytes: int, limit_files: int = 500,
                 pattern: str | None = None) -> None:
        self.ledger, self.result, self.limit_bytes, self.limit_files = ledger, result, limit_bytes, limit_files
        self.pattern = pattern
        # A prefilter in Python for the ledger's (RE2) judgement: the topics without their
        # word-boundary guards, since Python's \W is Unicode-aware where RE2's is ASCII. It
        # may find more than the ledger confirms, never less.
        self.topics = re.compile(pattern.replace(r"(?:^|\W)", "").replace(r"(?:\W|$)", "")) if pattern else None
        self.pending_bytes = self.pending_files = self.commits = 0
        self.items: list[tuple[FileRun, Conversation]] = []
        self.done: list[FileRun] = []  # files whose last slice is queued: counted once written
        self.marks: list[tuple[str, str, int, float, str, int, dict[str, Any]]] = []
        self.file_errors: list[tuple[str, bool, list[LineError]]] = []  # (key, from the start, errors)
        self._tx: Any = None

    def __enter__(self) -> "Batches":
        self._tx = self.ledger.transaction()
        self._tx.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.flush()
        self._tx.__exit__(*exc)

    def add(self, run: FileRun, conversations: list[Conversation],
            mark: tuple[str, str, int, float, str, int, dict[str, Any]], nbytes: int, file_done: bool,
            errors: tuple[bool, list[LineError]] = (False, [])) -> None:
        """Queue a parsed slice, its watermark and its problems (``errors``: whether the slice
        starts the file, and what it found); store and commit when the batch is full."""
        self.items.extend((run, conv) for conv in conversations)
        self.marks.append(mark)
        self.file_errors.append((mark[0], *errors))
        if file_done:
            self.done.append(run)
        self.pending_bytes += nbytes
        self.pending_files += file_done
        # A slice of a file that goes on is written at once: a big file never holds more
        # than one slice in memory. Whole small files wait for a full batch.
        if not file_done or self.pending_bytes >= self.limit_bytes or self.pending_files >= self.limit_files:
            try:
                self.flush()
            except (OSError, UnicodeError, ValueError) as exc:
                # A failed write is not a problem of the file being read (the caller would
                # report it as one and go on): stop the run; the open batch rolls back.
                raise MemvaultError(f"storing a batch of transcripts failed ({type(exc).__name__}: {exc}); "
                                    "nothing of it was committed — run ingest again") from exc
            self._tx.__exit__(None, None, None)
            self.commits += 1
            self.pending_bytes = self.pending_files = 0
            failpoint("ingest", self.commits)  # resume tests: a hard exit right after a commit
            self._tx = self.ledger.transaction()
            self._tx.__enter__()

    def flush(self) -> None:
        """Write the queued conversations and watermarks (inside the open transaction)."""
        items, self.items = self.items, []
        results = self.ledger.upsert_conversations([conv for _, conv in items])
        judge: list[str] = []
        for (run, conv), (is_new, n_new, n_changed) in zip(items, results):
            run.note(conv.id, is_new, n_new, n_changed)
            # Only new text can newly match an ignored topic, and only an edit can stop a match:
            # the ledger re-judges just those, not every stored message of every conversation.
            if self.topics is not None and (n_changed or self._mentions_topic(conv)):
                judge.append(conv.id)
        del items, results
        if judge:
            on, _ = self.ledger.apply_ignored_topics(self.pattern, list(dict.fromkeys(judge)))
            self.result.conversations_ignored += len(on)
            self.result.newly_ignored.extend(on)
        self.ledger.set_watermarks(self.marks)
        self.marks = []
        for key, from_start, errors in self.file_errors:
            if from_start or errors:
                self.ledger.record_ingest_errors(key, errors, replace=from_start)
        self.file_errors = []
        for run in self.done:
            run.finish()
        self.done = []

    def _mentions_topic(self, conv: Conversation) -> bool:
        assert self.topics is not None
        return bool(self.topics.search(conv.title)) or any(self.topics.search(m.text) for m in conv.messages)

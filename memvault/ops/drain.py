"""The spool drainer: make what hooks spooled recallable, under the writer lock.

One drain takes a snapshot of the spool, takes the writer lock, ingests only the files the
entries name (the ingest stage's watermarks make that incremental: an appended transcript
costs its new bytes), stores spooled notes, and indexes every conversation changed since it
was last indexed (the index stage's pure functions, for just those conversations). Chunking,
clustering and synthesis stay nightly. The entries of the snapshot are removed only after
all of that has committed: a drainer killed at any point leaves them, and the next drain
re-reads from the watermarks (messages are upserted by id, nodes by a stable id), so
nothing is lost and nothing is doubled.
"""

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.live import spool
from memvault.errors import EmbedderMismatchError, EmbeddingServerError, LockedError, MemvaultError
from memvault.failpoints import failpoint
from memvault.ids import short_ids
from memvault.lock import DRAIN_COMMAND, writer_lock
from memvault.models import Conversation
from memvault.ops.admin_results import DrainCounts, DrainTotals
from memvault.ops.capture_paths import refusal
from memvault.config.settings import Settings
from stores.ledger import Ledger
from stores.nodes import NodeIndex
from stores.vector_cache import cached
from memvault.stages.index_rows import conversation_rows, sync_doc, write_index
from memvault.stages.ingest import configured_roots, ingest_roots


@dataclass
class DrainResult:
    """What one drain did."""

    entries: int = 0
    files: int = 0
    messages_new: int = 0
    notes: int = 0
    conversations_indexed: int = 0
    nodes_written: int = 0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> DrainCounts:
        return {"entries": self.entries, "files": self.files, "messages_new": self.messages_new, "notes": self.notes,
                "conversations_indexed": self.conversations_indexed, "nodes_written": self.nodes_written,
                "errors": list(self.errors)}


def index_conversations(ledger: Ledger, nodes: NodeIndex, embedder: Any, settings: Settings,
                        cids: list[str] | None = None) -> tuple[int, int]:
    """Index the conversations changed since last indexed (or ``cids``); articles, pending
    retries and the access log stay the nightly index stage's. Returns (conversations, nodes)."""
    todo = ledger.conversations_to_index() if cids is None else cids
    if not todo:
        return 0, 0
    shorts = short_ids(ledger.conversation_ids())
    writes: list[dict[str, Any]] = []
    deletes: list[str] = []
    for cid in todo:
        changed, gone = sync_doc(nodes, f"conv:{cid}",
                                 conversation_rows(ledger, cid, shorts[cid], settings.index.context_turns))
        writes += changed
        deletes += gone
    write_index(nodes, embedder, writes, deletes, settings.index)
    failpoint("drain", "indexed")  # nodes written, the ledger not yet marked, the spool kept
    ledger.mark_indexed(todo)
    return len(todo), len(writes)


def store_notes(ledger: Ledger, notes: list[Conversation]) -> int:
    """Upsert note conversations (already redacted) in one transaction."""
    if not notes:
        return 0
    with ledger.transaction():
        ledger.upsert_conversations(notes)
    return len(notes)


def _plan(snapshot: list[tuple[Path, dict[str, Any] | None]], settings: Settings,
          result: DrainResult) -> tuple[list[tuple[str, Path]], list[Conversation], list[Path]]:
    """The ingest roots and notes the spool entries ask for (duplicates folded), and the
    entries to drain; each unusable entry is quarantined with its reason, never retried."""
    files: dict[str, str] = {}
    kinds: set[str] = set()
    notes: list[Conversation] = []
    kept: list[Path] = []
    failed = spool.failed_attempts(settings.state_dir)
    for path, entry in snapshot:
        reason = _unusable(entry, settings, failed.get(path.name))
        if reason:
            result.errors.append(f"{path.name}: {reason} — quarantined")
            spool.quarantine(settings.state_dir, path, reason)
            continue
        kept.append(path)
        assert entry is not None
        op = entry.get("op")
        if op == "transcript":
            files[entry["path"]] = entry.get("source") or "auto"
        elif op == "sources":
            kinds.add(str(entry.get("source")))
        else:
            try:
                notes.append(Conversation.model_validate(entry.get("conversation")))
            except ValueError as exc:
                kept.pop()
                result.errors.append(f"{path.name}: a spooled note that does not validate ({exc}) — quarantined")
                spool.quarantine(settings.state_dir, path, f"a spooled note that does not validate ({exc})")
    roots = [(kind, Path(p)) for p, kind in files.items()]
    roots += [r for r in configured_roots(settings) if r[0] in kinds or (r[0] == "auto" and kinds)]
    return roots, notes, kept


def _unusable(entry: dict[str, Any] | None, settings: Settings, failures: list[Any] | None) -> str | None:
    """Why a spool entry cannot be drained, or None."""
    if failures and int(failures[0]) >= spool.MAX_ATTEMPTS:
        return f"its drain failed {failures[0]} times (last: {failures[1]})"
    op = (entry or {}).get("op")
    if entry is None or op not in ("transcript", "sources", "note"):
        return "not a spool entry memvault understands"
    if op == "transcript":
        if not isinstance(entry.get("path"), str):
            return "a transcript entry without a path"
        return refusal(entry["path"], settings)
    return None


def drain_once(settings: Settings, embedder: Any = None, lock_timeout_s: float | None = None) -> DrainResult:
    """One drain of the spool as it is now (``LockedError`` when the writer lock stays busy)."""
    state = settings.state_dir
    snapshot = spool.entries(state)
    result = DrainResult(entries=len(snapshot))
    if not snapshot:
        return result
    roots, notes, kept = _plan(snapshot, settings, result)
    if not kept:
        for err in result.errors:
            spool.log_line(state, f"drain: {err}")
        return result
    if embedder is None:
        from memvault.embeddings.select import embedder_for

        embedder = cached(embedder_for(settings), settings.state_dir)
    timeout = settings.lock_timeout_s if lock_timeout_s is None else lock_timeout_s
    with writer_lock(state, DRAIN_COMMAND, timeout):
        try:
            ledger = Ledger(settings.ledger_path)
            try:
                if roots:
                    ingested = ingest_roots(ledger, settings, roots)
                    result.files, result.messages_new = ingested.files_changed, ingested.messages_new
                    result.errors += [f"{e.file}:{e.line or '-'}: {e.error}" for e in ingested.errors]
                    failpoint("drain", "ingested")
                    if ingested.newly_ignored:
                        if NodeIndex.exists(settings):  # whichever embedder built it: deleting mixes no vectors
                            NodeIndex.open_stored(settings).delete_docs([f"conv:{c}" for c in ingested.newly_ignored])
                        ledger.clear_indexed(ingested.newly_ignored)
                result.notes = store_notes(ledger, notes)
                try:
                    nodes = NodeIndex.open_or_create(settings, embedder=embedder)
                    result.conversations_indexed, result.nodes_written = index_conversations(ledger, nodes, embedder,
                                                                                             settings)
                except (EmbedderMismatchError, EmbeddingServerError) as exc:
                    # Not the entry's fault, so not counted against it: what it brought is in
                    # the ledger, unmarked, and the drain after `memvault reindex` (an index of
                    # another embedder: the old one keeps serving as it is) or after the server
                    # is back, or the nightly run, indexes it.
                    result.errors.append(f"captured into the ledger, not indexed yet: {exc}")
            finally:
                ledger.close()
        except Exception as exc:
            # Counted against each entry: after MAX_ATTEMPTS failed drains they are set aside.
            spool.record_failure(state, kept, f"{type(exc).__name__}: {exc}")
            raise
    spool.remove(kept)
    for err in result.errors:
        spool.log_line(state, f"drain: {err}")
    return result


def run_drainer(settings: Settings, wait: bool = True, embedder: Any = None,
                sleep_s: float = 2.0) -> DrainTotals:
    """Drain until the spool is empty, as the home's only drainer.

    With ``wait``, a busy writer lock (the nightly run) is waited out for up to
    ``live.drain_wait_s``; the spool is kept either way. After releasing its own lock it
    looks at the spool once more, so an entry spooled while it was finishing is not left
    for the next hook.
    """
    state = settings.state_dir
    lock = spool.DrainLock(state)
    deadline = time.monotonic() + (settings.live.drain_wait_s if wait else 0.0)
    totals: DrainTotals = {"drains": 0, "entries": 0, "messages_new": 0, "notes": 0,
                           "conversations_indexed": 0, "errors": [], "waiting": False}
    while True:
        if not lock.acquire():
            totals["note"] = "another drainer is running; it drains the spool"
            return totals
        try:
            while spool.pending(state):
                try:
                    done = drain_once(settings, embedder)
                except LockedError as exc:
                    if time.monotonic() >= deadline:
                        totals["waiting"] = True
                        totals["note"] = f"{exc}; the spool is kept and drained by the next capture, drain or run"
                        return totals
                    time.sleep(sleep_s)
                    continue
                except MemvaultError as exc:
                    spool.log_line(state, f"drain failed: {exc}")
                    totals["errors"].append(str(exc))
                    raise
                totals["drains"] += 1
                totals["entries"] += done.entries
                totals["messages_new"] += done.messages_new
                totals["notes"] += done.notes
                totals["conversations_indexed"] += done.conversations_indexed
                totals["errors"] += done.errors
        finally:
            lock.release()
        if not spool.pending(state):
            return totals

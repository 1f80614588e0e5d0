"""`memvault note` and MCP `remember`: a note stored as a conversation of source kind `note`.

A note is redacted like any transcript, stored in the ledger, and indexed at once (under
the writer lock), so it is recallable immediately and cited as ``conv:<id>``; the nightly
run chunks, clusters and synthesizes it like any other conversation. When the writer lock
is busy (the nightly run), the redacted note is spooled and the drainer stores it after.
"""

import uuid
from datetime import datetime, timezone
from typing import Any

from memvault.live import spool
from memvault.errors import (DiskFullError, EmbedderMismatchError, EmbeddingServerError, LockedError, UsageError,
                             disk_full)
from memvault.ids import short_ids
from memvault.lock import writer_lock
from memvault.models import Conversation, Message, redact_conversation
from memvault.ops.results import NoteResult
from memvault.config.settings import Settings

MAX_NOTE_CHARS = 20_000  # a note is a fact or a decision, not a document to import


def make_note(settings: Settings, text: str, title: str | None = None, project: str | None = None,
              author: str = "user") -> tuple[Conversation, dict[str, int]]:
    """The redacted note conversation (and the redaction counts); ``UsageError`` on empty text."""
    body = (text or "").strip()
    if not body:
        raise UsageError("a note needs text, e.g. memvault note \"the backup runs at 02:00\"")
    if len(body) > MAX_NOTE_CHARS:
        raise UsageError(f"a note holds at most {MAX_NOTE_CHARS} characters (this one has {len(body)}) — "
                         "put a long document in a file and ingest it, or split the note")
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    head = (title or "").strip() or " ".join(body.split())[:80]
    conv = Conversation(source="note", native_id=uuid.uuid4().hex, title=head, started_at=now, updated_at=now,
                        project=(project or "").strip() or None,
                        messages=[Message(native_id="1", role="user" if author == "user" else "assistant",
                                          text=body, timestamp=now)])
    return redact_conversation(conv, settings.ingest.redact_patterns or None)


def add_note(settings: Settings, text: str, title: str | None = None, project: str | None = None,
             author: str = "user", embedder: Any = None, lock_timeout_s: float | None = None) -> NoteResult:
    """Store and index a note; spooled instead when the writer lock stays busy.

    Returns ``id`` (the full key), ``cite`` (``conv:<short>`` once stored; the 8-hex prefix
    while queued), ``queued`` and ``redactions``.
    """
    from memvault.ops.drain import index_conversations, store_notes

    conv, redactions = make_note(settings, text, title, project, author)
    cid = conv.id
    timeout = settings.lock_timeout_s if lock_timeout_s is None else lock_timeout_s
    waiting = ""
    try:
        with writer_lock(settings.state_dir, "memvault note", timeout):
            from stores.ledger import Ledger
            from stores.nodes import NodeIndex

            if embedder is None:
                from memvault.embeddings.select import embedder_for

                embedder = embedder_for(settings)
            ledger = Ledger(settings.ledger_path)
            try:
                store_notes(ledger, [conv])  # one transaction: on a full disk nothing is stored
                try:
                    nodes = NodeIndex.open_or_create(settings, embedder=embedder)
                    index_conversations(ledger, nodes, embedder, settings, [cid])
                except EmbedderMismatchError as exc:
                    # Stored; the index of another embedder takes no vectors of this one.
                    waiting = f"stored, recallable once `memvault reindex` has run: {exc}"
                except EmbeddingServerError as exc:
                    waiting = f"stored, recallable once the embeddings server answers (the next capture or run indexes it): {exc}"
                except OSError as exc:
                    full = disk_full(exc, settings.state_dir)
                    if full is None:
                        raise
                    raise _undo_note(ledger, cid, full) from exc
                short = short_ids(ledger.conversation_ids())[cid]
            finally:
                ledger.close()
    except LockedError as exc:
        spool.append(settings.state_dir, {"op": "note", "conversation": conv.model_dump(mode="json")})
        from memvault.ops.capture import spawn_drainer

        if not spool.drainer_running(settings.state_dir):
            spawn_drainer(settings.home)
        return {"id": cid, "cite": f"conv:{cid[:8]}", "queued": True, "redactions": redactions,
                "note": f"{exc} — the note is spooled and stored when the lock is free"}
    done: NoteResult = {"id": cid, "cite": f"conv:{short}", "queued": False, "redactions": redactions}
    if waiting:
        done["note"] = waiting
    return done


def _undo_note(ledger: Any, cid: str, full: DiskFullError) -> DiskFullError:
    """No half note: one stored but not indexed is taken out again, so the error's "not
    stored" is true; when even that cannot be written, the error says what is left."""
    try:
        ledger.forget_conversation(cid)
    except OSError:
        return DiskFullError(f"{full} (the note is in the ledger but not yet recallable; "
                             "the next `memvault run` indexes it)")
    return DiskFullError(f"{full}; the note was not stored")

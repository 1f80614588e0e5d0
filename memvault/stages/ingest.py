"""ingest: transcript files → conversations and messages in the ledger, per-file watermarks.

An unchanged file costs a stat; an appended JSONL file is read from its byte offset (when
the consumed prefix still hashes the same); anything else is re-parsed whole and diffed by
message id. A big JSONL file is read in slices: each slice is stored and its watermark
advanced in one transaction, so memory stays bounded and a crash resumes at the last slice.
One bad file never stops the others: its problem is reported and skipped, and kept in the
ledger beside its watermark, so every later run reports it again until the file changes.
Only regular files are read (a FIFO named like a transcript never blocks the run), and a
message past ``MAX_MESSAGE_CHARS`` is stored cut, with a marker saying how much was cut.

`run_ingest(ctx)` is the stage; the live drainer (`memvault/ops/drain.py`) and `memvault watch`
call `ingest_roots` and `discover` under it with their own roots.
"""

import errno
import gc
import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import Any

from memvault.files import storable_path
from memvault.ids import conv_ref
from memvault.models import Conversation, LineError
from memvault.runs.progress import Progress, current
from memvault.config.settings import Settings
from memvault.sources.base import ParseResult
from memvault.sources.caps import Caps, limits
from memvault.stages.context import StageContext
from memvault.stages.ingest_batches import MAX_MESSAGE_CHARS, TRUNCATED, IngestResult
from memvault.stages.ingest_batches import Batches as _Batches
from memvault.sources.kinds import EXPORT_KINDS, FILE_KINDS, RESUMING_KINDS, listed
from stores.ledger import Ledger
from stores.rows import Watermark

log = logging.getLogger(__name__)

SUFFIXES = {".jsonl", ".json", ".zip"}  # .zip: ChatGPT and claude.ai exports as downloaded
WINDOW = 64 * 1024
SLICE_BYTES = 4 * 1024 * 1024  # a slice of a big file: what one parse holds in memory
BATCH_BYTES = 16 * 1024 * 1024  # small whole files stored and committed together
PARTIAL = -1  # watermark size of a file ingested part way: never "unchanged", always resumed
OWN_KEY = "memvault_own"  # state key: conversations of this file that memvault itself made
TOPICS_KEY = "topics_to_ignore"  # ledger_state key: fingerprint of the list last applied
def prefix_hash(path: Path, length: int) -> str:
    """Hash of the consumed prefix, sampled at both ends so an append never re-reads the file.

    The first and last 64 KiB before ``length`` (plus the length) catch a rewritten or
    truncated file without hashing hundreds of megabytes on every appended line.
    """
    h = hashlib.sha256(str(length).encode())
    with open(path, "rb") as fh:
        h.update(fh.read(min(WINDOW, length)))
        if length > WINDOW:
            fh.seek(max(WINDOW, length - WINDOW))
            h.update(fh.read(length - max(WINDOW, length - WINDOW)))
    return h.hexdigest()


def discover(roots: list[tuple[str, Path]]) -> tuple[list[tuple[str, Path]], list[LineError]]:
    """Expand folders into transcript files (sorted); report roots that do not exist.

    A folder named like a transcript (``x.jsonl/``) is kept, so ingesting it reports it.
    """
    files: list[tuple[str, Path]] = []
    errors: list[LineError] = []
    for kind, root in roots:
        try:
            if root.is_file():
                files.append((kind, root))
            elif root.is_dir():
                found = sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES)
                files.extend((kind, p) for p in found)
            else:
                errors.append(LineError(file=str(root), error="no such file or folder — check the path in memvault.toml"))
        except OSError as exc:  # a name too long, a folder that cannot be listed: this root only
            errors.append(LineError(file=str(root), error=f"cannot read {root} ({exc.strerror or exc}) — skipped"))
    return files, errors


class _FileRun:
    """Prepares the slices of one file for storing and keeps its counts (a conversation is
    new *or* updated)."""

    def __init__(self, settings: Settings, result: IngestResult, own: set[str],
                 own_prompts: frozenset[str] = frozenset()) -> None:
        self.settings, self.result, self.own, self.own_prompts = settings, result, own, own_prompts
        self.new: set[str] = set()
        self.updated: set[str] = set()

    def prepare(self, conversations: list[Conversation]) -> list[Conversation]:
        """Drop memvault's own conversations; strip injected blocks, mark noise, redact."""
        from memvault.hygiene.noise import conversation_title, is_own_conversation, mark_low_value, mark_noise, strip_memory_blocks
        from memvault.models import redact_conversation

        ingest = self.settings.ingest
        out: list[Conversation] = []
        for conv in conversations:
            # A recorded prompt of memvault's own sits in the first messages: remembered per
            # file, so the rest of the conversation, in later slices or appends, goes too.
            if conv.id in self.own or is_own_conversation(conv, self.own_prompts):
                if conv.id not in self.own:
                    self.result.skipped_own += 1
                self.own.add(conv.id)
                continue
            for m in conv.messages:
                text = strip_memory_blocks(m.text)
                if len(text) > MAX_MESSAGE_CHARS:
                    text = _cut(text)
                    self.result.messages_truncated += 1
                if text is not m.text:  # assigning to a pydantic model is not free
                    m.text = text
            mark_low_value(conv.messages, ingest.low_value_patterns or None)
            mark_noise(conv)
            conv.title = conversation_title(conv)
            conv, counts = redact_conversation(conv, ingest.redact_patterns or None)
            for name, n in counts.items():
                self.result.redactions[name] = self.result.redactions.get(name, 0) + n
            out.append(conv)
        return out

    def note(self, cid: str, is_new: bool, n_new: int, n_changed: int) -> None:
        """Count what storing one conversation did (called when its batch is written)."""
        self.result.messages_new += n_new
        if is_new:
            self.new.add(cid)
        elif n_new or n_changed:
            self.updated.add(cid)

    def finish(self) -> None:
        """Add this file's conversation counts to the result (after its last batch is written)."""
        self.result.conversations_new += len(self.new)
        self.result.conversations_updated += len(self.updated - self.new)


def _cut(text: str) -> str:
    """``text`` cut at ``MAX_MESSAGE_CHARS`` (at a space when one is near, so no token is
    split for the redactor to miss), with a marker saying how much went."""
    cut = text.rfind(" ", MAX_MESSAGE_CHARS - 2048, MAX_MESSAGE_CHARS)
    cut = cut if cut > 0 else MAX_MESSAGE_CHARS
    return text[:cut] + TRUNCATED.format(n=len(text) - cut)


def ingest_file(ledger: Ledger, path: Path, kind_hint: str, settings: Settings, result: IngestResult,
                batches: _Batches, mark: Watermark | None, progress: Progress | None = None,
                slice_bytes: int = SLICE_BYTES, key: str | None = None,
                own_prompts: frozenset[str] = frozenset()) -> "_FileRun | None":
    """Parse one file into ``batches``; bad input is recorded in ``result``, never raised.

    ``mark`` is the file's watermark (looked up for all files at once), ``progress`` counts
    bytes read, ``key`` is the resolved path if the caller has it, ``own_prompts`` the digests
    of memvault's own prompts (memvault.hygiene.selfcalls). Returns the file's run, whose counts are
    complete once the batches are flushed (None when nothing was read).

    One loop over a file's slices: each slice's parse, redaction, watermark and batch
    hand-off stay together so a crash resumes at a slice boundary.
    """
    from memvault.hygiene.redact import redact_json
    from memvault.sources import detect_format
    from memvault.sources.export import export_slices

    st = path.stat()  # one stat serves the folder check and the watermark comparison
    if (not_a_file := _not_a_file(path, st.st_mode)) is not None:
        result.errors.append(not_a_file)
        return None
    key = key or storable_path(str(path.resolve()))
    if mark and mark.size == st.st_size and mark.mtime == st.st_mtime:
        carried = list(mark.errors)
        result.errors.extend(carried)  # still broken: say so in every run until it changes
        result.errors_from_earlier_runs += len(carried)
        return None
    kind = mark.kind if mark else (kind_hint if kind_hint != "auto" else detect_format(path))
    if kind is None:
        result.errors.append(LineError(file=str(path), error=f"not a transcript memvault recognizes ({listed(FILE_KINDS)}) — skipped"))
        return None
    offset, state = _resume_point(ledger, path, key, kind, mark, st.st_size)
    run = _FileRun(settings, result, set((state or {}).get(OWN_KEY, [])), own_prompts)
    result.files_changed += 1
    # An export (plain or zipped) is streamed in slices of one pass; JSONL resumes per slice.
    stream = export_slices(path, kind, slice_bytes) if kind in EXPORT_KINDS else None
    while True:
        parsed, more = next(stream) if stream is not None else _parse_slice(path, kind, offset, state, slice_bytes)
        consumed = max(parsed.end_offset - offset, 0)
        result.errors.extend(parsed.errors)
        slice_errors = (offset == 0, list(parsed.errors))
        _count_skipped(result, parsed.skipped_types)
        conversations = run.prepare(parsed.conversations)
        # Parser state is stored in the ledger too, and may quote message text (a title, an
        # assistant message being merged): it is redacted like the messages themselves.
        new_state, _ = redact_json({**parsed.state, OWN_KEY: sorted(run.own)}, settings.ingest.redact_patterns or None)
        end = parsed.end_offset
        mark_row = (key, kind, PARTIAL if more else st.st_size, st.st_mtime, prefix_hash(path, end), end, new_state)
        del parsed  # the slice's objects go as soon as the batch has them
        result.bytes_read += consumed
        result.slices += 1
        batches.add(run, conversations, mark_row, consumed, file_done=not more, errors=slice_errors)
        del conversations
        if progress is not None:
            progress.advance(consumed)
        if not more:
            break
        offset, state = end, new_state
    return run


def _not_a_file(path: Path, mode: int) -> LineError | None:
    """Why ``path`` (of stat ``mode``) is not read: a folder, a FIFO, socket or device."""
    if S_ISDIR(mode):
        return LineError(file=str(path), error=f"{path} is a directory, not a transcript file — skipped")
    if not S_ISREG(mode):
        return LineError(file=str(path), error=f"{path} is not a regular file (a FIFO, socket or "
                         "device) — skipped; only regular files are read")
    return None


def _resume_point(ledger: Ledger, path: Path, key: str, kind: str, mark: Watermark | None,
                  size: int) -> tuple[int, dict[str, Any] | None]:
    """Offset and parser state to read on from: the watermark's when the file was appended to
    (same prefix), else the start."""
    if mark and kind in RESUMING_KINDS and size >= mark.byte_offset > 0 \
            and prefix_hash(path, mark.byte_offset) == mark.prefix_hash:
        stored = ledger.watermark(key)  # the bulk lookup left the parser state out
        return mark.byte_offset, stored.state if stored else None
    return 0, None


def _parse_slice(path: Path, kind: str, offset: int, state: dict[str, Any] | None,
                 slice_bytes: int) -> tuple[ParseResult, bool]:
    """One JSONL slice from ``offset``, and whether it stopped at the slice limit (more to read)."""
    from memvault.sources import parse_file

    # `kind` is a SourceKind once discovery detected it (a str in the watermark row).
    parsed = parse_file(path, kind, offset, state, max_bytes=slice_bytes)  # type: ignore[arg-type]
    return parsed, parsed.end_offset - offset >= slice_bytes


def _count_skipped(result: IngestResult, skipped: dict[str, int]) -> None:
    from memvault.hygiene.redact import redact

    for name, n in skipped.items():
        name = redact(name)[0]  # a "type" value of the transcript, echoed in the run report
        result.skipped_types[name] = result.skipped_types.get(name, 0) + n


def configured_roots(settings: Settings) -> list[tuple[str, Path]]:
    return [(s.kind, Path(s.path).expanduser()) for s in settings.sources]


def _file_size(path: Path) -> int:
    try:
        st = path.stat()
    except OSError:
        return 0
    return st.st_size if S_ISREG(st.st_mode) else 0


def _resolved(path: Path, folders: dict[Path, Path]) -> str:
    """``str(path.resolve())``, resolving each folder once: a no-change run over a thousand
    sessions in forty project folders is mostly this."""
    if path.is_symlink():
        try:
            return str(path.resolve())
        except (RuntimeError, OSError):  # a symlink loop: ingest_file's stat reports it
            return str(path.absolute())
    folder = folders.get(path.parent)
    if folder is None:
        folder = folders[path.parent] = path.parent.resolve()
    return str(folder / path.name)


def apply_topics(ledger: Ledger, settings: Settings, result: IngestResult) -> str | None:
    """The Topics_to_Ignore regex; when the list changed since last run, re-judge everything."""
    from memvault.hygiene.topics import load_topics, topics_fingerprint, topics_pattern

    topics = load_topics(settings.home)
    pattern = topics_pattern(topics)
    fingerprint = topics_fingerprint(topics)
    if ledger.state_value(TOPICS_KEY) != fingerprint:
        with ledger.transaction():
            on, _off = ledger.apply_ignored_topics(pattern)
            ledger.set_state_value(TOPICS_KEY, fingerprint)
        result.conversations_ignored += len(on)
        result.newly_ignored.extend(on)
    return pattern


@contextmanager
def _fewer_gc_passes() -> Iterator[None]:
    """Run the cyclic garbage collector less often while ingesting.

    A batch holds tens of thousands of live messages, and every default-threshold pass walks
    them all again (a fifth of the CPU time), though parsed JSON and messages hold no cycles.
    The collector still runs, only after more allocations; the old thresholds come back after.
    """
    before = gc.get_threshold()
    gc.set_threshold(20_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def ingest_roots(ledger: Ledger, settings: Settings, roots: list[tuple[str, Path]], progress: Progress | None = None,
               slice_bytes: int = SLICE_BYTES) -> IngestResult:
    """Ingest every transcript file under ``roots`` into the ledger, reporting to ``progress``.

    Reads the files (from each one's watermark: only what was appended since) and
    Meta/Topics_to_Ignore.md; writes conversations, messages (redacted) and watermarks.
    Unit of work: a batch (whole small files, or one slice of at most ``slice_bytes`` of a
    big one) committed in one transaction with its watermarks; failpoint `ingest:<n>` fires
    after the n-th commit.
    """
    from memvault.hygiene.selfcalls import self_call_log

    result = IngestResult()
    own_prompts = self_call_log(settings.state_dir).digests()
    pattern = apply_topics(ledger, settings, result)
    files, errors = discover(roots)
    result.errors.extend(errors)
    sizes = [_file_size(p) for _, p in files]
    marks = ledger.watermarks()  # one query, so an unchanged file costs only its stat
    for key, errors in ledger.ingest_errors().items():
        if key in marks:
            marks[key] = replace(marks[key], errors=tuple(errors))
    if progress is not None:
        progress.begin(sum(sizes), f"{len(files)} file(s)")
    caps = Caps(string_bytes=settings.ingest.max_string_bytes, zip_entry_bytes=settings.ingest.max_zip_entry_bytes)
    with limits(caps), _fewer_gc_passes(), ledger.bulk_load(), _Batches(ledger, result, max(slice_bytes, BATCH_BYTES), pattern=pattern) as batches:
        folders: dict[Path, Path] = {}
        for (kind, path), size in zip(files, sizes):
            _ingest_one(ledger, settings, result, batches, marks, kind, path, size, progress, slice_bytes, folders,
                        own_prompts)
    if progress is not None:
        progress.done()
    return result


def _ingest_one(ledger: Ledger, settings: Settings, result: IngestResult, batches: _Batches,
                marks: dict[str, Watermark], kind: str, path: Path, size: int, progress: Progress | None,
                slice_bytes: int, folders: dict[Path, Path], own_prompts: frozenset[str] = frozenset()) -> None:
    """One file of ``ingest_roots``: its problems become errors, never exceptions."""
    result.files_seen += 1
    before = result.bytes_read
    try:
        key = storable_path(_resolved(path, folders))
        ingest_file(ledger, path, kind, settings, result, batches, marks.get(key), progress, slice_bytes, key,
                    own_prompts)
    except FileNotFoundError:
        result.errors.append(LineError(file=str(path), error=f"{path} vanished during the run (moved or "
                                       "deleted) — skipped; it is read again if it comes back"))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            message = f"{path} is a symlink loop (it points, maybe through others, at itself) — skipped; fix or remove the link"
        else:
            message = f"cannot read {path} ({exc.strerror or exc}) — skipped"
        result.errors.append(LineError(file=str(path), error=message))
    except (UnicodeError, ValueError, RecursionError, RuntimeError) as exc:
        # A file that cannot be read: report and go on (a storage failure is a MemvaultError).
        result.errors.append(LineError(file=str(path), error=f"{type(exc).__name__}: {exc}"))
    if progress is not None:
        # Unchanged or appended files read less than their size: the bar still completes.
        progress.advance(max(size - (result.bytes_read - before), 0), path.name)


def run_ingest(ctx: StageContext) -> IngestResult:
    """Ingest the configured sources plus any ad hoc paths of this run (``ctx.extra_paths``).

    Drops from the index the conversations that Meta/Topics_to_Ignore.md newly ignores;
    records the conversations stored on the context for the changelog.
    """
    roots = configured_roots(ctx.settings) + [("auto", p) for p in ctx.extra_paths]
    result = ingest_roots(ctx.ledger, ctx.settings, roots, progress=current())
    ctx.conversations_ingested = result.conversations_new + result.conversations_updated
    for err in result.errors:
        log.warning("%s:%s: %s", err.file, err.line or "-", err.error)
    if result.newly_ignored:
        dropped = drop_ignored_from_index(ctx, result.newly_ignored)
        log.info("%d conversation(s) now ignored (Meta/Topics_to_Ignore.md); %d index node(s) removed",
                 len(result.newly_ignored), dropped)
    log.info("ingested %d file(s), %d changed, %d new message(s)", result.files_seen, result.files_changed,
             result.messages_new)
    return result


def drop_ignored_from_index(ctx: StageContext, cids: list[str]) -> int:
    """Remove the index nodes of conversations that just became ignored (so recall skips them)."""
    nodes = ctx.nodes_for_deletes()
    indexed = [c for c in cids if nodes.doc_hashes(conv_ref(c))]
    ids = [i for c in indexed for i in nodes.doc_hashes(conv_ref(c))]
    if ids:
        nodes.delete(ids)
    ctx.ledger.clear_indexed(indexed)
    return len(ids)

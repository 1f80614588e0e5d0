"""JSON exports (ChatGPT, claude.ai), plain or zipped, read one conversation at a time.

Users get these exports as a ``.zip`` holding ``conversations.json`` (and images, HTML,
account files); they may unzip it or not, and a 1 GB export must not be loaded whole. So the
file (or each JSON member of the zip whose content is an export) is streamed through ijson,
one conversation object at a time, and handed back in slices of about ``max_bytes`` of JSON:
ingest stores each slice before the next is read, so memory holds one slice, not the export.

Exports are rewritten wholesale by each download, so they are re-read in full each time
(``end_offset`` of the last slice is the file's size); the ledger's upsert by native id makes
that idempotent, and a newer export adds only the conversations and messages that are new.
One malformed conversation is reported (file, zip member, its index in the list) and skipped;
a syntax error ends the stream there, keeping every conversation before it.
"""

from __future__ import annotations

import codecs
import os
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

from memvault.models import Conversation, LineError
from memvault.sources.base import ParseResult, open_regular, wide_encoding
from memvault.sources.caps import CappedReader, current
from memvault.sources.kinds import KINDS, ExportKind

ConvParser = Callable[[dict[str, Any]], Conversation | None]

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header; an empty archive's directory
SNIFF_BYTES = 1 << 20
READ_BYTES = 1 << 16  # what ijson asks for at a time
# What a damaged or cut zip raises while it is opened or read (zlib's for a corrupt stream).
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, OSError, EOFError, RuntimeError, NotImplementedError)
# Errors a conversation object can raise in a parser: its fault, not the export's.
_CONVERSATION_ERRORS = (TypeError, ValueError, KeyError, AttributeError, RecursionError)


def is_zip(head: bytes) -> bool:
    """Whether a file's first bytes are a zip archive's."""
    return head.startswith(ZIP_MAGIC)


def _utf8_text(head: bytes) -> str:
    encoding = wide_encoding(head[:512])
    codec = encoding.replace(" ", "-").lower() if encoding else "utf-8-sig"
    return head.decode(codec, errors="replace").lstrip("\ufeff")


def export_kind_of_text(head: str) -> ExportKind | None:
    """``"chatgpt"`` or ``"claude-ai"`` when ``head`` (a JSON text's start) is such an export."""
    head = head.lstrip("\ufeff \t\r\n")
    if not head.startswith(("[", "{")):
        return None  # chat.html quotes the same keys: only a JSON document counts
    # current_node follows the mapping, which can pass the sniff window on a long first
    # conversation; message authors inside the mapping show up early.
    if '"mapping"' in head and ('"current_node"' in head or '"author"' in head):
        return "chatgpt"
    if '"chat_messages"' in head:
        return "claude-ai"
    return None


def _json_members(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The archive's JSON members, ``conversations.json`` first (the export's own name)."""
    members = [i for i in archive.infolist() if not i.is_dir() and i.filename.lower().endswith(".json")]
    return sorted(members, key=lambda i: (Path(i.filename).name.lower() != "conversations.json", i.filename))


def zip_export_members(archive: zipfile.ZipFile) -> tuple[ExportKind | None, list[zipfile.ZipInfo], list[str]]:
    """The export kind of a zip, the members holding it (judged by their content), and the
    JSON members that could not be read (damaged), named with why."""
    kind: ExportKind | None = None
    found: list[zipfile.ZipInfo] = []
    damaged: list[str] = []
    for info in _json_members(archive):
        try:
            with archive.open(info) as member:
                head = member.read(SNIFF_BYTES)
        except _ZIP_ERRORS as exc:
            damaged.append(f"{info.filename} ({type(exc).__name__}: {exc})")
            continue
        member_kind = export_kind_of_text(_utf8_text(head))
        if member_kind and kind in (None, member_kind):
            kind = member_kind
            found.append(info)
    return kind, found, damaged


def detect_zip(path: Path) -> ExportKind | None:
    """The export kind inside the zip at ``path``; None if it holds no export."""
    try:
        with zipfile.ZipFile(path) as archive:
            return zip_export_members(archive)[0]
    except _ZIP_ERRORS:
        return None


class _Utf8Stream:
    """A byte stream of any export encoding re-encoded as UTF-8 for ijson, with counts.

    Exports are UTF-8, sometimes with a BOM, sometimes saved as UTF-16 by an editor; invalid
    bytes become U+FFFD as the whole-file reader always did, instead of failing the export.
    ``consumed`` counts the source bytes handed on, which sizes the slices.
    """

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.head = raw.read(READ_BYTES)
        encoding = wide_encoding(self.head[:512])
        codec = encoding.replace(" ", "-").lower() if encoding else "utf-8-sig"
        self.decoder = codecs.getincrementaldecoder(codec)(errors="replace")
        self.pending: bytes | None = self.head
        self.consumed = 0

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""  # ijson probes the stream's type with read(0): hand nothing over
        while True:
            first = self.pending is not None
            chunk = self.pending if self.pending is not None else self.raw.read(READ_BYTES)
            self.pending = None
            self.consumed += len(chunk)
            text = self.decoder.decode(chunk, final=not chunk)
            if first:
                text = text.lstrip("\ufeff")  # a UTF-16 BOM (utf-8-sig drops its own)
            if text or not chunk:
                return text.encode("utf-8")
            # only part of a character so far: read on rather than signal the end


def _first_char(head: bytes) -> str:
    return _utf8_text(head).lstrip("\ufeff \t\r\n")[:1]


class _Slicer:
    """Collects the conversations of one export into slices of about ``max_bytes``."""

    def __init__(self, path: Path, what: str, parse_one: ConvParser, max_bytes: int | None) -> None:
        self.path, self.what, self.parse_one, self.max_bytes = path, what, parse_one, max_bytes
        self.slice = ParseResult()
        self.started = 0  # source bytes consumed when the open slice began
        self.end = 0  # how far into the file the slices handed out reached

    def error(self, message: str) -> None:
        self.slice.errors.append(LineError(file=str(self.path), line=None, error=message))

    def add(self, where: str, index: int, item: Any) -> None:
        """Parse one conversation object; its problem becomes an error naming where it is."""
        if not isinstance(item, dict):
            self.error(f"{where}conversation #{index} (counting from 0) is a {type(item).__name__}, "
                       "not an object — skipped; the others are read")
            return
        try:
            conv = self.parse_one(item)
        # One odd conversation must not cost the user the rest of the export.
        except _CONVERSATION_ERRORS as exc:
            ident = item.get("conversation_id") or item.get("id") or item.get("uuid")
            named = f", id {ident}" if isinstance(ident, str) and ident else ""
            self.error(f"{where}conversation #{index} (counting from 0{named}) unusable: {exc} — skipped; "
                       "the others are read")
            return
        if conv is None:
            self.slice.skipped_types["empty_conversation"] = self.slice.skipped_types.get("empty_conversation", 0) + 1
        else:
            self.slice.conversations.append(conv)

    def full(self, consumed: int) -> bool:
        return self.max_bytes is not None and consumed - self.started >= self.max_bytes

    def take(self, end_offset: int, consumed: int) -> ParseResult:
        out, self.slice = self.slice, ParseResult()
        # Zip members need not lie in order in the file: the offset never goes back.
        self.end = out.end_offset = max(self.end, end_offset)
        self.started = consumed
        return out


def _stream_items(stream: _Utf8Stream) -> Iterator[Any]:
    """The conversation objects of one JSON export document, one at a time."""
    import ijson

    # A single conversation saved on its own is an object, not a list.
    prefix = "" if _first_char(stream.head) == "{" else "item"
    # use_float: epoch times must come back as floats (ijson's default is Decimal).
    # Strings past the cap are cut on the bytes first: ijson's time grows with a string's square.
    yield from ijson.items(CappedReader(stream, current().string_bytes), prefix, use_float=True)


def _parse_errors() -> tuple[type[BaseException], ...]:
    import ijson

    return (ijson.JSONError, ijson.IncompleteJSONError, UnicodeError, ValueError)


def iter_export(path: Path, what: str, parse_one: ConvParser,
                max_bytes: int | None = None) -> Iterator[tuple[ParseResult, bool]]:
    """Stream the export at ``path`` (a JSON file or a zip holding one) as (slice, more) pairs.

    Each slice holds the conversations of about ``max_bytes`` of JSON (all of them when
    None); ``more`` says another slice follows. ``end_offset`` is how far into the file the
    stream got (its size on the last slice). Problems come back as errors, never raised.
    """
    slicer = _Slicer(path, what, parse_one, max_bytes)
    try:
        handle = open_regular(path)
    except IsADirectoryError:
        slicer.error(f"{path} is a directory, not a {what} export file")
        yield slicer.take(0, 0), False
        return
    except FileNotFoundError:
        slicer.error(f"{path} no longer exists (moved or deleted); nothing read")
        yield slicer.take(0, 0), False
        return
    except OSError as exc:
        slicer.error(f"cannot read {path}: {exc.strerror or exc}")
        yield slicer.take(0, 0), False
        return
    with handle:
        size = _size(handle)
        head = handle.read(8)
        handle.seek(0)
        documents = _zip_documents(handle, path, what, slicer) if is_zip(head) else _plain_document(handle)
        pending: ParseResult | None = None
        for where, raw in documents:
            for result in _stream_document(raw, where, path, what, slicer, handle, size):
                if pending is not None:
                    yield pending, True
                pending = result
        last = slicer.take(size, 0)
        if pending is not None:
            if not (last.conversations or last.errors or last.skipped_types):
                pending.end_offset = size
                yield pending, False
                return
            yield pending, True
        yield last, False


def _size(handle: BinaryIO) -> int:
    return os.fstat(handle.fileno()).st_size


def _plain_document(handle: BinaryIO) -> Iterator[tuple[str, IO[bytes]]]:
    yield "", handle


def _zip_documents(handle: BinaryIO, path: Path, what: str, slicer: _Slicer) -> Iterator[tuple[str, IO[bytes]]]:
    """The export members of the zip on ``handle``, opened one after the other."""
    try:
        archive = zipfile.ZipFile(handle)
    except _ZIP_ERRORS as exc:
        slicer.error(f"{path} looks like a zip archive but cannot be opened ({exc}); re-download the {what} export")
        return
    with archive:
        try:
            _, members, damaged = zip_export_members(archive)
        except _ZIP_ERRORS as exc:
            slicer.error(f"{path} is a damaged zip archive ({type(exc).__name__}: {exc}); re-download the {what} export")
            return
        if not members and damaged:
            slicer.error(f"{path}: {', '.join(damaged[:3])} in the zip cannot be read; re-download the {what} export")
            return
        if not members:
            names = ", ".join(i.filename for i in _json_members(archive)[:5]) or "no JSON file"
            slicer.error(f"{path} is a zip archive without a {what} conversations.json inside (it holds {names}); "
                         "point memvault at the export's zip or its conversations.json")
            return
        cap = current().zip_entry_bytes
        for info in members:
            if info.file_size > cap:
                # Judged from the zip's directory, before a byte is inflated (a zip bomb).
                slicer.error(f"{info.filename} (in the zip) is {info.file_size:,} bytes uncompressed, more than "
                             f"ingest.max_zip_entry_bytes ({cap:,}) — skipped without inflating it; the other "
                             "entries are read (raise the setting to read it)")
                continue
            try:
                with archive.open(info) as member:
                    yield f"{info.filename} (in the zip): ", member
            except _ZIP_ERRORS as exc:
                slicer.error(f"{info.filename} (in the zip) cannot be read ({type(exc).__name__}: {exc}); "
                             f"the conversations before the damage were kept — re-download the {what} export")


def _stream_document(raw: IO[bytes], where: str, path: Path, what: str, slicer: _Slicer, handle: BinaryIO,
                     size: int) -> Iterator[ParseResult]:
    """Slices of one JSON document (the file, or one zip member); ``where`` names the member."""
    stream = _Utf8Stream(raw)
    slicer.started = 0  # each document counts its own bytes
    if not stream.head.strip():
        slicer.error(f"{where}{path} is empty; expected a {what} export (a JSON list)")
        return
    if b"\0" in stream.head[:8192] and not wide_encoding(stream.head[:512]):
        slicer.error(f"{where}{path} looks binary (NUL bytes), not a {what} export")
        return
    first = _first_char(stream.head)
    if first not in ("[", "{"):
        slicer.error(f"{where}{path}: expected a list of conversations, not JSON starting with {first!r}; "
                     f"re-download the {what} export")
        return
    seen = 0
    try:
        for item in _stream_items(stream):
            slicer.add(where, seen, item)
            seen += 1
            if slicer.full(stream.consumed):
                yield slicer.take(min(handle.tell(), size), stream.consumed)
    except _parse_errors() as exc:
        slicer.error(f"{where}{path} is not valid JSON after {seen} conversation(s) ({exc}); those before the "
                     f"fault were read — re-download the {what} export")
    except RecursionError:
        slicer.error(f"{where}{path} is JSON nested too deeply to read; re-download the {what} export")
    except _ZIP_ERRORS as exc:
        slicer.error(f"{where}{path} cannot be read to its end ({type(exc).__name__}: {exc}); the conversations "
                     f"before the damage were kept — re-download the {what} export")




def export_slices(path: Path, kind: str, max_bytes: int | None) -> Iterator[tuple[ParseResult, bool]]:
    """:func:`iter_export` for an export ``kind`` (one of ``kinds.EXPORT_KINDS``), whose parser
    module has ``parse_conversation``."""
    import importlib

    entry = KINDS[kind]
    yield from iter_export(path, entry.label, importlib.import_module(entry.parser).parse_conversation, max_bytes)


def parse_export(path: Path, what: str, parse_one: ConvParser) -> ParseResult:
    """The whole export at ``path`` as one result (tests and small files; ingest streams)."""
    whole = ParseResult()
    for part, _more in iter_export(path, what, parse_one):
        whole.conversations += part.conversations
        whole.errors += part.errors
        for name, n in part.skipped_types.items():
            whole.skipped_types[name] = whole.skipped_types.get(name, 0) + n
        whole.end_offset = part.end_offset
    return whole

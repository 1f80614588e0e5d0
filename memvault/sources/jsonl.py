"""Streaming JSONL reader shared by the line-oriented formats (Claude Code, Codex, pi).

It owns the rules every format shares, so a parser only sees well-formed objects:

* lines are read one at a time from ``start_offset`` (memory stays bounded on huge files);
* a line that is not a JSON object, or an object without ``type``, becomes a ``LineError``
  with its 1-based line number; a type the parser does not know is counted, not fatal;
* a final line without a newline is consumed if it parses, otherwise held back (the writer
  is probably still writing it) and ``end_offset`` stops before it;
* lines end with ``\\n`` (``\\r\\n`` too), or with a lone ``\\r`` in a file that has no ``\\n``;
  a UTF-8 byte-order mark before the first line is skipped;
* a line nested deeper than Python can parse is one LineError, like any bad line;
* only regular files are read, opened without blocking (a FIFO named ``*.jsonl`` never
  hangs a run); an empty, binary, UTF-16/32, missing or unreadable file gives one
  ``LineError(line=None)`` that names the problem.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Protocol

# orjson: a C parser several times faster than the stdlib's; only ever a fast path (see the loop).
from orjson import JSONDecodeError as _FastError
from orjson import loads as _fast_loads

from memvault.models import Conversation, LineError
from memvault.sources.base import ParseResult, open_regular, wide_encoding
from memvault.sources.caps import current, cut_long_strings

BINARY_SNIFF_BYTES = 8192
_COUNT_CHUNK = 1 << 20



def _fast_parse(raw: bytes) -> Any:
    """orjson's reading of a whole line, or None to let the stdlib path decide.

    Most lines are valid UTF-8 JSON. Whatever orjson refuses (bad bytes, a blank line, a lone
    surrogate, NaN, a huge integer) goes the stdlib way, which accepts what it always did and
    words each error as before; a line that is JSON ``null`` simply takes that path too.
    """
    try:
        return _fast_loads(raw)
    except _FastError:
        return None


_SURROGATE = re.compile("[\ud800-\udfff]")  # only lone ones survive json.loads


def _without_lone_surrogates(value: Any) -> Any:
    """``value`` with each lone UTF-16 surrogate (JSON ``"\\ud83d"`` without its pair, which
    JavaScript writes) replaced by U+FFFD: such a string cannot be stored as UTF-8."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    return value


class LineProblem(Exception):
    """Raised by a handler for a line it cannot use; reported as a LineError, never fatal."""


class LineHandler(Protocol):
    """What a format parser supplies: feed it objects, then collect conversations."""

    def feed(self, line_no: int, obj: dict[str, Any]) -> bool:
        """Use one object; return False when its ``type`` is unknown (counted as skipped)."""
        ...

    def finish(self) -> tuple[list[Conversation], Mapping[str, object]]:
        """Conversations touched by this parse, and the state to hand back next time."""
        ...


HandlerFactory = Callable[[dict[str, Any], Path], LineHandler]


def _count_lines_before(handle: Any, offset: int, sep: bytes = b"\n") -> int:
    """Count line ends in the first ``offset`` bytes, chunk by chunk (no state was given)."""
    handle.seek(0)
    remaining, count = offset, 0
    while remaining > 0:
        chunk = handle.read(min(_COUNT_CHUNK, remaining))
        if not chunk:
            break
        count += chunk.count(sep)
        remaining -= len(chunk)
    return count


def _file_error(path: Path, message: str, offset: int, state: dict[str, Any] | None) -> ParseResult:
    return ParseResult(
        errors=[LineError(file=str(path), line=None, error=message)], end_offset=offset, state=dict(state or {})
    )


def _open_checked(path: Path, start_offset: int, state: dict[str, Any]) -> tuple[BinaryIO, int] | ParseResult:
    """The open file and its size, or the ParseResult that says why it cannot be read."""
    try:
        handle = open_regular(path)
    except IsADirectoryError:
        return _file_error(path, f"{path} is a directory, not a transcript file", start_offset, state)
    except FileNotFoundError:
        return _file_error(path, f"{path} no longer exists (moved or deleted); nothing read", start_offset, state)
    except OSError as exc:
        return _file_error(path, f"cannot open {path}: {exc.strerror or exc}", start_offset, state)
    size = os.fstat(handle.fileno()).st_size
    problem = None
    if size == 0:
        problem, start_offset = f"{path} is empty; nothing to read yet", 0
    elif start_offset > size:
        problem = (f"{path} is shorter ({size} bytes) than the saved offset {start_offset}: it was truncated "
                   "or replaced; re-ingest it from offset 0 without state")
    elif start_offset == 0:
        head = handle.read(BINARY_SNIFF_BYTES)
        encoding = wide_encoding(head)
        if encoding:
            problem = (f"{path} is {encoding} encoded; memvault reads UTF-8 transcripts — convert it "
                       f"(iconv -f {encoding.replace(' ', '')} -t UTF-8) and ingest the copy")
        elif b"\0" in head:
            problem = f"{path} looks binary (NUL bytes), not a JSONL transcript"
    if problem:
        handle.close()
        return _file_error(path, problem, start_offset, state)
    return handle, size


def _newline(handle: BinaryIO, start_offset: int, state: dict[str, Any]) -> bytes:
    """The file's line separator: ``\\n``, or ``\\r`` for a file written with old Mac line ends
    (decided on the first read from its first bytes, then kept in the state)."""
    if state.get("newline") == "\r":
        return b"\r"
    if start_offset == 0:
        handle.seek(0)
        head = handle.read(BINARY_SNIFF_BYTES)
        if b"\r" in head and b"\n" not in head:
            return b"\r"
    return b"\n"


def _lines(handle: BinaryIO, sep: bytes) -> Iterator[bytes]:
    """Lines of ``handle`` from its position, each with its separator (the last maybe without)."""
    if sep == b"\n":
        yield from handle  # the C line reader: by far the common case
        return
    pending = b""
    while chunk := handle.read(_COUNT_CHUNK):
        pending += chunk
        *complete, pending = pending.split(sep)
        for line in complete:
            yield line + sep
    if pending:
        yield pending


class _Held(Exception):
    """The last line is incomplete (still being written): stop before it, report nothing."""


def _decode(raw: bytes, complete: bool, first: bool) -> Any:
    """The JSON value of one line; ``None`` for a blank line; raises _Held or LineProblem."""
    if first and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]  # a BOM written by an editor: not part of the line
    cap = current().string_bytes
    if complete and len(raw) > cap:
        raw = cut_long_strings(raw, cap)  # cut first, then parse: a 40 MB message costs one pass
    obj = _fast_parse(raw) if complete else None
    if obj is not None:
        return obj
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not complete:
            raise _Held from exc  # maybe cut inside a multi-byte character: wait for the rest
        raise LineProblem(f"not valid UTF-8: {exc.reason}") from exc
    stripped = text.strip()
    if not stripped:
        return None
    try:
        return _without_lone_surrogates(json.loads(stripped))
    except RecursionError as exc:
        raise LineProblem(f"JSON nested too deeply (more than {sys.getrecursionlimit()} levels); line skipped") from exc
    except ValueError as exc:
        if not complete:
            raise _Held from exc  # a half-written last line: hold it back, no error
        raise LineProblem(f"not valid JSON: {exc}") from exc


def _feed(handler: LineHandler, line_no: int, obj: Any) -> str | None:
    """Give one decoded object to the handler; the ``type`` it did not know, if so."""
    if not isinstance(obj, dict):
        raise LineProblem(f"expected a JSON object, got {type(obj).__name__}")
    kind = obj.get("type")
    if not isinstance(kind, str):
        raise LineProblem("JSON object has no string 'type'")
    try:
        known = handler.feed(line_no, obj)
    # A shape the parser did not foresee (a list where a dict was expected, …) is a problem
    # with that line only: report it and keep going.
    except (LineProblem, TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        raise LineProblem(f"{kind} line unusable: {exc}") from exc
    return None if known else kind


def parse_jsonl(
    path: Path,
    start_offset: int,
    state: dict[str, Any] | None,
    make_handler: HandlerFactory,
    max_bytes: int | None = None,
) -> ParseResult:
    """Stream ``path`` from ``start_offset`` through a handler built by ``make_handler``.

    With ``max_bytes``, stop at the first line end past that many bytes, so a caller can
    ingest a huge file in slices (the returned offset and state continue it).
    """
    state = dict(state or {})
    opened = _open_checked(path, start_offset, state)
    if isinstance(opened, ParseResult):
        return opened
    handle, _size = opened
    with handle:
        sep = _newline(handle, start_offset, state)
        line_no = state.get("line")
        if not isinstance(line_no, int):
            line_no = _count_lines_before(handle, start_offset, sep) if start_offset else 0
        handler = make_handler(dict(state.get("handler") or {}), path)
        errors: list[LineError] = []
        skipped: dict[str, int] = {}
        offset = start_offset
        handle.seek(start_offset)
        for raw in _lines(handle, sep):
            if max_bytes is not None and offset - start_offset >= max_bytes:
                break
            complete = raw.endswith(sep)
            try:
                obj = _decode(raw, complete, offset == 0)
            except _Held:
                break
            except LineProblem as exc:
                line_no += 1
                offset += len(raw)
                errors.append(LineError(file=str(path), line=line_no, error=str(exc)))
                continue
            if obj is None:  # a blank line (held back while it has no line end)
                line_no += complete
                offset += len(raw) if complete else 0
                continue
            line_no += 1
            offset += len(raw)
            try:
                unknown = _feed(handler, line_no, obj)
            except LineProblem as exc:
                errors.append(LineError(file=str(path), line=line_no, error=str(exc)))
                continue
            if unknown:
                skipped[unknown] = skipped.get(unknown, 0) + 1
        conversations, handler_state = handler.finish()
    new_state: dict[str, Any] = {"line": line_no, "handler": handler_state}
    if sep == b"\r":
        new_state["newline"] = "\r"
    return ParseResult(conversations=conversations, errors=errors, skipped_types=skipped, end_offset=offset,
                       state=new_state)


class Parser(Protocol):
    """A format module's ``parse``, as :func:`memvault.sources.parse_file` calls it."""

    def __call__(self, path: Path, start_offset: int = 0, state: dict[str, Any] | None = None,
                 max_bytes: int | None = None) -> ParseResult: ...


def jsonl_parser(factory: HandlerFactory, what: str) -> Parser:
    """A JSONL format's ``parse``: :func:`parse_jsonl` with ``factory``'s handler; ``what``
    names the format in its docstring."""

    def parse(path: Path, start_offset: int = 0, state: dict[str, Any] | None = None,
              max_bytes: int | None = None) -> ParseResult:
        return parse_jsonl(path, start_offset, state, factory, max_bytes)

    parse.__doc__ = f"Parse {what} from ``start_offset`` (see the module docstring)."
    return parse

"""Streaming JSONL reader shared by the line-oriented formats (Claude Code, Codex, pi).

It owns the rules every format shares, so a parser only sees well-formed objects:

* lines are read one at a time from ``start_offset`` (memory stays bounded on huge files);
* a line that is not a JSON object, or an object without ``type``, becomes a ``LineError``
  with its 1-based line number; a type the parser does not know is counted, not fatal;
* a final line without a newline is consumed if it parses, otherwise held back (the writer
  is probably still writing it) and ``end_offset`` stops before it;
* an empty, binary, missing or unreadable file gives one ``LineError(line=None)``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

# orjson: a C parser several times faster than the stdlib's; only ever a fast path (see the loop).
from orjson import JSONDecodeError as _FastError
from orjson import loads as _fast_loads

from memvault.models import Conversation, LineError
from memvault.sources.base import ParseResult

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

    def finish(self) -> tuple[list[Conversation], dict[str, Any]]:
        """Conversations touched by this parse, and the state to hand back next time."""
        ...


HandlerFactory = Callable[[dict[str, Any], Path], LineHandler]


def _count_lines_before(handle: Any, offset: int) -> int:
    """Count newlines in the first ``offset`` bytes, chunk by chunk (no state was given)."""
    handle.seek(0)
    remaining, count = offset, 0
    while remaining > 0:
        chunk = handle.read(min(_COUNT_CHUNK, remaining))
        if not chunk:
            break
        count += chunk.count(b"\n")
        remaining -= len(chunk)
    return count


def _file_error(path: Path, message: str, offset: int, state: dict[str, Any] | None) -> ParseResult:
    return ParseResult(
        errors=[LineError(file=str(path), line=None, error=message)], end_offset=offset, state=dict(state or {})
    )


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
    try:
        handle = path.open("rb")
    except IsADirectoryError:
        return _file_error(path, f"{path} is a directory, not a transcript file", start_offset, state)
    except FileNotFoundError:
        return _file_error(path, f"{path} no longer exists (moved or deleted); nothing read", start_offset, state)
    except OSError as exc:
        return _file_error(path, f"cannot open {path}: {exc.strerror or exc}", start_offset, state)

    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return _file_error(path, f"{path} is empty; nothing to read yet", 0, state)
        if start_offset > size:
            return _file_error(
                path,
                f"{path} is shorter ({size} bytes) than the saved offset {start_offset}: it was truncated "
                "or replaced; re-ingest it from offset 0 without state",
                start_offset,
                state,
            )
        if start_offset == 0 and b"\0" in handle.read(BINARY_SNIFF_BYTES):
            return _file_error(path, f"{path} looks binary (NUL bytes), not a JSONL transcript", 0, state)

        line_no = state.get("line")
        if not isinstance(line_no, int):
            line_no = _count_lines_before(handle, start_offset) if start_offset else 0
        handler = make_handler(dict(state.get("handler") or {}), path)
        errors: list[LineError] = []
        skipped: dict[str, int] = {}
        offset = start_offset
        handle.seek(start_offset)

        for raw in handle:
            if max_bytes is not None and offset - start_offset >= max_bytes:
                break
            complete = raw.endswith(b"\n")
            obj = _fast_parse(raw) if complete else None
            if obj is None:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    if not complete:
                        break  # maybe cut inside a multi-byte character: wait for the rest
                    line_no += 1
                    offset += len(raw)
                    errors.append(LineError(file=str(path), line=line_no, error=f"not valid UTF-8: {exc.reason}"))
                    continue
                stripped = text.strip()
                if not stripped:
                    line_no += 1 if complete else 0
                    offset += len(raw) if complete else 0
                    continue
                try:
                    obj = _without_lone_surrogates(json.loads(stripped))
                except ValueError as exc:
                    if not complete:
                        break  # a half-written last line: hold it back, no error
                    line_no += 1
                    offset += len(raw)
                    errors.append(LineError(file=str(path), line=line_no, error=f"not valid JSON: {exc}"))
                    continue
            line_no += 1
            offset += len(raw)
            if not isinstance(obj, dict):
                errors.append(
                    LineError(file=str(path), line=line_no, error=f"expected a JSON object, got {type(obj).__name__}")
                )
                continue
            kind = obj.get("type")
            if not isinstance(kind, str):
                errors.append(LineError(file=str(path), line=line_no, error="JSON object has no string 'type'"))
                continue
            try:
                known = handler.feed(line_no, obj)
            # A shape the parser did not foresee (a list where a dict was expected, …) is a
            # problem with that line only: report it and keep going.
            except (LineProblem, TypeError, ValueError, KeyError, AttributeError) as exc:
                errors.append(LineError(file=str(path), line=line_no, error=f"{kind} line unusable: {exc}"))
                continue
            if not known:
                skipped[kind] = skipped.get(kind, 0) + 1

        conversations, handler_state = handler.finish()
    return ParseResult(
        conversations=conversations,
        errors=errors,
        skipped_types=skipped,
        end_offset=offset,
        state={"line": line_no, "handler": handler_state},
    )

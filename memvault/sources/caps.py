"""Cut huge JSON strings before the parser sees them, in one linear pass over the bytes.

A transcript can hold a string of tens of MB (a pasted log) or, from a zip, of hundreds of MB;
JSON parsers then spend time quadratic in its length (ijson's yajl backend re-lexes the string
on every buffer it spans: 20 MB 7 s, 40 MB far worse) only for ingest to cut the message to a
million characters afterwards. So every JSON string longer than the cap is cut here, on the
raw UTF-8 bytes — at an escape and character boundary, so the JSON stays valid — and a marker
says how much was left out. Nothing is dropped but the tail of the oversized string itself.

The caps come from the settings (`ingest.max_string_bytes`, `ingest.max_zip_entry_bytes`);
ingest sets them for its run through :func:`limits`.
"""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Caps:
    """How much of one JSON string, and of one zip entry, is read."""

    string_bytes: int = 1 << 20
    zip_entry_bytes: int = 4 << 30


_CAPS: ContextVar[Caps] = ContextVar("memvault_ingest_caps", default=Caps())

# One JSON string body as whole tokens: plain bytes, \uXXXX, or a two-byte escape. It stops at
# the closing quote, at the end of the data, or before an escape the data cuts short.
_BODY = re.compile(rb'(?:[^"\\]+|\\u[0-9A-Fa-f]{4}|\\[^u])*')
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9A-Fa-f]{2}")
MARKER = " [… {n} bytes cut by memvault before parsing: the string was too large to store whole]"


def _starts_escape(data: bytes, k: int, start: int) -> bool:
    """Whether the backslash at ``k`` starts an escape (an even run of backslashes before it)."""
    run = 0
    while k - run - 1 >= start and data[k - run - 1] == 0x5C:
        run += 1
    return run % 2 == 0


def _closing_quote(data: bytes, start: int) -> int:
    """Where the string that runs from ``start`` ends (its unescaped quote), or -1."""
    q = data.find(b'"', start)
    while q >= 0 and not _starts_escape(data, q, start):
        q = data.find(b'"', q + 1)
    return q


def _safe_end(data: bytes, start: int, end: int) -> int:
    """``end`` moved back so that ``data[start:end]`` ends on whole escapes, a whole escaped
    surrogate pair and a whole UTF-8 character (the rest waits for the next chunk)."""
    for k in range(max(start, end - 6), end):
        if data[k] == 0x5C and _starts_escape(data, k, start):
            if end - k < 2 or (data[k + 1] == 0x75 and end - k < 6):  # `\` or `\u12`
                end = k
                break
    if _ends_high_surrogate(data, end, start):
        return end - 6
    return _whole_utf8(data, start, end)


def _ends_high_surrogate(data: bytes, end: int, start: int = 0) -> bool:
    """Whether ``data[start:end]`` (whole escape tokens from ``start``) ends with the escape of a
    high surrogate (``\\ud83d``), the first half of a pair that must not be split."""
    k = end - 6
    return k >= start and bool(_HIGH_SURROGATE.fullmatch(data, k, end)) and _starts_escape(data, k, start)


def _whole_utf8(data: bytes, start: int, end: int) -> int:
    """``end`` moved back before a UTF-8 character that ``data[start:end]`` cuts short."""
    for back in range(1, min(4, end - start) + 1):
        byte = data[end - back]
        if byte & 0xC0 != 0x80:  # the last lead (or ASCII) byte
            need = 1 if byte < 0x80 else 2 if byte >> 5 == 0b110 else 3 if byte >> 4 == 0b1110 else 4
            return end - back if need > back else end
    return end


def current() -> Caps:
    """The caps in force (the defaults outside an ingest)."""
    return _CAPS.get()


@contextmanager
def limits(caps: Caps) -> Iterator[None]:
    """Apply ``caps`` to every transcript read in this block (this thread or task only)."""
    token = _CAPS.set(caps)
    try:
        yield
    finally:
        _CAPS.reset(token)


class StringCutter:
    """Feeds JSON bytes through, cutting each string past ``cap`` bytes; state spans chunks."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.in_string = False
        self.length = 0  # bytes of the current string passed on
        self.cut = 0  # bytes of the current string left out
        self.carry = b""  # an escape the last chunk cut short
        self.strings_cut = 0

    def feed(self, chunk: bytes, final: bool = False) -> bytes:
        data = self.carry + chunk if self.carry else chunk
        self.carry = b""
        out = bytearray()
        i, n = 0, len(data)
        while i < n:
            if not self.in_string:
                j = data.find(b'"', i)
                if j < 0:
                    out += data[i:]
                    break
                out += data[i:j + 1]
                self.in_string, self.length, self.cut, i = True, 0, 0, j + 1
                continue
            q = _closing_quote(data, i)
            if q >= 0:
                self._body(data[i:q], out)
                if self.cut:
                    out += MARKER.format(n=self.cut).encode()
                    self.strings_cut += 1
                out += b'"'
                self.in_string, i = False, q + 1
                continue
            j = n if final else _safe_end(data, i, n)  # an escape or character the chunk cut stays whole
            self._body(data[i:j], out)
            self.carry = data[j:]
            break
        return bytes(out)

    def _body(self, body: bytes, out: bytearray) -> None:
        if self.cut:
            self.cut += len(body)
            return
        room = self.cap - self.length
        if len(body) <= room:
            out += body
            self.length += len(body)
            return
        end = _BODY.match(body, 0, room).end()  # type: ignore[union-attr]  # never inside an escape
        while end > 0 and (body[end] & 0xC0) == 0x80:
            end -= 1  # nor inside a UTF-8 character
        if _ends_high_surrogate(body, end):
            end -= 6  # nor between the two escapes of one emoji
        out += body[:end]
        self.length += end
        self.cut = len(body) - end


class Readable(Protocol):
    """What :class:`CappedReader` reads from: a file, a zip member, a re-encoding stream."""

    def read(self, size: int = -1, /) -> bytes: ...


class CappedReader:
    """A binary reader (``read(size)``) whose JSON strings are cut by a :class:`StringCutter`."""

    def __init__(self, raw: Readable, cap: int) -> None:
        self.raw, self.cutter = raw, StringCutter(cap)

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""
        while True:
            chunk = self.raw.read(size)
            out = self.cutter.feed(chunk, final=not chunk)
            if out or not chunk:
                return out


def cut_long_strings(line: bytes, cap: int) -> bytes:
    """``line`` (one JSON document) with every string longer than ``cap`` bytes cut."""
    if len(line) <= cap:
        return line
    return StringCutter(cap).feed(line, final=True)

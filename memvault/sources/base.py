"""Shared result type and small value helpers for every transcript parser.

Kept apart from ``__init__`` so parser modules can import it without a cycle.
"""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TypedDict, TypeVar

from pydantic import BaseModel, Field

from memvault.models import Conversation, LineError, Message
from memvault.sources.kinds import FileKind

# Compact tool messages keep only a glimpse of arguments and output: the ledger is a memory
# of what was said and done, not a copy of every file read.
ARG_SUMMARY_CHARS = 200
RESULT_LINES = 5
RESULT_CHARS = 600
TITLE_CHARS = 80


class ParseResult(BaseModel):
    """What one parse of one file produced; never raised, always returned."""

    conversations: list[Conversation] = Field(default_factory=list)
    errors: list[LineError] = Field(default_factory=list)
    skipped_types: dict[str, int] = Field(default_factory=dict)
    end_offset: int = Field(default=0, description="Bytes consumed; resume here next time")
    state: dict[str, Any] = Field(
        default_factory=dict, description="JSON-serializable parser context; pass back on the next call"
    )


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for reading only if it is a regular file, without ever blocking.

    ``O_NONBLOCK`` makes opening a FIFO (or a device) return at once instead of waiting for a
    writer; the fstat then refuses it. Raises IsADirectoryError for a folder, OSError else.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise OSError("not a regular file (a FIFO, socket or device); only regular files are read")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def wide_encoding(head: bytes) -> str | None:
    """``"UTF-16 LE"`` and the like when ``head`` (a file's first bytes) is UTF-16/32 text."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32 LE" if head[0] == 0xFF else "UTF-32 BE"
    if head.startswith(b"\xff\xfe"):
        return "UTF-16 LE"
    if head.startswith(b"\xfe\xff"):
        return "UTF-16 BE"
    sample = head[:512]
    if len(sample) >= 4 and sample.count(0) * 3 >= len(sample):  # ASCII text with a NUL beside each char
        return "UTF-16 LE" if sample[1] == 0 and sample[0] != 0 else "UTF-16 BE"
    return None


def decode_text(raw: bytes) -> str:
    """Bytes of a whole JSON file as text: UTF-8 (a BOM dropped), or UTF-16/32 when it is that."""
    encoding = wide_encoding(raw[:512])
    if encoding:
        codec = encoding.replace(" ", "-").lower()  # "utf-16-le"; a BOM, when present, is dropped below
        return raw.decode(codec, errors="replace").lstrip("\ufeff")
    return raw.decode("utf-8-sig", errors="replace")


def parse_time(value: Any) -> datetime | None:
    """ISO string, epoch seconds or epoch milliseconds → aware datetime; None if unusable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        # Epoch milliseconds (pi) are ~1e12; seconds (ChatGPT) are ~1e9.
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def iso(value: datetime | None) -> str | None:
    """Datetime → ISO string for JSON state."""
    return value.isoformat() if value else None


def clip(text: str, chars: int) -> str:
    """Shorten ``text`` to ``chars`` characters, marking the cut.

    Secrets are redacted before the cut (a token cut in two would escape its pattern), and the
    cut falls between words where it can, so a part of a token never survives alone.
    """
    text = text.strip()
    return text if len(text) <= chars else _cut(_redacted_head(text, chars), chars)


def _cut(text: str, chars: int) -> str:
    """``text`` (already redacted) cut to ``chars`` characters at a word boundary, marked."""
    if len(text) <= chars:
        return text
    cut = chars - 1
    if not text[cut - 1].isspace() and not text[cut].isspace():
        space = max(text.rfind(" ", 0, cut), text.rfind("\n", 0, cut))
        cut = space if space > 0 else cut
    return text[:cut].rstrip() + "…"


def _redacted_head(text: str, chars: int) -> str:
    """The start of ``text`` (what a cut at ``chars`` keeps, plus a margin) with secrets redacted.

    Only the built-in patterns run here; the user's own patterns run on the stored text at
    ingest, and the word-boundary cut above keeps their tokens whole or drops them whole.
    """
    from memvault.hygiene.redact import WINDOW_MARGIN, redact

    return redact(text[: chars + WINDOW_MARGIN])[0]


def first_lines(text: str, lines: int = RESULT_LINES, chars: int = RESULT_CHARS) -> str:
    """The first few lines of a tool's output, with a note of how much was dropped."""
    stripped = text.strip()
    more = len(stripped.splitlines()) - lines
    head = _redacted_head(stripped, chars) if len(stripped) > chars else stripped
    kept = _cut("\n".join(head.splitlines()[:lines]).strip(), chars)
    return kept + (f"\n… ({more} more lines)" if more > 0 else "")


# Argument keys that say most about a call, in order of preference.
_TELLING_KEYS = ("command", "cmd", "file_path", "path", "pattern", "url", "query", "description", "prompt")


def summarize_args(args: Any) -> str:
    """A one-line summary of a tool call's arguments (a dict, a JSON string or plain text)."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return clip(args.splitlines()[0] if args.strip() else "", ARG_SUMMARY_CHARS)
    if isinstance(args, dict):
        for key in _TELLING_KEYS:
            value = args.get(key)
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            if isinstance(value, str) and value.strip():
                return clip(value.replace("\n", " "), ARG_SUMMARY_CHARS)
    if args in (None, {}, []):
        return ""
    return clip(json.dumps(args, ensure_ascii=False), ARG_SUMMARY_CHARS)


def tool_call_text(name: str, args: Any) -> str:
    """Compact text of a tool call: ``name: summary``."""
    summary = summarize_args(args)
    return f"{name}: {summary}" if summary else name


def tool_result_text(name: str | None, output: str, is_error: bool = False) -> str:
    """Compact text of a tool result: name, error flag, first lines of output."""
    head = f"{name or 'tool'} {'error' if is_error else 'result'}:"
    body = first_lines(output)
    return f"{head}\n{body}" if body else f"{head} (no output)"


def title_from(text: str) -> str:
    """A fallback title: the first non-empty line of the first user message."""
    for line in text.splitlines():
        if line.strip():
            return clip(line, TITLE_CHARS)
    return ""


V = TypeVar("V")


def remember(mapping: dict[str, V], key: str, value: V, limit: int) -> None:
    """Insert into a dict used as a small LRU, so state stays bounded on huge files."""
    mapping.pop(key, None)
    mapping[key] = value
    while len(mapping) > limit:
        mapping.pop(next(iter(mapping)))


class SessionState(TypedDict):
    """What a one-conversation JSONL handler (codex, pi, opencode) hands the next parse."""

    session: str | None
    project: str | None
    title: str
    started: str | None  # ISO times
    updated: str | None
    tail: str | None  # the last message's native id: the next one's parent


def session_conversation(source: FileKind, state: SessionState, path: Path, leaf: str | None,
                         messages: list[Message], touched: bool) -> list[Conversation]:
    """The conversation of a one-session file from its handler's state (the file's stem names
    it when the session recorded no id); none when this parse did not touch it."""
    if not touched:
        return []
    return [Conversation(
        source=source, native_id=state["session"] or path.stem, title=state["title"],
        started_at=parse_time(state["started"]), updated_at=parse_time(state["updated"]),
        project=state["project"], leaf_native_id=leaf, messages=messages,
    )]

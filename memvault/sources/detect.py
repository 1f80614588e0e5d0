"""Recognize a transcript's format from its first bytes, never from its name.

Users rename and move exports (``conversations.json`` is the name of two formats), so the
content decides: JSON exports by their distinctive keys near the start, JSONL by the shape of
the first few objects, a zip (ChatGPT and claude.ai hand out their exports zipped) by its
magic bytes and then the JSON inside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO

from memvault.sources.base import decode_text, open_regular, wide_encoding
from memvault.sources.caps import current, cut_long_strings
from memvault.sources.export import detect_zip, export_kind_of_text, is_zip
from memvault.sources.kinds import FileKind

SNIFF_BYTES = 1 << 20  # an export's first conversation names its keys well within this
MAX_SNIFF_LINES = 25
# A JSONL line is read whole to judge it, up to this size (one huge pasted message can make a
# first line of many MB); a longer first line leaves the file unrecognized (and reported).
MAX_SNIFF_LINE = 64 << 20

_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_CLAUDE_CODE_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}
_CLAUDE_CODE_KEYS = {"sessionId", "uuid", "parentUuid", "leafUuid", "messageId"}


def _kind_of_object(obj: dict[str, Any]) -> FileKind | None:
    kind = obj.get("type")
    if not isinstance(kind, str):
        return None  # `"type": {…}` or `[…]`: not a line of any format (and unhashable)
    if kind == "session" and "cwd" in obj:
        return "pi"
    if kind in _CODEX_TYPES and "payload" in obj:
        return "codex"
    if kind in _CLAUDE_CODE_TYPES and _CLAUDE_CODE_KEYS & obj.keys():
        return "claude-code"
    if kind == "message" and isinstance(obj.get("info"), dict) and isinstance(obj.get("parts"), list):
        return "opencode"  # memvault's OpenCode plugin's export
    message = obj.get("message")
    if kind == "message" and isinstance(message, dict) and "role" in message:
        return "pi"  # a pi file whose header line was lost
    return None


def _detect_json_export(head: str) -> FileKind | None:
    return export_kind_of_text(head)


def detect_format(path: Path) -> FileKind | None:
    """The source kind of ``path`` judged from its content; None if unknown or unreadable."""
    try:
        with open_regular(path) as handle:
            head_bytes = handle.read(SNIFF_BYTES)
            if not head_bytes:
                return None
            if is_zip(head_bytes):
                return detect_zip(path)
            if wide_encoding(head_bytes[:512]):
                head = decode_text(head_bytes)  # an export saved as UTF-16: read as what it is
            elif b"\0" in head_bytes[:8192]:
                return None
            else:
                head = head_bytes.decode("utf-8", errors="replace")
            head = head.lstrip("\ufeff \t\r\n")
            if head.startswith("["):
                return _detect_json_export(head)
            found: FileKind | None
            if wide_encoding(head_bytes[:512]):
                # judged from the decoded head, so the parser can say the file is UTF-16
                # rather than the file going unrecognized
                found = next(filter(None, map(_judge_line, (ln.encode() for ln in head.splitlines()[:MAX_SNIFF_LINES]))),
                             None)
            else:
                found = _detect_jsonl(handle, head_bytes)
    except OSError:
        return None
    if found:
        return found
    # a single exported conversation saved as one pretty-printed object
    return _detect_json_export(head) if head.startswith("{") else None


def _detect_jsonl(handle: BinaryIO, head_bytes: bytes) -> FileKind | None:
    """Judge the first lines, each read whole (a first line may be far longer than the head)."""
    sep = b"\r" if b"\r" in head_bytes and b"\n" not in head_bytes else b"\n"
    handle.seek(0)
    pending, seen = b"", 0
    while seen < MAX_SNIFF_LINES:
        cut = pending.find(sep)
        if cut < 0 and len(pending) < MAX_SNIFF_LINE:
            chunk = handle.read(SNIFF_BYTES)
            if chunk:
                pending += chunk
                continue
        line, pending = (pending[:cut], pending[cut + 1:]) if cut >= 0 else (pending, b"")
        if not line.strip():
            if cut < 0:
                return None
            continue
        seen += 1
        found = _judge_line(line.lstrip(b"\xef\xbb\xbf"))
        if found or cut < 0:
            return found
    return None


def _judge_line(line: bytes) -> FileKind | None:
    line = cut_long_strings(line, current().string_bytes)
    try:
        obj = json.loads(line.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None  # a malformed or cut-off line: look at the next one
    return _kind_of_object(obj) if isinstance(obj, dict) else None

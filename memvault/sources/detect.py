"""Recognize a transcript's format from its first bytes, never from its name.

Users rename and move exports (``conversations.json`` is the name of two formats), so the
content decides: JSON exports by their distinctive keys near the start, JSONL by the shape of
the first few objects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memvault.models import SourceKind

SNIFF_BYTES = 1 << 20  # an export's first conversation names its keys well within this
MAX_SNIFF_LINES = 25

_CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_CLAUDE_CODE_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}
_CLAUDE_CODE_KEYS = {"sessionId", "uuid", "parentUuid", "leafUuid", "messageId"}


def _kind_of_object(obj: dict[str, Any]) -> SourceKind | None:
    kind = obj.get("type")
    if kind == "session" and "cwd" in obj:
        return "pi"
    if kind in _CODEX_TYPES and "payload" in obj:
        return "codex"
    if kind in _CLAUDE_CODE_TYPES and _CLAUDE_CODE_KEYS & obj.keys():
        return "claude-code"
    message = obj.get("message")
    if kind == "message" and isinstance(message, dict) and "role" in message:
        return "pi"  # a pi file whose header line was lost
    return None


def _detect_json_export(head: str) -> SourceKind | None:
    # current_node follows the mapping, which can pass the sniff window on a long first
    # conversation; message authors inside the mapping show up early.
    if '"mapping"' in head and ('"current_node"' in head or '"author"' in head):
        return "chatgpt"
    if '"chat_messages"' in head:
        return "claude-ai"
    return None


def detect_format(path: Path) -> SourceKind | None:
    """The source kind of ``path`` judged from its content; None if unknown or unreadable."""
    try:
        with path.open("rb") as handle:
            head_bytes = handle.read(SNIFF_BYTES)
    except OSError:
        return None
    if not head_bytes or b"\0" in head_bytes[:8192]:
        return None
    head = head_bytes.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if head.startswith("["):
        return _detect_json_export(head)
    for line in head.splitlines()[:MAX_SNIFF_LINES]:
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a malformed or cut-off line: look at the next one
        if isinstance(obj, dict):
            found = _kind_of_object(obj)
            if found:
                return found
    # a single exported conversation saved as one pretty-printed object
    return _detect_json_export(head) if head.startswith("{") else None

"""Anthropic-style content blocks (Claude Code and claude.ai) turned into message segments.

A segment is one future message: (role, kind, text). Text blocks next to each other join into
one segment; tool_use/tool_result blocks become compact role "tool" segments (never "user",
since no person typed them); thinking is dropped (private reasoning, large, rarely useful).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from memvault.models import MessageKind, Role
from memvault.sources.base import tool_call_text, tool_result_text

_DROPPED = {"thinking", "redacted_thinking"}


class Segment(NamedTuple):
    """One message-to-be cut from a content list."""

    role: Role
    kind: MessageKind
    text: str
    tool_id: str | None = None  # tool_use id of a call, so its result can name the tool


def flatten(content: Any) -> str:
    """Plain text of a content value: a string, or a list of blocks/strings."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return str(content)
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif kind in ("image", "document"):
                parts.append(f"[{kind}]")
            elif kind not in _DROPPED and isinstance(block.get("text"), str):
                parts.append(block["text"])
    return "\n".join(p for p in parts if p)


def segments(content: Any, role: Role, tool_names: dict[str, str]) -> list[Segment]:
    """Cut one message's content into segments, in order.

    ``tool_names`` maps tool_use ids to tool names; calls add to it so a later result
    (often on the next line, or in the next incremental parse) can say which tool it was.
    """
    if isinstance(content, str):
        return [Segment(role, "text", content)] if content.strip() else []
    if not isinstance(content, list):
        raise TypeError(f"content is a {type(content).__name__}, expected a string or a list of blocks")
    out: list[Segment] = []
    texts: list[str] = []

    def flush_text() -> None:
        joined = "\n\n".join(t for t in texts if t.strip())
        if joined:
            out.append(Segment(role, "text", joined))
        texts.clear()

    for block in content:
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind in _DROPPED:
            continue
        elif kind == "tool_use":
            flush_text()
            name = str(block.get("name") or "tool")
            tool_id = block.get("id")
            if isinstance(tool_id, str):
                tool_names[tool_id] = name
            out.append(Segment("tool", "tool_call", tool_call_text(name, block.get("input")), tool_id))
        elif kind == "tool_result":
            flush_text()
            tool_id = block.get("tool_use_id")
            called = tool_names.get(tool_id) if isinstance(tool_id, str) else None
            text = tool_result_text(called, flatten(block.get("content")), bool(block.get("is_error")))
            out.append(Segment("tool", "tool_result", text, tool_id))
        elif kind in ("image", "document"):
            flush_text()
            out.append(Segment(role, "image" if kind == "image" else "attachment", f"[{kind}]"))
        elif isinstance(block.get("text"), str):
            texts.append(block["text"])
    flush_text()
    return out

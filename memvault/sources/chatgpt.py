"""ChatGPT data export (``conversations.json``, or the zip holding it): a list of conversations
with a ``mapping`` tree; export.py streams it, this module parses one conversation.

Only the active thread is kept: walk ``current_node`` → ``parent`` (other children are
abandoned regenerations and edits). Hidden nodes and system/context nodes are skipped;
``thoughts`` and reasoning recaps are dropped; code and its execution output are kept as
compact role "tool" messages; image pointers become kind "image" messages like
``[image: file_…]`` placed just before the text they came with, so the thread stays linear.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memvault.models import Conversation, Message, MessageKind, Role
from memvault.sources.base import ParseResult, parse_time, tool_result_text
from memvault.sources.export import parse_export

_DROPPED_TYPES = {"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"}


def _active_path(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root to the active leaf."""
    if not isinstance(current, str) or current not in mapping:
        # No usable current_node: follow the newest child from the root instead.
        roots = [k for k, n in mapping.items() if not isinstance(n, dict) or n.get("parent") not in mapping]
        current = roots[0] if roots else None
        while current is not None and (mapping[current] or {}).get("children"):
            current = mapping[current]["children"][-1]
            current = current if current in mapping else None
    path: list[str] = []
    seen: set[str] = set()
    while isinstance(current, str) and current in mapping and current not in seen:
        seen.add(current)
        path.append(current)
        current = (mapping[current] or {}).get("parent")
    return path[::-1]


def _image_marker(part: dict[str, Any], names: dict[str, str]) -> str:
    pointer = str(part.get("asset_pointer") or "")
    asset = pointer.split("://", 1)[-1] or "unknown"
    name = names.get(asset)
    return f"[image: {asset} ({name})]" if name else f"[image: {asset}]"


def _node_messages(node_id: str, message: dict[str, Any]) -> list[tuple[str, Role, MessageKind, str]]:
    """(native_id, role, kind, text) for one visible node; empty when it is not shown."""
    author = message.get("author") or {}
    role = author.get("role")
    metadata = message.get("metadata") or {}
    content = message.get("content") or {}
    ctype = content.get("content_type")
    if role == "system" or metadata.get("is_visually_hidden_from_conversation") or ctype in _DROPPED_TYPES:
        return []
    if ctype == "code":
        target = message.get("recipient") or content.get("language") or "code"
        return [(node_id, "tool", "tool_call", f"{target} code:\n{content.get('text') or ''}".strip())]
    if ctype in ("execution_output", "system_error") or role == "tool":
        text = content.get("text") or _join_parts(content.get("parts"), {}, [])
        failed = ctype == "system_error"
        return [(node_id, "tool", "tool_result", tool_result_text(author.get("name"), str(text or ""), failed))]

    names = {
        str(a.get("id")): str(a.get("name"))
        for a in metadata.get("attachments") or []
        if isinstance(a, dict) and a.get("name")
    }
    images: list[str] = []
    text = content.get("text")
    if not isinstance(text, str):
        text = _join_parts(content.get("parts"), names, images)
    out_role: Role = "user" if role == "user" else "assistant"
    out: list[tuple[str, Role, MessageKind, str]] = [
        (f"{node_id}#image{i}", out_role, "image", marker) for i, marker in enumerate(images)
    ]
    if text.strip():
        out.append((node_id, out_role, "text", text))
    return out


def _join_parts(parts: Any, names: dict[str, str], images: list[str]) -> str:
    """Text of ``content.parts``; image pointers are collected into ``images``."""
    texts: list[str] = []
    for part in parts or []:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if part.get("content_type") == "image_asset_pointer":
                images.append(_image_marker(part, names))
            elif isinstance(part.get("text"), str):  # audio transcriptions and the like
                texts.append(part["text"])
    return "\n".join(t for t in texts if t)


def parse_conversation(item: dict[str, Any]) -> Conversation | None:
    """One export conversation → Conversation with its active thread; None if nothing visible."""
    native = item.get("conversation_id") or item.get("id")
    if not isinstance(native, str) or not native:
        raise ValueError("no conversation_id or id")
    mapping = item.get("mapping")
    if not isinstance(mapping, dict):
        raise TypeError("'mapping' is not an object")
    messages: list[Message] = []
    parent: str | None = None
    for node_id in _active_path(mapping, item.get("current_node")):
        message = (mapping[node_id] or {}).get("message")
        if not isinstance(message, dict):
            continue
        when = parse_time(message.get("create_time"))
        for native_id, role, kind, text in _node_messages(node_id, message):
            messages.append(Message(native_id=native_id, parent_native_id=parent, role=role, kind=kind,
                                    text=text, timestamp=when))
            parent = native_id
    if not messages:
        return None
    return Conversation(
        source="chatgpt", native_id=native, title=str(item.get("title") or ""),
        started_at=parse_time(item.get("create_time")), updated_at=parse_time(item.get("update_time")),
        leaf_native_id=messages[-1].native_id, messages=messages,
    )


def parse(
    path: Path, start_offset: int = 0, state: dict[str, Any] | None = None, max_bytes: int | None = None
) -> ParseResult:
    """Parse a whole ChatGPT export, plain or zipped (ingest streams it in slices instead, through
    ``export.export_slices``); ``start_offset``, ``state`` and ``max_bytes`` are ignored."""
    return parse_export(path, "ChatGPT", parse_conversation)

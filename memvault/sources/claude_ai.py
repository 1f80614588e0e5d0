"""claude.ai data export (``conversations.json``, or the zip holding it): a list of
``{uuid, name, chat_messages}``; export.py streams it, this module parses one conversation.

Content blocks are preferred over the flat ``text`` (they separate thinking, dropped, from
the answer, and carry tool use). Attachments' ``extracted_content`` becomes role "attachment"
messages and ``files`` become ``[file: name]`` notes; both are placed just before the message
that carried them, so the message's children still follow it on the thread. Messages keep
their uuids and ``parent_message_uuid`` links; the active leaf is
``current_leaf_message_uuid`` when the export has it, else the last message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memvault.models import Conversation, Message, Role
from memvault.sources.base import ParseResult, parse_time, title_from
from memvault.sources.blocks import segments
from memvault.sources.export import parse_export

# claude.ai marks a root message with the all-zero uuid instead of null.
_ROOT = "00000000-0000-4000-8000-000000000000"


def _attachment_messages(raw: dict[str, Any], base: str, parent: str | None, when: Any) -> list[Message]:
    out: list[Message] = []
    notes = [(a, str(a.get("extracted_content") or "")) for a in raw.get("attachments") or [] if isinstance(a, dict)]
    notes += [(f, "") for f in raw.get("files") or [] if isinstance(f, dict)]
    for index, (item, extracted) in enumerate(notes):
        name = item.get("file_name") or "unnamed"
        text = f"[attachment: {name}]\n{extracted}" if extracted.strip() else f"[file: {name}]"
        native = f"{base}#att{index}"
        out.append(Message(native_id=native, parent_native_id=parent, role="attachment", kind="attachment",
                           text=text, timestamp=when))
        parent = native
    return out


def parse_conversation(item: dict[str, Any]) -> Conversation | None:
    """One export conversation → Conversation with all its messages and the active leaf."""
    native = item.get("uuid")
    if not isinstance(native, str) or not native:
        raise ValueError("no uuid")
    raw_messages = item.get("chat_messages")
    if not isinstance(raw_messages, list):
        raise TypeError("'chat_messages' is not a list")
    known = {m.get("uuid") for m in raw_messages if isinstance(m, dict)}
    # A message whose last segment we emit under another id (attachments before, tool blocks
    # after) must be found by its children: map uuid → native id of its last segment.
    tails: dict[str, str] = {}
    messages: list[Message] = []
    previous: str | None = None
    tools: dict[str, str] = {}
    for raw in raw_messages:
        if not isinstance(raw, dict) or not isinstance(raw.get("uuid"), str):
            continue
        uuid = raw["uuid"]
        role: Role = "user" if raw.get("sender") == "human" else "assistant"
        parent_uuid = raw.get("parent_message_uuid")
        if parent_uuid in known and parent_uuid != _ROOT:
            parent: str | None = None if parent_uuid is None else tails.get(parent_uuid, parent_uuid)
        else:
            parent = None if "parent_message_uuid" in raw else previous  # old exports: linear
        when = parse_time(raw.get("created_at"))
        attached = _attachment_messages(raw, uuid, parent, when)
        messages += attached
        parent = attached[-1].native_id if attached else parent
        content = raw.get("content")
        segs = segments(content, role, tools) if isinstance(content, list) and content else []
        if not segs and str(raw.get("text") or "").strip():
            segs = segments(str(raw["text"]), role, tools)
        for index, seg in enumerate(segs):
            msg_id = uuid if index == 0 else f"{uuid}#{index}"
            messages.append(Message(native_id=msg_id, parent_native_id=parent, role=seg.role, kind=seg.kind,
                                    text=seg.text, timestamp=when))
            parent = msg_id
        if parent and parent != uuid:
            tails[uuid] = parent
        previous = parent or previous
    if not messages:
        return None
    leaf = item.get("current_leaf_message_uuid")
    leaf_id = tails.get(leaf, leaf) if isinstance(leaf, str) and leaf in known else messages[-1].native_id
    first_user = next((m.text for m in messages if m.role == "user" and m.kind == "text"), "")
    return Conversation(
        source="claude-ai", native_id=native, title=str(item.get("name") or "") or title_from(first_user),
        started_at=parse_time(item.get("created_at")), updated_at=parse_time(item.get("updated_at")),
        leaf_native_id=leaf_id, messages=messages,
    )


def parse(
    path: Path, start_offset: int = 0, state: dict[str, Any] | None = None, max_bytes: int | None = None
) -> ParseResult:
    """Parse a whole claude.ai export, plain or zipped (ingest streams it in slices instead, through
    ``export.export_slices``); ``start_offset``, ``state`` and ``max_bytes`` are ignored."""
    return parse_export(path, "claude.ai", parse_conversation)

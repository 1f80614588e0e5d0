"""pi coding-agent sessions (``~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl``).

The header line ``{type: "session", id, cwd, version}`` names the session. v1 entries have no
ids: native ids are line numbers and each message follows the previous one. v2/v3 entries
form a tree through ``id``/``parentId``; entries that are not messages (model changes, labels,
session_info…) are remembered as aliases of their parent so children still land on a message,
and the leaf is the last entry, i.e. the current position. Compaction and branch summaries are
kept with kinds ``compact_summary`` / ``branch_summary``; ``session_info`` names the title.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from memvault.models import Conversation, Message, MessageKind, Role
from memvault.sources.base import (
    SessionState, first_lines, iso, parse_time, remember, session_conversation, title_from,
    tool_call_text, tool_result_text,
)
from memvault.sources.blocks import flatten
from memvault.sources.jsonl import jsonl_parser

TOOL_NAME_LIMIT = 256
_TREE_ONLY = {"model_change", "thinking_level_change", "label", "custom", "session_info"}
Segment = tuple[Role, MessageKind, str]


def _message_segments(message: dict[str, Any], tools: dict[str, str]) -> list[Segment]:
    """Segments of one AgentMessage, by role."""
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        text = flatten(content)
        return [("user", "text", text)] if text.strip() else []
    if role == "assistant":
        out: list[Segment] = []
        texts: list[str] = []
        for block in content or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and str(block.get("text") or "").strip():
                texts.append(block["text"])
            elif block.get("type") == "toolCall":
                if texts:
                    out.append(("assistant", "text", "\n\n".join(texts)))
                    texts = []
                name = str(block.get("name") or "tool")
                if isinstance(block.get("id"), str):
                    remember(tools, block["id"], name, TOOL_NAME_LIMIT)
                out.append(("tool", "tool_call", tool_call_text(name, block.get("arguments"))))
        if texts:
            out.append(("assistant", "text", "\n\n".join(texts)))
        return out
    if role == "toolResult":
        tool = message.get("toolName") or (tools.get(message["toolCallId"]) if "toolCallId" in message else None)
        return [("tool", "tool_result", tool_result_text(tool, flatten(content), bool(message.get("isError"))))]
    if role == "bashExecution":
        head = tool_call_text("bash", {"command": message.get("command")})
        return [("tool", "tool_result", f"{head}\n{first_lines(str(message.get('output') or ''))}")]
    if role == "custom":
        text = flatten(content)
        return [("system", "meta", text)] if text.strip() else []
    if role in ("compactionSummary", "branchSummary"):
        kind: MessageKind = "compact_summary" if role == "compactionSummary" else "branch_summary"
        return [("summary", kind, str(message.get("summary") or ""))]
    raise ValueError(f"unknown message role {role!r}")


class PiState(SessionState):
    """What one parse hands the next (JSON in the watermark); ``tail`` is the current position."""

    named: bool  # the title was given (session_info), not taken from the first user message
    version: int  # of the file format: v1 is linear, later ones a tree of parentIds
    aliases: dict[str, str]  # entry id that made no message → the message it stands for ("" none)
    leaf: str | None
    tools: dict[str, str]  # tool call id → tool name, so a result names its tool


class PiHandler:
    """Feeds pi entries into one conversation; state keeps the header, aliases and leaf."""

    def __init__(self, state: dict[str, Any], path: Path) -> None:
        self.path = path
        # the state is this handler's own earlier output, read back from the watermark
        self.s = cast(PiState, {"session": None, "project": None, "title": "", "named": False, "version": 1,
                                "started": None, "updated": None, "aliases": {}, "tail": None, "leaf": None,
                                "tools": {}, **state})
        self.messages: dict[str, Message] = {}
        self.touched = False

    def feed(self, line_no: int, obj: dict[str, Any]) -> bool:
        kind = obj["type"]
        when = parse_time(obj.get("timestamp"))
        if kind == "session":
            self.s["session"] = self.s["session"] or obj.get("id")
            self.s["project"] = self.s["project"] or obj.get("cwd")
            self.s["version"] = obj.get("version", 1)
            self.s["started"] = self.s["started"] or iso(when)
            self.touched = True
            return True
        if kind == "message":
            message = obj.get("message")
            if not isinstance(message, dict):
                raise TypeError("'message' is not an object")
            segs = _message_segments(message, self.s["tools"])
        elif kind == "compaction":
            segs = [("summary", "compact_summary", str(obj.get("summary") or ""))]
        elif kind == "branch_summary":
            segs = [("summary", "branch_summary", str(obj.get("summary") or ""))]
        elif kind == "custom_message":
            segs = [("system", "meta", flatten(obj.get("content")))]
        elif kind in _TREE_ONLY:
            segs = []
            if kind == "session_info" and isinstance(obj.get("name"), str) and obj["name"].strip():
                self.s["title"], self.s["named"] = obj["name"].strip(), True
                self.touched = True
        else:
            segs = None
        entry_id = obj.get("id") if isinstance(obj.get("id"), str) else None
        cursor = self._parent(obj)
        native = entry_id or f"L{line_no}"
        for index, (role, mkind, text) in enumerate(s for s in segs or [] if s[2].strip()):
            msg_id = native if index == 0 else f"{native}#{index}"
            self.messages[msg_id] = Message(native_id=msg_id, parent_native_id=cursor, role=role, kind=mkind,
                                            text=text, timestamp=when)
            if role == "user" and not self.s["named"] and not self.s["title"]:
                self.s["title"] = title_from(text)
            cursor = msg_id
            self.touched = True
        if entry_id and cursor != entry_id:
            self.s["aliases"][entry_id] = cursor or ""
        if entry_id or segs:
            # v3: the last entry is the current position; v1: the last message
            self.s["tail"] = cursor
            self.s["leaf"] = cursor
        if when and segs:
            self.s["updated"] = iso(when)
        return segs is not None

    def _parent(self, obj: dict[str, Any]) -> str | None:
        if "parentId" not in obj:  # v1: linear
            return self.s["tail"]
        parent = obj.get("parentId")
        if not isinstance(parent, str) or not parent:
            return None
        aliases = self.s["aliases"]
        return (aliases[parent] or None) if parent in aliases else parent

    def finish(self) -> tuple[list[Conversation], PiState]:
        messages = list(self.messages.values())
        return session_conversation("pi", self.s, self.path, self.s["leaf"], messages, self.touched), self.s


parse = jsonl_parser(PiHandler, "a pi session")

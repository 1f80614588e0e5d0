"""OpenCode sessions, as memvault's OpenCode plugin exports them (``<home>/.memvault/opencode/<session>.jsonl``).

OpenCode keeps a session as many small JSON files in its own storage; its plugin API hands the
same data out through the SDK (``client.session.messages``): one ``{info, parts}`` per message.
The plugin writes each as a line ``{"type": "message", "info": …, "parts": […]}`` (the whole
session again at each idle; messages and parts keep their ids, so a re-read upserts them).

- ``info``: ``id``, ``sessionID``, ``role`` (user / assistant), ``time.created`` (epoch ms),
  ``path.cwd`` on assistant messages (the project);
- ``parts``: ``text`` (``synthetic`` ones are what a plugin added: recall blocks), ``tool``
  (``tool``, ``state.status/input/output/error``), ``reasoning``, step and file markers (skipped).
Messages follow one another in the file's order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from memvault.models import Conversation, Message, MessageKind, Role
from memvault.sources.base import (
    SessionState, iso, parse_time, session_conversation, title_from, tool_call_text, tool_result_text,
)
from memvault.sources.jsonl import jsonl_parser

Segment = tuple[str, Role, MessageKind, str]


def _segments(role: Any, parts: Any) -> list[Segment]:
    """(part id, role, kind, text) of one message's parts that carry conversation."""
    out: list[Segment] = []
    if role not in ("user", "assistant") or not isinstance(parts, list):
        raise ValueError(f"a message needs role user or assistant and a list of parts (role {role!r})")
    for n, part in enumerate(parts):
        if not isinstance(part, dict):
            continue
        pid = str(part.get("id") or f"p{n}")
        kind = part.get("type")
        if kind == "text" and not part.get("synthetic") and str(part.get("text") or "").strip():
            out.append((pid, role, "text", str(part["text"])))
        elif kind == "tool":
            state = part.get("state")
            state = state if isinstance(state, dict) else {}
            name = str(part.get("tool") or "tool")
            out.append((pid, "tool", "tool_call", tool_call_text(name, state.get("input"))))
            if state.get("status") in ("completed", "error"):
                output = str(state.get("output") or state.get("error") or "")
                out.append((f"{pid}#result", "tool", "tool_result",
                            tool_result_text(name, output, state.get("status") == "error")))
    return out


class OpenCodeHandler:
    """Feeds exported messages into one conversation; state keeps the session, the tail and the title."""

    def __init__(self, state: dict[str, Any], path: Path) -> None:
        self.path = path
        # the state is this handler's own earlier output, read back from the watermark
        self.s = cast(SessionState, {"session": None, "project": None, "title": "", "started": None,
                                      "updated": None, "tail": None, **state})
        self.messages: dict[str, Message] = {}

    def feed(self, line_no: int, obj: dict[str, Any]) -> bool:
        if obj["type"] != "message":
            return False
        info = obj.get("info")
        if not isinstance(info, dict):
            raise TypeError("'info' is not an object")
        time = info.get("time")
        when = parse_time(time.get("created") if isinstance(time, dict) else None)
        path = info.get("path")
        path = path if isinstance(path, dict) else {}
        self.s["session"] = self.s["session"] or info.get("sessionID")
        self.s["project"] = self.s["project"] or path.get("cwd")
        self.s["started"] = self.s["started"] or iso(when)
        for pid, role, kind, text in _segments(info.get("role"), obj.get("parts")):
            if pid in self.messages:
                continue
            self.messages[pid] = Message(native_id=pid, parent_native_id=self.s["tail"], role=role, kind=kind,
                                         text=text, timestamp=when)
            if role == "user" and not self.s["title"]:
                self.s["title"] = title_from(text)
            self.s["tail"] = pid
            if when:
                self.s["updated"] = iso(when)
        return True

    def finish(self) -> tuple[list[Conversation], SessionState]:
        messages = list(self.messages.values())
        return session_conversation("opencode", self.s, self.path, self.s["tail"], messages, bool(messages)), self.s


parse = jsonl_parser(OpenCodeHandler, "an exported OpenCode session")

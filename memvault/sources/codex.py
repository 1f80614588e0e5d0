"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``).

Every line is ``{timestamp, type, payload}``. ``session_meta`` gives the session id and cwd.
Conversation text appears twice (``event_msg`` user_message/agent_message and
``response_item`` message): a message equal to the one just emitted, with the same role, is a
duplicate and dropped. Injected context (``<environment_context>``, ``<user_instructions>``,
AGENTS.md contents, developer messages) is not the user speaking and is dropped. Tool calls
and their outputs join on ``call_id`` so a result can name its tool. Lines carry no ids, so
native ids are line numbers (``L12``), stable for an append-only file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, cast

from memvault.models import Conversation, Message, MessageKind, Role
from memvault.sources.base import (
    SessionState, iso, parse_time, remember, session_conversation, title_from, tool_call_text,
    tool_result_text,
)
from memvault.sources.jsonl import jsonl_parser

CALL_LIMIT = 256
_INJECTED_BLOCK = re.compile(
    r"<(environment_context|user_instructions|INSTRUCTIONS|user_shell_command)>.*?</\1>", re.DOTALL
)
_INJECTED_PREFIXES = ("# AGENTS.md instructions", "<permissions instructions>")
_CALL_TYPES = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
_OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output"}


def _clean_user_text(text: str) -> str:
    """The user's own words, without the context blocks Codex injects into user turns."""
    if text.lstrip().startswith(_INJECTED_PREFIXES):
        return ""
    return _INJECTED_BLOCK.sub("", text).strip()


def _content_text(content: Any) -> str:
    """Text of a response_item message's content list (input_text/output_text blocks)."""
    if isinstance(content, str):
        return content
    parts = [b.get("text") for b in content or [] if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return "\n".join(p for p in parts if p)


class CodexState(SessionState):
    """What one parse hands the next (JSON in the watermark)."""

    last: list[str] | None  # [role, text digest] of the last message: Codex logs some twice
    calls: dict[str, str]  # call id → tool name, so a result names its tool


class CodexHandler:
    """Feeds rollout lines into one conversation; state keeps ids, dedupe and call names."""

    def __init__(self, state: dict[str, Any], path: Path) -> None:
        self.path = path
        # the state is this handler's own earlier output, read back from the watermark
        self.s = cast(CodexState, {"session": None, "project": None, "title": "", "started": None,
                                   "updated": None, "tail": None, "last": None, "calls": {}, **state})
        self.messages: list[Message] = []
        self.touched = False

    def feed(self, line_no: int, obj: dict[str, Any]) -> bool:
        kind, payload = obj["type"], obj.get("payload")
        if kind not in ("session_meta", "response_item", "event_msg", "turn_context", "compacted"):
            return False
        if not isinstance(payload, dict):
            raise TypeError("'payload' is not an object")
        when = parse_time(obj.get("timestamp"))
        if kind == "session_meta":
            self.s["session"] = self.s["session"] or payload.get("id")
            self.s["project"] = self.s["project"] or payload.get("cwd")
            self.s["started"] = self.s["started"] or iso(parse_time(payload.get("timestamp")) or when)
            self.touched = True
        elif kind == "compacted":
            self._emit(line_no, "summary", "compact_summary", str(payload.get("message") or ""), when)
        elif kind == "event_msg":
            sub = payload.get("type")
            if sub == "user_message":
                self._emit(line_no, "user", "text", _clean_user_text(str(payload.get("message") or "")), when)
            elif sub == "agent_message":
                self._emit(line_no, "assistant", "text", str(payload.get("message") or ""), when)
        elif kind == "response_item":
            self._response_item(line_no, payload, when)
        return True

    def _response_item(self, line_no: int, item: dict[str, Any], when: Any) -> None:
        sub = item.get("type")
        if sub == "message":
            role = item.get("role")
            text = _content_text(item.get("content"))
            if role == "user":
                self._emit(line_no, "user", "text", _clean_user_text(text), when)
            elif role == "assistant":
                self._emit(line_no, "assistant", "text", text, when)
            # developer/system messages are instructions, not conversation
        elif sub in _CALL_TYPES:
            name = str(item.get("name") or sub.removesuffix("_call"))
            args = item.get("arguments", item.get("input", item.get("action")))
            call_id = item.get("call_id") or item.get("id")
            if isinstance(call_id, str):
                remember(self.s["calls"], call_id, name, CALL_LIMIT)
            self._emit(line_no, "tool", "tool_call", tool_call_text(name, args), when)
        elif sub in _OUTPUT_TYPES:
            output = item.get("output")
            called = self.s["calls"].get(item["call_id"]) if "call_id" in item else None
            self._emit(line_no, "tool", "tool_result", tool_result_text(called, self._output_text(output)), when)
        # reasoning is dropped like thinking elsewhere

    @staticmethod
    def _output_text(output: Any) -> str:
        """Outputs are plain text, a JSON string ``{"output": …}``, or a list of text blocks."""
        if isinstance(output, list):
            return _content_text(output)
        text = str(output or "")
        if text.startswith("{"):
            try:
                decoded = json.loads(text)
            except ValueError:
                return text
            if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
                inner: str = decoded["output"]
                return inner
        return text

    def _emit(self, line_no: int, role: Role, kind: MessageKind, text: str, when: Any) -> None:
        if not text.strip():
            return
        # A digest, not the text: state is stored in the ledger, where raw text (maybe holding
        # a secret the redactor removes from messages) must never land.
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        if self.s["last"] in ([role, digest], [role, text]):
            return  # the event_msg/response_item twin of the message just emitted
        native = f"L{line_no}"
        self.messages.append(Message(native_id=native, parent_native_id=self.s["tail"], role=role, kind=kind,
                                     text=text, timestamp=when))
        self.s["tail"], self.s["last"] = native, [role, digest]
        if role == "user" and not self.s["title"]:
            self.s["title"] = title_from(text)
        if when:
            self.s["updated"] = iso(when)
            self.s["started"] = self.s["started"] or iso(when)
        self.touched = True

    def finish(self) -> tuple[list[Conversation], CodexState]:
        return session_conversation("codex", self.s, self.path, self.s["tail"], self.messages, self.touched), self.s


parse = jsonl_parser(CodexHandler, "a Codex rollout")

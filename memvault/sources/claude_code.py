"""Claude Code session transcripts (``~/.claude/projects/<cwd>/<sessionId>.jsonl``).

Rules worth knowing:

* One API response is often split over several lines sharing ``message.id`` (one content
  block per line). Their text merges into one assistant message, whose native id is the uuid
  of the first line that carried text; a later line re-emits it with the merged text (the
  ledger upserts by native id), even across incremental parses.
* The thread follows ``parentUuid``; edits and rewinds branch it. Lines that yield no message
  (thinking only, system lines, snapshots) are remembered as aliases of their parent, so a
  child pointing at them still lands on a real message (the latest ``ALIAS_LIMIT`` of them:
  state stays bounded on huge sessions). Old files with ``parentUuid`` all null
  fall back to the previous message. The leaf is the last user/assistant line's message.
* ``isSidechain`` lines (subagents) form their own conversation per ``agentId``, sharing the
  parent's ``sessionId``; ``parent_conversation`` is the parent session's key.
* Tool calls/results become role "tool"; ``isMeta`` lines kind "meta"; compact summaries kind
  "compact_summary"; ``summary`` lines give the title; thinking is dropped; project = cwd.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any, TypedDict, cast

from memvault.ids import conversation_id
from memvault.models import Conversation, Message
from memvault.sources.base import iso, parse_time, remember, title_from
from memvault.sources.blocks import Segment, segments
from memvault.sources.jsonl import LineProblem, jsonl_parser

MAIN = ""  # conversation key of the main session; subagents use their agentId
MERGE_LIMIT = 16  # split API messages are contiguous, so a few recent ids suffice
TOOL_NAME_LIMIT = 256
# Aliases are kept for the most recent lines only, so the state of a huge session stays small
# (it is stored with the watermark after every slice). A line whose parent is older than
# that (a rewind tens of thousands of lines back) links to the parent's uuid as written.
ALIAS_LIMIT = 10_000
# Injected by Claude Code around local commands; not something the user said to the model.
_META_PREFIXES = ("<local-command-stdout>", "<command-name>", "<local-command-stderr>", "Caveat: The messages below")


class MergeEntry(TypedDict):
    """An assistant message later lines of the same API response add text to."""

    key: str  # its conversation's key
    msg: Message | dict[str, Any]  # the Message while parsing, its JSON in the state between parses


class ClaudeCodeState(TypedDict):
    """What one parse hands the next (JSON in the watermark); maps are by conversation key."""

    session: str | None
    project: str | None
    titles: dict[str, str]
    aliases: dict[str, str]  # uuid of a line that made no message → the message it stands for ("" none)
    tails: dict[str, str | None]  # the last message: the next line's parent when it names none
    leaf: dict[str, str]
    merge: dict[str, MergeEntry]  # API message id → the message holding its text
    tools: dict[str, str]  # tool_use id → tool name, so a result names its tool
    times: dict[str, tuple[object, object]]  # first and last timestamps as written (a list in JSON)


class ClaudeCodeHandler:
    """Feeds Claude Code lines into per-conversation message lists; state survives offsets."""

    def __init__(self, state: dict[str, Any], path: Path) -> None:
        self.path = path
        # the state is this handler's own earlier output, read back from the watermark
        self.s = cast(ClaudeCodeState, {
            "session": None, "project": None, "titles": {},
            "aliases": {}, "tails": {}, "leaf": {}, "merge": {}, "tools": {}, "times": {}, **state,
        })
        self.emitted: dict[str, dict[str, Message]] = {}
        self.touched: set[str] = set()

    # -- feeding -------------------------------------------------------------------------
    def feed(self, line_no: int, obj: dict[str, Any]) -> bool:
        kind: str = obj["type"]  # a string: parse_jsonl checked it
        if kind in ("summary", "custom-title"):
            title = obj.get("summary") if kind == "summary" else obj.get("customTitle")
            if isinstance(title, str) and title.strip():
                self.s["titles"][MAIN] = title.strip()
                self.touched.add(MAIN)
            return True
        uuid = obj.get("uuid") if isinstance(obj.get("uuid"), str) else None
        key = self._key(obj)
        if kind not in ("user", "assistant"):
            if uuid:  # system lines, snapshots, progress…: children may point at them
                self._alias(uuid, self._parent(obj, key))
            return kind == "system"
        message = obj.get("message")
        if not isinstance(message, dict):
            raise LineProblem("'message' is not an object")
        if "content" not in message:
            raise LineProblem("'message' has no 'content'")
        stamp = obj.get("timestamp")
        when = parse_time(stamp)
        self._note_meta(obj, key, stamp if when else None)
        cursor = self._parent(obj, key)
        native = uuid or f"L{line_no}"
        segs = segments(message["content"], "assistant" if kind == "assistant" else "user", self.s["tools"])
        while len(self.s["tools"]) > TOOL_NAME_LIMIT:
            self.s["tools"].pop(next(iter(self.s["tools"])))
        if kind == "user":
            segs = [self._retag_user(obj, seg) for seg in segs]
        new_index = 0
        for seg in segs:
            if kind == "assistant" and seg.kind == "text" and self._merge_text(message.get("id"), seg.text):
                continue  # text joined an earlier line's message; the chain does not advance
            msg_id = native if new_index == 0 else f"{native}#{new_index}"
            new_index += 1
            msg = Message(native_id=msg_id, parent_native_id=cursor, role=seg.role, kind=seg.kind,
                          text=seg.text, timestamp=when, low_value=obj.get("isApiErrorMessage") is True)
            self._emit(key, msg)
            if kind == "assistant" and seg.kind == "text" and isinstance(message.get("id"), str):
                # The Message itself until finish() turns it into JSON: most are never merged.
                remember(self.s["merge"], message["id"], MergeEntry(key=key, msg=msg), MERGE_LIMIT)
            if seg.role == "user" and seg.kind == "text" and not self.s["titles"].get(key):
                self.s["titles"][key] = title_from(seg.text)  # until a summary line names it
            cursor = msg_id
        if uuid and cursor != uuid:
            self._alias(uuid, cursor)
        self.s["tails"][key] = cursor
        if cursor:
            self.s["leaf"][key] = cursor
        return True

    def _key(self, obj: dict[str, Any]) -> str:
        if not obj.get("isSidechain"):
            return MAIN
        agent = obj.get("agentId")
        return agent if isinstance(agent, str) and agent else "sidechain"

    def _parent(self, obj: dict[str, Any], key: str) -> str | None:
        """Native id of the message this line follows."""
        parent = obj.get("parentUuid") or obj.get("logicalParentUuid")
        if isinstance(parent, str) and parent:
            aliases = self.s["aliases"]
            return (aliases[parent] or None) if parent in aliases else parent
        return self.s["tails"].get(key)

    def _alias(self, uuid: str, target: str | None) -> None:
        aliases = self.s["aliases"]
        aliases[uuid] = target or ""
        if len(aliases) > ALIAS_LIMIT * 5 // 4:
            # Drop the oldest in one go: popping one at a time from the front of a dict
            # costs a scan over the holes left by earlier pops.
            self.s["aliases"] = dict(islice(aliases.items(), len(aliases) - ALIAS_LIMIT, None))

    def _retag_user(self, obj: dict[str, Any], seg: Segment) -> Segment:
        """Person-typed text stays "user"; injected lines get a role/kind that says so."""
        if seg.role != "user":
            return seg
        if obj.get("isCompactSummary"):
            return seg._replace(role="summary", kind="compact_summary")
        if obj.get("isMeta") or (seg.kind == "text" and seg.text.lstrip().startswith(_META_PREFIXES)):
            return seg._replace(role="system", kind="meta")
        return seg

    def _merge_text(self, api_id: Any, text: str) -> bool:
        """Append to the assistant message already holding ``api_id``; False if none."""
        if not isinstance(api_id, str) or api_id not in self.s["merge"]:
            return False
        entry = self.s["merge"][api_id]
        held = entry["msg"]
        merged = held.model_copy() if isinstance(held, Message) else Message.model_validate(held)
        merged.text = f"{merged.text}\n\n{text}"
        entry["msg"] = merged
        self._emit(entry["key"], merged)
        return True

    def _emit(self, key: str, msg: Message) -> None:
        self.emitted.setdefault(key, {})[msg.native_id] = msg  # later line wins (upsert)
        self.touched.add(key)

    def _note_meta(self, obj: dict[str, Any], key: str, stamp: Any) -> None:
        """Session id, project and the first/last ``stamp`` (a usable timestamp as written:
        finish() parses it, so no line pays for formatting one)."""
        session = obj.get("sessionId")
        if isinstance(session, str) and session and not self.s["session"]:
            self.s["session"] = session
        cwd = obj.get("cwd")
        if key == MAIN and isinstance(cwd, str) and cwd and not self.s["project"]:
            self.s["project"] = cwd
        if stamp is not None:
            first, _ = self.s["times"].get(key, (None, None))
            self.s["times"][key] = (stamp if first is None else first, stamp)

    # -- collecting ----------------------------------------------------------------------
    def finish(self) -> tuple[list[Conversation], ClaudeCodeState]:
        native = self.s["session"] or self.path.stem
        out: list[Conversation] = []
        for key in sorted(self.touched, key=lambda k: (k != MAIN, k)):
            messages = list(self.emitted.get(key, {}).values())
            first, last = self.s["times"].get(key, (None, None))
            sub = key != MAIN
            out.append(Conversation(
                source="claude-code", native_id=native,
                agent_id=key if sub else None,
                parent_conversation=conversation_id("claude-code", native) if sub else None,
                title=self.s["titles"].get(key, ""),
                started_at=parse_time(first), updated_at=parse_time(last),
                project=self.s["project"], leaf_native_id=self.s["leaf"].get(key), messages=messages,
            ))
        for entry in self.s["merge"].values():
            if isinstance(entry["msg"], Message):
                entry["msg"] = _as_json(entry["msg"])
        return out, self.s


def _as_json(msg: Message) -> dict[str, Any]:
    """``msg.model_dump(mode="json")`` for the state, without pydantic's serializer per message."""
    return {"native_id": msg.native_id, "parent_native_id": msg.parent_native_id, "role": msg.role,
            "kind": msg.kind, "text": msg.text, "timestamp": iso(msg.timestamp), "low_value": msg.low_value}


parse = jsonl_parser(ClaudeCodeHandler, "a Claude Code transcript")

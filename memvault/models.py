"""Plain data shared by sources, stages and stores (no I/O here)."""

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from memvault.ids import conversation_id
from memvault.sources.kinds import SourceKind

Role = Literal["user", "assistant", "system", "tool", "attachment", "summary"]
# What a message is, beyond its role: ordinary text, a compact tool call or result,
# a marked meta line, a compaction/branch summary, an image pointer or an attachment.
MessageKind = Literal[
    "text", "tool_call", "tool_result", "meta", "compact_summary", "branch_summary", "image", "attachment"
]


class Message(BaseModel):
    """One normalized message of a conversation."""

    native_id: str = Field(description="Id of the message in its source (uuid, line number, node id)")
    parent_native_id: str | None = Field(
        default=None, description="Native id of the previous message on its thread; None for a root"
    )
    role: Role
    kind: MessageKind = "text"
    text: str
    timestamp: datetime | None = None
    low_value: bool = Field(default=False, description="Acknowledgement or empty chatter: kept, not chunked")


class Conversation(BaseModel):
    """One normalized conversation; messages in source order, including abandoned branches
    only when ``leaf_native_id`` selects the active thread among them."""

    source: SourceKind
    native_id: str
    agent_id: str | None = None
    parent_conversation: str | None = Field(default=None, description="Key of the parent (for subagents)")
    title: str = ""
    started_at: datetime | None = None
    updated_at: datetime | None = None
    project: str | None = None
    leaf_native_id: str | None = Field(default=None, description="Active leaf; None means the last message")
    messages: list[Message] = Field(default_factory=list)

    @property
    def id(self) -> str:
        return conversation_id(self.source, self.native_id, self.agent_id)


class LineError(BaseModel):
    """A problem with one line (or the whole file when line is None); never fatal."""

    file: str
    line: int | None = None
    error: str

    @field_validator("error")
    @classmethod
    def _redacted(cls, value: str) -> str:
        # A parser's message may quote the malformed field's value: a secret must not reach the
        # ledger's problem list or the run report through it.
        from memvault.hygiene.redact import redact_message

        return redact_message(value)


def redact_conversation(
    conv: Conversation, extra_patterns: dict[str, str] | None = None
) -> tuple[Conversation, dict[str, int]]:
    """A copy of ``conv`` with its title, project and every message redacted, and the total counts.

    The project is a working directory or a name the user typed (`note --project`): text
    from outside like the rest, so it is redacted like the rest.
    """
    from memvault.hygiene.redact import redact  # the rules compile on first use: the hook path stays light

    totals: dict[str, int] = {}

    def add(counts: dict[str, int]) -> None:
        for kind, n in counts.items():
            totals[kind] = totals.get(kind, 0) + n

    title, counts = redact(conv.title, extra_patterns)
    add(counts)
    project = conv.project
    if project:
        project, counts = redact(project, extra_patterns)
        add(counts)
    messages = []
    for message in conv.messages:
        text, counts = redact(message.text, extra_patterns)
        if counts:
            add(counts)
            message = message.model_copy(update={"text": text})
        # else the message is shared with ``conv``: nothing in it changed, and copying every
        # message of every ingested conversation cost more than finding the secrets.
        messages.append(message)
    return conv.model_copy(update={"title": title, "project": project, "messages": messages}), totals

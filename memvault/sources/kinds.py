"""The registry of source kinds: every other place (settings, scope, capture, parsers, CLI
help, docs) reads the kinds from here instead of writing them out again.

Standard library only: the hook path (`memvault capture`) imports it, so it must stay as
light as the spool. The Literal types are written out once, because a type checker cannot
derive them from a tuple; the tuples come from them, and :data:`KINDS` must name the same
formats (tests/sources/test_kinds.py checks it).
"""

from __future__ import annotations

from typing import Literal, NamedTuple, get_args

# A transcript format memvault reads from files (each has a parser below).
FileKind = Literal["claude-code", "codex", "pi", "chatgpt", "claude-ai", "opencode"]
# One of the two JSON exports, streamed one conversation at a time.
ExportKind = Literal["chatgpt", "claude-ai"]
# What a conversation's ``source`` can be. `note`: written by a person (`memvault note`) or an
# agent (MCP `remember`), not read from a file.
SourceKind = Literal[FileKind, "note"]
# What a configured source (``[[sources]] kind``) may say: a format, or `auto` to detect it.
ConfiguredKind = Literal[FileKind, "auto"]


class Kind(NamedTuple):
    """One transcript format: what people call it, the module that parses it, how it is read.
    (A named tuple, not a dataclass: importing dataclasses would cost the hook ~10 ms.)"""

    name: str
    label: str  # what users call it, in messages
    parser: str  # module exposing ``parse(path, start_offset, state, max_bytes)``
    export: bool = False  # a JSON export (re-read whole, streamed) rather than JSONL
    resumes: bool = False  # appended to: ingest resumes at the watermark's offset and state
    hook: bool = False  # an agent whose hook calls `memvault capture --source <name>`
    home: str = ""  # where the assistant writes transcripts by default (`memvault init` lists it)


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("claude-code", "Claude Code", "memvault.sources.claude_code", resumes=True, hook=True,
         home="~/.claude/projects"),
    Kind("codex", "Codex", "memvault.sources.codex", resumes=True, hook=True,
         home="~/.codex/sessions"),
    Kind("pi", "pi", "memvault.sources.pi", resumes=True, hook=True,
         home="~/.pi/agent/sessions"),
    Kind("chatgpt", "ChatGPT", "memvault.sources.chatgpt", export=True),
    Kind("claude-ai", "claude.ai", "memvault.sources.claude_ai", export=True),
    # the plugin writes the whole session again at each idle: re-read whole
    Kind("opencode", "OpenCode", "memvault.sources.opencode", hook=True),
)}

FILE_KINDS: tuple[FileKind, ...] = get_args(FileKind)
EXPORT_KINDS: tuple[ExportKind, ...] = get_args(ExportKind)
SOURCE_KINDS: tuple[SourceKind, ...] = get_args(SourceKind)
CONFIGURED_KINDS: tuple[ConfiguredKind, ...] = get_args(ConfiguredKind)
RESUMING_KINDS: frozenset[str] = frozenset(k.name for k in KINDS.values() if k.resumes)
# `memvault capture --source`: the agents with hooks, or `auto`.
CAPTURE_KINDS: tuple[str, ...] = tuple(k.name for k in KINDS.values() if k.hook) + ("auto",)
# What a recall may be scoped to: any conversation's source, or `article` for the wiki.
SCOPE_KINDS: tuple[str, ...] = SOURCE_KINDS + ("article",)


def listed(kinds: tuple[str, ...], last: str = "or") -> str:
    """``a, b, c or d``: kinds as a help text or a message names them."""
    return f"{', '.join(kinds[:-1])} {last} {kinds[-1]}" if len(kinds) > 1 else "".join(kinds)

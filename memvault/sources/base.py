"""Shared result type and small value helpers for every transcript parser.

Kept apart from ``__init__`` so parser modules can import it without a cycle.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from memvault.models import Conversation, LineError

# Compact tool messages keep only a glimpse of arguments and output: the ledger is a memory
# of what was said and done, not a copy of every file read.
ARG_SUMMARY_CHARS = 200
RESULT_LINES = 5
RESULT_CHARS = 600
TITLE_CHARS = 80


class ParseResult(BaseModel):
    """What one parse of one file produced; never raised, always returned."""

    conversations: list[Conversation] = Field(default_factory=list)
    errors: list[LineError] = Field(default_factory=list)
    skipped_types: dict[str, int] = Field(default_factory=dict)
    end_offset: int = Field(default=0, description="Bytes consumed; resume here next time")
    state: dict[str, Any] = Field(
        default_factory=dict, description="JSON-serializable parser context; pass back on the next call"
    )


def parse_time(value: Any) -> datetime | None:
    """ISO string, epoch seconds or epoch milliseconds → aware datetime; None if unusable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        # Epoch milliseconds (pi) are ~1e12; seconds (ChatGPT) are ~1e9.
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def iso(value: datetime | None) -> str | None:
    """Datetime → ISO string for JSON state."""
    return value.isoformat() if value else None


def clip(text: str, chars: int) -> str:
    """Shorten ``text`` to ``chars`` characters, marking the cut."""
    text = text.strip()
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def first_lines(text: str, lines: int = RESULT_LINES, chars: int = RESULT_CHARS) -> str:
    """The first few lines of a tool's output, with a note of how much was dropped."""
    all_lines = text.strip().splitlines()
    kept = "\n".join(all_lines[:lines])
    more = len(all_lines) - lines
    kept = clip(kept, chars)
    return kept + (f"\n… ({more} more lines)" if more > 0 else "")


# Argument keys that say most about a call, in order of preference.
_TELLING_KEYS = ("command", "cmd", "file_path", "path", "pattern", "url", "query", "description", "prompt")


def summarize_args(args: Any) -> str:
    """A one-line summary of a tool call's arguments (a dict, a JSON string or plain text)."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return clip(args.splitlines()[0] if args.strip() else "", ARG_SUMMARY_CHARS)
    if isinstance(args, dict):
        for key in _TELLING_KEYS:
            value = args.get(key)
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            if isinstance(value, str) and value.strip():
                return clip(value.replace("\n", " "), ARG_SUMMARY_CHARS)
    if args in (None, {}, []):
        return ""
    return clip(json.dumps(args, ensure_ascii=False), ARG_SUMMARY_CHARS)


def tool_call_text(name: str, args: Any) -> str:
    """Compact text of a tool call: ``name: summary``."""
    summary = summarize_args(args)
    return f"{name}: {summary}" if summary else name


def tool_result_text(name: str | None, output: str, is_error: bool = False) -> str:
    """Compact text of a tool result: name, error flag, first lines of output."""
    head = f"{name or 'tool'} {'error' if is_error else 'result'}:"
    body = first_lines(output)
    return f"{head}\n{body}" if body else f"{head} (no output)"


def title_from(text: str) -> str:
    """A fallback title: the first non-empty line of the first user message."""
    for line in text.splitlines():
        if line.strip():
            return clip(line, TITLE_CHARS)
    return ""


def remember(mapping: dict[str, Any], key: str, value: Any, limit: int) -> None:
    """Insert into a dict used as a small LRU, so state stays bounded on huge files."""
    mapping.pop(key, None)
    mapping[key] = value
    while len(mapping) > limit:
        mapping.pop(next(iter(mapping)))

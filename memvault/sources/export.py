"""Whole-file JSON exports (ChatGPT, claude.ai): load, validate the outer list, report problems.

Exports are rewritten wholesale by each download, so they are re-parsed in full each time
(``start_offset`` is ignored and ``end_offset`` is the file size); the ledger's upsert by
native id makes that idempotent.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memvault.models import Conversation, LineError
from memvault.sources.base import ParseResult, decode_text, open_regular, wide_encoding

ConvParser = Callable[[dict[str, Any]], Conversation | None]


def parse_export(path: Path, what: str, parse_one: ConvParser) -> ParseResult:
    """Load ``path`` as a JSON list and run ``parse_one`` on each conversation object."""

    def fail(message: str, size: int = 0) -> ParseResult:
        return ParseResult(errors=[LineError(file=str(path), line=None, error=message)], end_offset=size)

    try:
        with open_regular(path) as handle:
            raw = handle.read()
    except IsADirectoryError:
        return fail(f"{path} is a directory, not a {what} export file")
    except FileNotFoundError:
        return fail(f"{path} no longer exists (moved or deleted); nothing read")
    except OSError as exc:
        return fail(f"cannot read {path}: {exc.strerror or exc}")
    size = len(raw)
    if not raw.strip():
        return fail(f"{path} is empty; expected a {what} export (a JSON list)", size)
    if b"\0" in raw[:8192] and not wide_encoding(raw[:512]):
        return fail(f"{path} looks binary (NUL bytes), not a {what} export", size)
    try:
        data = json.loads(decode_text(raw))
    except RecursionError:
        return fail(f"{path} is JSON nested too deeply to read (more than {sys.getrecursionlimit()} levels); "
                    f"re-download the {what} export", size)
    except ValueError as exc:
        return fail(f"{path} is not valid JSON ({exc}); re-download the {what} export", size)
    if isinstance(data, dict):
        data = [data]  # a single conversation saved on its own
    if not isinstance(data, list):
        return fail(f"{path}: expected a list of conversations, got {type(data).__name__}", size)

    conversations: list[Conversation] = []
    errors: list[LineError] = []
    skipped: dict[str, int] = {}
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            errors.append(LineError(file=str(path), error=f"item {index} is a {type(item).__name__}, not an object"))
            continue
        try:
            conv = parse_one(item)
        # One odd conversation must not cost the user the rest of the export.
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
            ident = item.get("conversation_id") or item.get("id") or item.get("uuid") or f"#{index}"
            errors.append(LineError(file=str(path), error=f"conversation {ident} unusable: {exc}"))
            continue
        if conv is None:
            skipped["empty_conversation"] = skipped.get("empty_conversation", 0) + 1
        else:
            conversations.append(conv)
    return ParseResult(
        conversations=conversations, errors=errors, skipped_types=skipped, end_offset=size, state={}
    )

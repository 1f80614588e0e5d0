"""Transcript sources: one parser per format, all yielding normalized conversations.

Public API (used by memvault/stages/ingest.py):
    detect_format(path) -> SourceKind | None      # from content, never from the file name
    parse_file(path, kind, start_offset=0, state=None) -> ParseResult

JSONL formats (claude-code, codex, pi) stream from ``start_offset`` and hand back ``state``
so appended lines parse in context; JSON exports (chatgpt, claude-ai), plain or zipped, are
re-read whole, streamed one conversation at a time (``export.export_slices``).
``parse_file`` never raises for bad input: problems come back as ``ParseResult.errors``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from memvault.models import LineError, SourceKind
from memvault.sources.base import ParseResult
from memvault.sources.detect import detect_format

__all__ = ["PARSERS", "ParseResult", "detect_format", "parse_file"]

# Kind → module exposing ``parse(path, start_offset, state) -> ParseResult``; imported on
# first use so loading one format never pays for the others.
PARSERS: dict[str, str] = {
    "claude-code": "memvault.sources.claude_code",
    "codex": "memvault.sources.codex",
    "pi": "memvault.sources.pi",
    "chatgpt": "memvault.sources.chatgpt",
    "claude-ai": "memvault.sources.claude_ai",
    "opencode": "memvault.sources.opencode",
}


def parse_file(
    path: Path,
    kind: SourceKind,
    start_offset: int = 0,
    state: dict[str, Any] | None = None,
    max_bytes: int | None = None,
) -> ParseResult:
    """Parse ``path`` as ``kind`` from ``start_offset``, continuing from ``state``.

    ``max_bytes`` (JSONL only) stops after roughly that many bytes so a huge file can be
    ingested in slices: call again with the returned ``end_offset`` and ``state``.
    """
    module_name = PARSERS.get(kind)
    if module_name is None:
        return ParseResult(
            errors=[
                LineError(file=str(path), error=f"unknown source kind {kind!r}; expected one of {sorted(PARSERS)}")
            ],
            end_offset=start_offset,
            state=dict(state or {}),
        )
    module = importlib.import_module(module_name)
    result: ParseResult = module.parse(Path(path), start_offset, state, max_bytes)
    return result

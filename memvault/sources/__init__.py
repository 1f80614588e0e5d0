"""Transcript sources: one parser per format, all yielding normalized conversations.

Public API (used by memvault/stages/ingest.py):
    detect_format(path) -> SourceKind | None      # from content, never from the file name
    parse_file(path, kind, start_offset=0, state=None) -> ParseResult

JSONL formats (claude-code, codex, pi, opencode) stream from ``start_offset`` and hand back
``state`` so appended lines parse in context; JSON exports (chatgpt, claude-ai), plain or
zipped, are re-read whole, streamed one conversation at a time (``export.export_slices``).
``parse_file`` never raises for bad input: problems come back as ``ParseResult.errors``.
The kinds themselves are registered in :mod:`memvault.sources.kinds`.

This package's top imports only that registry: the hook path reads the kinds, and must not
pay for pydantic or the parsers (they load when a file is detected or parsed).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.sources.kinds import KINDS, SourceKind

if TYPE_CHECKING:
    from memvault.sources.base import ParseResult

__all__ = ["PARSERS", "detect_format", "parse_file"]

# Kind → module exposing ``parse(path, start_offset, state) -> ParseResult``; imported on
# first use so loading one format never pays for the others.
PARSERS: dict[str, str] = {name: kind.parser for name, kind in KINDS.items()}


def detect_format(path: Path) -> SourceKind | None:
    """The source kind of ``path`` judged from its content (see :mod:`memvault.sources.detect`)."""
    from memvault.sources.detect import detect_format as detect

    return detect(path)


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
    import importlib

    from memvault.models import LineError
    from memvault.sources.base import ParseResult

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

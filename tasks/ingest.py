"""ingest: transcript files → conversations and messages in the ledger, per-file watermarks.

An unchanged file costs a stat; an appended JSONL file is read from its byte offset (when
the consumed prefix still hashes the same); anything else is re-parsed whole and diffed by
message id. One bad file never stops the others: its problem is reported and skipped.
"""

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NONE
from pydantic import BaseModel, Field

from memvault.models import LineError
from memvault.settings import Settings
from stores.ledger import Ledger

JSONL_KINDS = {"claude-code", "codex", "pi"}
SUFFIXES = {".jsonl", ".json"}
WINDOW = 64 * 1024


class IngestResult(BaseModel):
    files_seen: int = 0
    files_changed: int = 0
    conversations_new: int = 0
    conversations_updated: int = 0
    messages_new: int = 0
    bytes_read: int = 0
    redactions: dict[str, int] = Field(default_factory=dict)
    skipped_types: dict[str, int] = Field(default_factory=dict)
    skipped_own: int = 0
    errors: list[LineError] = Field(default_factory=list)


def prefix_hash(path: Path, length: int) -> str:
    """Hash of the consumed prefix, sampled at both ends so an append never re-reads the file.

    The first and last 64 KiB before ``length`` (plus the length) catch a rewritten or
    truncated file without hashing hundreds of megabytes on every appended line.
    """
    h = hashlib.sha256(str(length).encode())
    with open(path, "rb") as fh:
        h.update(fh.read(min(WINDOW, length)))
        if length > WINDOW:
            fh.seek(max(WINDOW, length - WINDOW))
            h.update(fh.read(length - max(WINDOW, length - WINDOW)))
    return h.hexdigest()


def discover(roots: list[tuple[str, Path]]) -> tuple[list[tuple[str, Path]], list[LineError]]:
    """Expand folders into transcript files (sorted); report roots that do not exist."""
    files: list[tuple[str, Path]] = []
    errors: list[LineError] = []
    for kind, root in roots:
        if root.is_file():
            files.append((kind, root))
        elif root.is_dir():
            found = sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file())
            files.extend((kind, p) for p in found)
        else:
            errors.append(LineError(file=str(root), error="no such file or folder — check the path in memvault.toml"))
    return files, errors


def ingest_file(ledger: Ledger, path: Path, kind_hint: str, settings: Settings, result: IngestResult) -> None:
    """Ingest one file into ``result``; errors are recorded, never raised."""
    from memvault.noise import is_own_conversation, mark_low_value, strip_memory_blocks
    from memvault.redact import redact_conversation
    from memvault.sources import detect_format, parse_file

    key = str(path.resolve())
    st = path.stat()
    mark = ledger.watermark(key)
    if mark and mark["size"] == st.st_size and mark["mtime"] == st.st_mtime:
        return
    kind = mark["kind"] if mark else (kind_hint if kind_hint != "auto" else detect_format(path))
    if kind is None:
        result.errors.append(LineError(file=str(path), error="not a transcript memvault recognizes (claude-code, codex, pi, chatgpt or claude-ai) — skipped"))
        return
    start, state = 0, None
    if mark and kind in JSONL_KINDS and st.st_size >= mark["byte_offset"] > 0 \
            and prefix_hash(path, mark["byte_offset"]) == mark["prefix_hash"]:
        start, state = mark["byte_offset"], mark["state"]
    parsed = parse_file(path, kind, start, state)
    result.files_changed += 1
    result.bytes_read += max(parsed.end_offset - start, 0)
    result.errors.extend(parsed.errors)
    for name, n in parsed.skipped_types.items():
        result.skipped_types[name] = result.skipped_types.get(name, 0) + n
    redactions: Counter[str] = Counter()
    with ledger.transaction():
        for conv in parsed.conversations:
            if is_own_conversation(conv):
                result.skipped_own += 1
                continue
            for m in conv.messages:
                m.text = strip_memory_blocks(m.text)
            mark_low_value(conv.messages, settings.ingest.low_value_patterns or None)
            conv, counts = redact_conversation(conv, settings.ingest.redact_patterns or None)
            redactions.update(counts)
            is_new, n_new, n_changed = ledger.upsert_conversation(conv)
            result.messages_new += n_new
            if is_new:
                result.conversations_new += 1
            elif n_new or n_changed:
                result.conversations_updated += 1
        ledger.set_watermark(key, kind, st.st_size, st.st_mtime, prefix_hash(path, parsed.end_offset),
                             parsed.end_offset, parsed.state)
    for name, n in redactions.items():
        result.redactions[name] = result.redactions.get(name, 0) + n


def configured_roots(settings: Settings) -> list[tuple[str, Path]]:
    return [(s.kind, Path(s.path).expanduser()) for s in settings.sources]


def run_ingest(ledger: Ledger, settings: Settings, roots: list[tuple[str, Path]], progress: Any = None) -> IngestResult:
    """Ingest every file under ``roots``; ``progress(path, size)`` is called per file when given."""
    result = IngestResult()
    files, errors = discover(roots)
    result.errors.extend(errors)
    for kind, path in files:
        result.files_seen += 1
        try:
            ingest_file(ledger, path, kind, settings, result)
        except (OSError, UnicodeError, ValueError) as exc:
            # A file that vanished, turned into a folder, or cannot be read: report and go on.
            result.errors.append(LineError(file=str(path), error=f"{type(exc).__name__}: {exc}"))
        if progress is not None:
            progress(path)
    return result


@task(name="ingest", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def ingest(ctx: Any) -> dict[str, Any]:
    """Prefect task: ingest configured sources plus any ad hoc paths of this run."""
    log = get_run_logger()
    roots = configured_roots(ctx.settings) + [("auto", p) for p in ctx.extra_paths]
    result = run_ingest(ctx.ledger, ctx.settings, roots, progress=lambda p: log.info("ingested %s", p))
    ctx.conversations_ingested = result.conversations_new + result.conversations_updated
    for err in result.errors:
        log.warning("%s:%s: %s", err.file, err.line or "-", err.error)
    return result.model_dump(mode="json")

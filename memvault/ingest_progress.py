"""Progress of an ingest (files and bytes), reported to whoever is watching.

The ingest stage runs inside a Prefect flow run that the CLI starts in its own process, so a
progress sink cannot travel through the flow's (validated, serializable) parameters. The CLI
sets one for the duration of the call with ``watching(sink)``; the stage reports to
``current()``. A context variable, not a module global: it is scoped to the caller's context
and inherited by the flow's task, and nothing is reported when no one is watching.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol


class ProgressSink(Protocol):
    """What the ingest stage reports: the work found, bytes as they are read, files as they end."""

    def begin(self, files: int, total_bytes: int) -> None: ...

    def advance(self, nbytes: int) -> None: ...

    def file_done(self, path: Path) -> None: ...


_SINK: ContextVar[ProgressSink | None] = ContextVar("memvault_ingest_progress", default=None)


def current() -> ProgressSink | None:
    """The sink of whoever started this ingest, or None."""
    return _SINK.get()


@contextmanager
def watching(sink: ProgressSink | None) -> Iterator[None]:
    """Report ingest progress to ``sink`` within the block."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


class RichProgress:
    """A rich progress bar on stderr: bytes read of bytes found, and files done of files found."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                   TransferSpeedColumn)

        self._progress = Progress(
            TextColumn("[bold]ingest[/bold]"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
            TextColumn("{task.fields[done]}/{task.fields[files]} files"), TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self._task = self._progress.add_task("ingest", total=None, done=0, files="?")

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def begin(self, files: int, total_bytes: int) -> None:
        self._progress.update(self._task, total=total_bytes, files=files)

    def advance(self, nbytes: int) -> None:
        self._progress.advance(self._task, nbytes)

    def file_done(self, path: Path) -> None:
        done = self._progress.tasks[0].fields["done"] + 1
        self._progress.update(self._task, done=done)

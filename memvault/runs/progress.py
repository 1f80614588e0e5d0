"""Progress of long work (ingest bytes, reindex rows, a run's stages), reported to whoever watches.

One shape for all of it, `Progress`: `begin(total)` once, `advance(amount)` as units finish,
`done()` at the end; a `label` names what is under way (a file, a stage) for whoever shows it.
The terminal shows a rich bar (`RichProgress`), the nightly flow a Prefect progress artifact.

The ingest stage runs inside a Prefect flow run that the CLI starts, so a progress sink cannot
travel through the flow's (validated, serializable) parameters. The CLI sets one for the
duration of the call with ``watching(sink)``; the stage reports to ``current()``. A context
variable, not a module global: it is scoped to the caller's context and inherited by the
flow's task, and nothing is reported when no one is watching.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol


class Progress(Protocol):
    """Work measured in units (bytes, rows, stages)."""

    def begin(self, total: int, label: str = "") -> None:
        """``total`` units of work lie ahead."""

    def advance(self, amount: int, label: str = "") -> None:
        """``amount`` more units are done; ``label`` (when given) names what is under way now."""

    def done(self) -> None:
        """The work is over (all of it, or as much as this run does)."""


_SINKS: dict[str, ContextVar[Progress | None]] = {
    work: ContextVar(f"memvault_{work}_progress", default=None) for work in ("ingest", "index")}


def current(work: str = "ingest") -> Progress | None:
    """The sink of whoever watches ``work`` (ingest bytes, index nodes), or None."""
    return _SINKS[work].get()


@contextmanager
def watching(sink: Progress | None, work: str = "ingest") -> Iterator[None]:
    """Report progress of ``work`` to ``sink`` within the block."""
    token = _SINKS[work].set(sink)
    try:
        yield
    finally:
        _SINKS[work].reset(token)


def _rate_column() -> Any:
    """Units per second, as rich measures it (for counts; bytes have TransferSpeedColumn)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            return Text("" if not task.speed else f"{task.speed:,.0f}/s")

    return Rate()


class RichProgress:
    """A rich progress bar on stderr: units done of the total (bytes when ``as_bytes``), and the label."""

    def __init__(self, title: str = "ingest", *, as_bytes: bool = True, transient: bool = False,
                 disable: bool = False) -> None:
        from rich.console import Console
        from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn,
                                   TimeRemainingColumn, TransferSpeedColumn)

        counts = [DownloadColumn(), TransferSpeedColumn()] if as_bytes else [MofNCompleteColumn(), _rate_column()]
        self._progress = Progress(
            TextColumn(f"[bold]{title}[/bold]"), BarColumn(), *counts, TextColumn("{task.fields[label]}"),
            TimeRemainingColumn(), console=Console(stderr=True), transient=transient, disable=disable,
        )
        self._task = self._progress.add_task(title, total=None, label="")

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def begin(self, total: int, label: str = "") -> None:
        self._progress.update(self._task, total=total, completed=0, label=label)

    def advance(self, amount: int, label: str = "") -> None:
        self._progress.advance(self._task, amount)
        if label:
            self._progress.update(self._task, label=label)

    def done(self) -> None:
        task = self._progress.tasks[0]
        self._progress.update(self._task, completed=task.total or task.completed)


class LazyBar:
    """A `RichProgress` of counts shown only from ``begin`` to ``done`` (a stage's part of a
    longer command: nothing on screen while the other stages run)."""

    def __init__(self, title: str) -> None:
        self.title = title
        self._bar: RichProgress | None = None

    def begin(self, total: int, label: str = "") -> None:
        if self._bar is None:
            self._bar = RichProgress(self.title, as_bytes=False, transient=True).__enter__()
        self._bar.begin(total, label)

    def advance(self, amount: int, label: str = "") -> None:
        if self._bar is not None:
            self._bar.advance(amount, label)

    def done(self) -> None:
        if self._bar is not None:
            self._bar.done()
            self._bar.__exit__(None, None, None)
            self._bar = None

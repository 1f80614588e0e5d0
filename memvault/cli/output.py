"""Shared output helpers: text for the terminal, `--json` rendering, errors as text or JSON, exit codes.

Every command prints through this module: ``console``/``err_console`` (rich), ``plain`` and
``out`` for memory text, ``emit_json`` for machine output. Memory text comes from transcripts,
and a transcript may hold terminal controls (OSC 52 rewrites the clipboard, OSC 0 retitles the
window, BEL, C1 CSI): on the way to a terminal they are shown as escapes (``\\x1b``), never
acted on; ``--json`` keeps the exact text (JSON escapes them, and parsing gives them back).
"""

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from memvault.errors import MemvaultError, disk_full
from memvault.hygiene.terminal import JSON_ESCAPES, visible


class SafeConsole(Console):
    """A rich console that shows the controls inside any string it renders (markup, table cells,
    plain text) instead of sending them to the terminal; rich's own styling is unaffected."""

    def render_str(self, text: str, *args: Any, **kwargs: Any) -> Text:
        return super().render_str(visible(text), *args, **kwargs)


console = SafeConsole(soft_wrap=True)
err_console = SafeConsole(stderr=True, soft_wrap=True)


def plain(text: str) -> None:
    """Print ``text`` as it is: no rich markup (memory text holds `[...]`), no highlighting."""
    console.print(text, highlight=False, markup=False)


def out(text: str, end: str = "\n") -> None:
    """Write ``text`` to stdout untouched by rich (no wrapping, no markup), controls shown."""
    sys.stdout.write(visible(text) + end)


def emit_json(data: Any) -> None:
    text = json.dumps(data, indent=2, default=str, ensure_ascii=False).translate(JSON_ESCAPES)
    sys.stdout.write(text + "\n")


@contextmanager
def reporting(as_json: bool) -> Iterator[None]:
    """Turn memvault errors into a message (text or JSON) and their exit code."""
    try:
        try:
            yield
        except MemvaultError:
            raise
        except Exception as raw:  # an OSError, or DuckDB's / LanceDB's own IO error
            full = disk_full(raw)
            if full is None:
                raise
            raise full from raw  # "disk full: <path>", as text or JSON, never a traceback
    except MemvaultError as exc:
        if as_json:
            emit_json({"error": str(exc), "type": type(exc).__name__})
        else:
            # Escaped: messages name TOML sections such as [recall], which rich would take as markup.
            err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(exc.exit_code) from None


def render(as_json: bool, data: Any, text: Callable[[], None]) -> None:
    if as_json:
        emit_json(data)
    else:
        text()

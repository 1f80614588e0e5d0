"""Shared output helpers: `--json` rendering, errors as text or JSON, exit codes."""

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from memvault.errors import MemvaultError, disk_full

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def plain(text: str) -> None:
    """Print ``text`` as it is: no rich markup (memory text holds `[...]`), no highlighting."""
    console.print(text, highlight=False, markup=False)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str, ensure_ascii=False) + "\n")


@contextmanager
def reporting(as_json: bool) -> Iterator[None]:
    """Turn memvault errors into a message (text or JSON) and their exit code."""
    try:
        try:
            yield
        except OSError as raw:
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

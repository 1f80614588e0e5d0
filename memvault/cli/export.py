"""The `export` command: the home's conversations, messages, chunks and articles as JSON Lines or SQLite."""

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from memvault.cli.app import app
from memvault.cli.context import home_settings
from memvault.cli.output import console, render, reporting
from memvault.cli.params import JsonFlag

PANEL = "Operations"


class ExportFormat(StrEnum):
    """The formats of memvault.ops.export (Typer offers an Enum's values as the choices)."""

    JSONL = "jsonl"
    SQLITE = "sqlite"


@app.command(rich_help_panel=PANEL)
def export(
    ctx: typer.Context,
    dest: Annotated[Path, typer.Argument(metavar="DEST", show_default=False,
                                         help="A folder (jsonl: one .jsonl per table) or a file (sqlite).")],
    fmt: Annotated[ExportFormat, typer.Option("--format", metavar="FORMAT", case_sensitive=False,
                                              help="jsonl (a folder of JSON Lines files) or sqlite (one file).")]
    = ExportFormat.JSONL,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files an earlier export left at DEST.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Write conversations, messages, chunks and articles in an open format (read-only).

    jsonl: a folder with one .jsonl file per table; sqlite: one file, a table per kind.
    Takes no writer lock; while a run writes, it waits briefly, then says who writes.

    Example: memvault export --format sqlite ~/memvault-export.db && datasette ~/memvault-export.db
    """
    from memvault.ops.export import export_home

    with reporting(as_json):
        settings = home_settings(ctx)
        summary = export_home(settings, fmt.value, dest, force=force)

        def text() -> None:
            console.print(f"exported to {summary['dest']} ({summary['format']}):", highlight=False)
            for name, table in summary["tables"].items():
                console.print(f"  {name:14} {table['rows']:>9} row(s)  {table['path']}", highlight=False)

        render(as_json, summary, text)



"""Ingest commands: the progress bar of `memvault ingest`, and `memvault redact --rescan`."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from memvault.cli.app import app
from memvault.cli.output import JsonOpt, console, render, reporting


@contextmanager
def ingest_progress(enabled: bool) -> Iterator[None]:
    """Show a progress bar (files and bytes, on stderr) while an ingest runs in this process."""
    if not enabled:
        yield
        return
    from memvault.ingest_progress import RichProgress, watching

    with RichProgress() as bar, watching(bar):
        yield


@app.command()
def redact(
    ctx: typer.Context,
    rescan: bool = typer.Option(False, "--rescan", help="Apply the current patterns to everything stored."),
    as_json: bool = JsonOpt,
) -> None:
    """Redact secrets already stored (ledger, index, vault) with the current patterns.

    Example: memvault redact --rescan --json
    """
    from memvault.errors import UsageError
    from memvault.ops.home import require_home
    from memvault.ops.rescan import rescan as run_rescan
    from memvault.settings import load_settings

    with reporting(as_json):
        if not rescan:
            raise UsageError("nothing to do: `memvault redact --rescan` applies the current patterns "
                             "(built-in plus [ingest] redact_patterns) to everything already stored")
        settings = load_settings(ctx.obj.get("home"))
        require_home(settings.home)
        report = run_rescan(settings)
        data = report.model_dump(mode="json")
        render(as_json, data, lambda: _print_rescan(data))


def _print_rescan(data: dict[str, Any]) -> None:
    found = ", ".join(f"{k} {v}" for k, v in sorted(data["redactions"].items())) or "none"
    console.print(f"secrets redacted: {found}")
    for place, n in data["ledger"].items():
        if n:
            console.print(f"  ledger {place}: {n} row(s) changed", highlight=False)
    console.print(f"  conversations changed: {data['conversations']}")
    console.print(f"  index: {data['index_documents_removed']} document(s), {data['index_nodes_removed']} node(s) "
                  "removed; the next `memvault run` re-indexes them from the redacted text")
    for path in data["vault_files"]:
        console.print(f"  vault {path}: rewritten", highlight=False)
    if data["vault_files"]:
        console.print("  vault: " + ("committed" if data["committed"] else "not committed"))
    for path in data["backups"]:
        console.print(f"  [yellow]backup {path} may still hold originals; delete it once you trust the "
                      "current ledger[/yellow]", highlight=False)
    console.print(f"[bold]note:[/bold] {data['note']}", highlight=False)

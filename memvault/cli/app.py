"""The `memvault` Typer app and its global options, and nothing else.

Commands live in modules named by what they hold (`cli/recall.py`, `cli/pipeline.py`, …),
register themselves on `app` and are imported by `memvault/cli/__init__.py`; this module
imports none of them. Heavy imports live inside commands so `memvault --help` is instant.
"""

from pathlib import Path
from typing import Annotated

import typer

from memvault.cli.help import MemvaultTyper

app = MemvaultTyper(
    name="memvault",
    help="A local-first memory of your conversations with AI assistants.\n\n"
    "Example: memvault init && memvault run && memvault recall 'postgres backups'",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def package_version() -> str:
    """memvault's version from the installed package's metadata."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memvault")
    except PackageNotFoundError:
        return "unknown (not installed as a package: run `make install`)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"memvault {package_version()}")
        raise typer.Exit()


@app.callback()
def _global(
    ctx: typer.Context,
    home: Annotated[Path | None, typer.Option("--home", metavar="PATH", envvar="MEMVAULT_HOME",
                                              help="Memory home (default ~/memvault).")] = None,
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print memvault's version and exit.")] = False,
) -> None:
    ctx.obj = {"home": home}

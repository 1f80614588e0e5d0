"""The `memvault` command line (Typer): thin commands that parse, call the core, render.

`app.py` holds the Typer app; each module below registers the commands it is named for. They
are imported here, after the app exists, so no module imports the package that imports it.
"""

# Imported for their side effect, registering commands; this order is the order of `--help`.
from memvault.cli import home, pipeline, recall, editorial, ops, agents  # noqa: F401,I001
from memvault.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """The `memvault` console script."""
    app()

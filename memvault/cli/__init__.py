"""The `memvault` command line (Typer): thin commands that parse, call the core, render.

``main`` runs the two agent hooks (`capture`, `prompt-recall`) without importing Typer or
the command modules when the command line is a hook's, so a hook starts in milliseconds;
``app`` is imported on first use.
"""

import sys
from typing import Any


def main() -> None:
    from memvault.cli.live_fast import fast_hook

    code = fast_hook(sys.argv[1:])
    if code is not None:
        raise SystemExit(code)
    from memvault.cli.app import main as typer_main

    typer_main()


def __getattr__(name: str) -> Any:
    if name == "app":
        from memvault.cli.app import app

        return app
    raise AttributeError(f"module 'memvault.cli' has no attribute {name!r}")


__all__ = ["app", "main"]

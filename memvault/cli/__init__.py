"""The `memvault` command line (Typer): thin commands that parse, call the core, render.

When the process is the `memvault` command running one of the two agent hooks (`capture`,
`prompt-recall`, with a hook's simple command line), Typer and the command modules are not
imported at all and ``main`` runs the hook directly: a hook then starts in milliseconds
(see ``memvault.cli.live_fast``). Every other use gets the Typer app.
"""

import sys

from memvault.cli.live_fast import is_hook_process, run_hook

if is_hook_process(sys.argv):

    def main() -> None:
        raise SystemExit(run_hook(sys.argv))

else:
    from memvault.cli.app import app, main

__all__ = ["app", "main"]

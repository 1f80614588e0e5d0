"""The `memvault` command line (Typer): thin commands that parse, call the core, render.

`app.py` holds the Typer app; each module below registers the commands it is named for. They
are imported here, after the app exists, so no module imports the package that imports it.

When the process is the `memvault` command running one of the agent hooks (`capture`,
`prompt-recall`, `index-brief`, with a hook's simple command line), Typer and the command modules are not
imported at all and ``main`` runs the hook directly: a hook then starts in milliseconds
(see ``memvault.cli.live_fast``). Every other use gets the Typer app.
"""

import sys

from memvault.cli.live_fast import is_hook_process, run_hook
from memvault.files import owner_only_umask

if is_hook_process(sys.argv):

    def main() -> None:
        """The `memvault` console script, as an agent hook."""
        owner_only_umask()  # whatever the user's umask, what a hook creates is the owner's only
        raise SystemExit(run_hook(sys.argv))

else:
    # Imported for their side effect, registering commands; this order is the order of `--help`.
    from memvault.cli import home, pipeline, recall, browse, editorial, ops, agents, live  # noqa: F401,I001
    from memvault.cli import export  # noqa: F401
    from memvault.cli.app import app

    def main() -> None:
        """The `memvault` console script; a read-only query ends without interpreter teardown
        (see ``memvault.cli.context.quick_exit``)."""
        owner_only_umask()  # whatever the user's umask, a home's folders and files are owner-only
        try:
            app()
        except SystemExit as exc:
            _end(exc.code)
            raise
        _end(0)

    def _end(code: object) -> None:
        import os

        from memvault.cli.context import quick_exit

        if not quick_exit.allowed:
            return
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)  # what SystemExit would have printed
            code = 1
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:  # a reader that went away (`| head`): nothing more to say to it
            pass
        os._exit(code or 0)

__all__ = ["app", "main"]

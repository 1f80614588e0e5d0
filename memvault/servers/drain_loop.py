"""A warm server drains the spool: `memvault serve` runs this loop in a background thread.

The drainer started by a hook loads its own embedding model; a running server already has
one warm, so while it runs it announces itself in ``.memvault/serve.json`` (hooks then start
no drainer, and prompt-recall asks it over loopback) and drains every ``live.serve_drain_s``.
Drains run through the shared service, serialized with recall calls.
"""

import threading

from memvault import spool
from memvault.errors import MemvaultError
from memvault.servers import SharedService


def drain_loop(shared: SharedService, stop: threading.Event) -> None:
    """Drain whenever the spool holds entries, until ``stop`` is set."""
    from memvault.ops.drain import run_drainer

    settings = shared.service.settings
    while not stop.wait(settings.live.serve_drain_s):
        if not spool.pending(settings.state_dir):
            continue
        try:
            shared.call(lambda s: run_drainer(s.settings, wait=False, embedder=s.embedder))
        except MemvaultError as exc:
            spool.log_line(settings.state_dir, f"serve: drain failed ({exc}); the spool is kept")


def start(shared: SharedService, host: str, port: int) -> threading.Event:
    """Announce the server to the hooks and start the drain thread; set the event to stop."""
    settings = shared.service.settings
    stop = threading.Event()
    threading.Thread(target=drain_loop, args=(shared, stop), name="memvault-drain", daemon=True).start()
    spool.write_serve_info(settings.state_dir, host, port, True, settings.live.prompt_timeout_s)
    return stop


def finish(shared: SharedService, stop: threading.Event) -> None:
    stop.set()
    spool.clear_serve_info(shared.service.settings.state_dir)

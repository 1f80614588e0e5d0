"""A warm server drains the spool: `memvault serve` runs this loop in a background thread.

The drainer started by a hook loads its own embedding model; a running server already has
one warm, so while it runs it announces itself in ``.memvault/serve.json`` (hooks then start
no drainer, and prompt-recall asks it over loopback) and drains what they spool. It wakes
when an entry lands in the spool folder (file-system notifications through watchfiles), so a
captured turn is drained at once, and looks every ``live.serve_drain_s`` as well: that check
is all there is where notifications do not work (some network file systems, a full inotify
table). Drains run through the shared service's ledger calls: a recall does not wait for one.
"""

import threading
import time
from collections.abc import Iterator
from pathlib import Path

from memvault.live import spool
from memvault.errors import MemvaultError
from memvault.servers import SharedService


ARMED_CHECK_MS = 200  # how soon after the watch is armed the spool is checked once more


def spool_wakeups(folder: Path, interval_s: float, stop: threading.Event) -> Iterator[None]:
    """One item when an entry is added to ``folder``, or ``interval_s`` passed without one,
    until ``stop`` is set; a plain timer when file-system notifications do not work there."""
    from watchfiles import Change, watch

    def added_entry(change: Change, path: str) -> bool:
        return change == Change.added and path.endswith(".json")  # not its .tmp, not removals

    try:
        # step: an event is handed over after 50 ms without another (capture writes one file).
        # The watch is armed inside the first wait, after the caller's check at start: an entry
        # landing in between raises no event, so the first timeout after arming (ARMED_CHECK_MS)
        # wakes the caller once more; later timeouts wake it only once ``interval_s`` has passed.
        armed, last = False, time.monotonic()
        for changes in watch(folder, watch_filter=added_entry, stop_event=stop, step=50, recursive=False,
                             rust_timeout=min(ARMED_CHECK_MS, int(interval_s * 1000)), yield_on_timeout=True,
                             raise_interrupt=False):
            now = time.monotonic()
            if changes or not armed or now - last >= interval_s:
                armed, last = True, now
                yield
        return
    except (OSError, RuntimeError) as exc:  # no inotify watch left, a file system without events
        spool.log_line(folder.parent, f"serve: no file-system notifications for the spool ({exc}); "
                                      f"checking it every {interval_s:g} s")
    while not stop.wait(interval_s):
        yield


def drain_loop(shared: SharedService, stop: threading.Event) -> None:
    """Drain whenever the spool holds entries (at start, on each new entry, on each tick),
    until ``stop`` is set."""
    from memvault.ops.drain import run_drainer

    settings = shared.service.settings
    folder = spool.spool_dir(settings.state_dir)
    folder.mkdir(parents=True, exist_ok=True)  # watched before the first capture creates it

    def drain() -> None:
        if stop.is_set() or not spool.pending(settings.state_dir):
            return
        try:
            shared.call_ledger(lambda s: run_drainer(s.settings, wait=False, embedder=s.embedder), embeds=True)
        except MemvaultError as exc:
            spool.log_line(settings.state_dir, f"serve: drain failed ({exc}); the spool is kept")

    drain()  # what was spooled before the server started
    for _ in spool_wakeups(folder, settings.live.serve_drain_s, stop):
        drain()


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

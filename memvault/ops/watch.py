"""`memvault watch`: the live path for sources without hooks.

It watches the configured sources (file-system notifications through watchfiles when it is
installed and works here, else a scan every ``live.watch_poll_s``), spools each changed
transcript like a hook would, and drains the spool itself with an embedder it keeps warm.
When the writer lock is busy (the nightly run) the entries wait and the next cycle drains
them. On start it spools one catch-up entry per configured source kind, so what changed
while it was not running is read too (incrementally, from the watermarks).
"""

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memvault.live import spool
from memvault.errors import ConfigError
from memvault.ops.admin_results import DrainTotals
from memvault.config.settings import Settings
from memvault.stages.ingest import SUFFIXES, configured_roots, discover


def snapshot(roots: list[tuple[str, Path]]) -> dict[Path, tuple[int, float]]:
    """(size, mtime) of every transcript file under ``roots``."""
    files, _ = discover(roots)
    out: dict[Path, tuple[int, float]] = {}
    for _, path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        out[path] = (st.st_size, st.st_mtime)
    return out


def poll_changes(roots: list[tuple[str, Path]], interval_s: float, stop: threading.Event) -> Iterator[set[Path]]:
    """Sets of files created or changed since the previous scan (empty sets on quiet cycles)."""
    seen = snapshot(roots)
    while not stop.wait(interval_s):
        now = snapshot(roots)
        yield {p for p, sig in now.items() if seen.get(p) != sig}
        seen = now


def notify_changes(roots: list[tuple[str, Path]], interval_s: float, stop: threading.Event) -> Iterator[set[Path]]:
    """Like ``poll_changes``, from watchfiles' notifications (raises ImportError without it)."""
    from watchfiles import watch as wf_watch

    folders = [str(p if p.is_dir() else p.parent) for _, p in roots if p.exists()]
    if not folders:
        raise ConfigError("none of the configured sources exists — check the paths in memvault.toml")
    for changes in wf_watch(*folders, stop_event=stop, yield_on_timeout=True, rust_timeout=int(interval_s * 1000)):
        yield {Path(p) for _, p in changes}


def kind_of(path: Path, roots: list[tuple[str, Path]]) -> str | None:
    """The configured kind of the source that holds ``path`` (None: not a transcript of ours)."""
    if path.suffix not in SUFFIXES:
        return None
    for kind, root in roots:
        if path == root or root in path.parents:
            return kind
    return None


def watch(settings: Settings, stop: threading.Event | None = None, poll: bool = False, embedder: Any = None,
          on_cycle: Callable[[DrainTotals], None] | None = None, max_cycles: int | None = None) -> int:
    """Watch until ``stop`` is set (or ``max_cycles`` change sets were handled); returns the
    number of drains. ``on_cycle`` receives each drain's totals (the CLI prints them)."""
    from memvault.ops.drain import run_drainer

    roots = configured_roots(settings)
    if not roots:
        raise ConfigError("no sources configured — add [[sources]] to memvault.toml (docs/configuration.md), "
                          "or use hooks (`memvault agent-setup claude-code`)")
    stop = stop or threading.Event()
    if embedder is None:
        from memvault.embeddings.select import embedder_for

        embedder = embedder_for(settings)
    for kind in sorted({k for k, _ in roots}):
        spool.append(settings.state_dir, {"op": "sources", "source": kind, "event": "watch-start"})
    interval = settings.live.watch_poll_s
    changes: Iterator[set[Path]]
    if poll:
        changes = poll_changes(roots, interval, stop)
    else:
        try:
            changes = notify_changes(roots, interval, stop)
        except ImportError:
            changes = poll_changes(roots, interval, stop)
    drains = cycles = 0
    pending = True  # the catch-up entries
    for changed in changes:
        for path in sorted(changed):
            source_kind = kind_of(path, roots)
            if source_kind is not None and path.is_file():
                spool.append(settings.state_dir, {"op": "transcript", "source": source_kind, "path": str(path),
                                                  "event": "watch"})
                pending = True
        if pending:
            totals = run_drainer(settings, wait=False, embedder=embedder)
            drains += totals["drains"]
            pending = bool(spool.pending(settings.state_dir))
            if on_cycle is not None and totals["drains"]:
                on_cycle(totals)
        cycles += 1 if changed else 0
        if stop.is_set() or (max_cycles is not None and cycles >= max_cycles):
            break
    return drains

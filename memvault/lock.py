"""The writer lock: one process at a time writes the ledger and the vault.

An advisory ``flock`` on ``.memvault/writer.lock`` taken through filelock (which polls until
the timeout); the kernel drops it when the holder dies (even on kill -9), so a crashed run
never leaves a stale lock behind. The file records who holds it — pid, command, since — so
the error can name the process.
"""

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from memvault.errors import LockedError
from memvault.files import owner_only_umask

LOCK_NAME = "writer.lock"
POLL_S = 0.1


def _lock(path: Path) -> FileLock:
    # A new lock object each time, not a per-path singleton, and shared by the threads of one
    # holder: a second writer in this process waits on the file just like another process.
    return FileLock(str(path), thread_local=False)


def _note(path: Path) -> dict[str, Any]:
    """The holder's note (pid, command, since); empty when it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def holder(state_dir: Path) -> dict[str, Any] | None:
    """Who holds the lock right now, or None when nobody does."""
    path = state_dir / LOCK_NAME
    if not path.exists():
        return None
    probe = _lock(path)
    try:
        probe.acquire(blocking=False)
    except Timeout:
        return _note(path)
    probe.release()
    return None


def locked_message(state_dir: Path, info: dict[str, Any]) -> str:
    """The error a writer gives when another process holds the lock."""
    return (f"another memvault process (pid {info.get('pid', '?')}, {info.get('command', '?')}, "
            f"since {info.get('since', '?')}) is writing to {state_dir.parent} — wait for it to finish and try again")


def wait_until_free(state_dir: Path, timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for nobody to hold the lock, without taking it; LockedError if still held.

    For a caller that will take the lock later in the same process but wants to fail before
    costly set-up (`memvault run` checks this before it starts a Prefect server).
    """
    deadline = time.monotonic() + timeout_s
    while (info := holder(state_dir)) is not None:
        if time.monotonic() >= deadline:
            raise LockedError(locked_message(state_dir, info))
        time.sleep(POLL_S)


DRAIN_COMMAND = "memvault drain"  # the live drainer's note: a run waits for it rather than fail


def wait_for_drainer(state_dir: Path, limit_s: float, report: Callable[[str], None] | None = None,
                     every_s: float = 10.0) -> None:
    """While the live drainer holds the lock (it ends by itself once the spool is stored),
    wait for it — up to ``limit_s`` — telling ``report`` at once and every ``every_s`` seconds.

    A run started by a person or a schedule right after a capture would otherwise fail with
    LockedError after ``lock_timeout_s``, though the drainer is only a few seconds from done.
    """
    start = time.monotonic()
    told = -every_s
    while (info := holder(state_dir)) is not None and info.get("command") == DRAIN_COMMAND:
        waited = time.monotonic() - start
        if waited >= limit_s:
            return  # the caller's own lock wait then names the holder
        if report is not None and waited - told >= every_s:
            report(f"waiting for the live drainer (pid {info.get('pid', '?')}, since {info.get('since', '?')}) "
                   f"to store what hooks captured … {waited:.0f} s")
            told = waited
        time.sleep(POLL_S)


@contextmanager
def writer_lock(state_dir: Path, command: str, timeout_s: float = 5.0) -> Iterator[None]:
    """Hold the writer lock for the duration of the block; wait up to ``timeout_s``."""
    owner_only_umask()  # every writer (CLI, flow, MCP, drainer) creates owner-only files
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / LOCK_NAME
    lock = _lock(path)
    try:
        lock.acquire(timeout=timeout_s, poll_interval=POLL_S)
    except Timeout:
        raise LockedError(locked_message(state_dir, _note(path))) from None
    try:
        # The note goes into the locked file itself (same inode: filelock keeps the file on
        # release), so a waiter reads it without any second file to clean up.
        path.write_text(json.dumps({
            "pid": os.getpid(),
            "command": command or " ".join(sys.argv),
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }), encoding="utf-8")
        yield
    finally:
        lock.release()

"""The writer lock: one process at a time writes the ledger and the vault.

An advisory ``flock`` on ``.memvault/writer.lock``; the kernel drops it when the holder
dies (even on kill -9), so a crashed run never leaves a stale lock behind. The file
records who holds it so the error can name the process.
"""

import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memvault.errors import LockedError

LOCK_NAME = "writer.lock"


def holder(state_dir: Path) -> dict[str, Any] | None:
    """Who holds the lock right now, or None when nobody does."""
    path = state_dir / LOCK_NAME
    if not path.exists():
        return None
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            try:
                note: dict[str, Any] = json.loads(fh.read() or "{}")
                return note
            except json.JSONDecodeError:
                return {}
        fcntl.flock(fh, fcntl.LOCK_UN)
    return None


@contextmanager
def writer_lock(state_dir: Path, command: str, timeout_s: float = 5.0) -> Iterator[None]:
    """Hold the writer lock for the duration of the block; wait up to ``timeout_s``."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / LOCK_NAME
    fh = open(path, "a+")
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    fh.seek(0)
                    try:
                        info = json.loads(fh.read() or "{}")
                    except json.JSONDecodeError:
                        info = {}
                    raise LockedError(
                        f"another memvault process (pid {info.get('pid', '?')}, "
                        f"{info.get('command', '?')}, since {info.get('since', '?')}) is writing "
                        f"to {state_dir.parent} — wait for it to finish and try again"
                    ) from None
                time.sleep(0.1)
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({
            "pid": os.getpid(),
            "command": command or " ".join(sys.argv),
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }))
        fh.flush()
        yield
    finally:
        try:
            fcntl.flock(fh, fcntl.LOCK_UN)
        finally:
            fh.close()

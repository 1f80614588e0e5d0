"""The live path's queue: `.memvault/spool/`, one small JSON file per event.

A hook (`memvault capture`) must return at once and never touch the ledger or the index,
so it only records "this transcript changed" here; a drainer (`memvault drain`, started
detached by capture, or a running `memvault serve` / `memvault watch`) ingests and indexes
what the entries name, and removes an entry only after that work has committed. Writing an
entry is one file created and renamed into place (a reader never sees half an entry); the
standard library only, so the hook's import graph stays tiny.

An entry the drainer cannot use (unreadable, refused, or failing ``MAX_ATTEMPTS`` drains) is
moved to ``spool/quarantine/`` with the reason in ``live.log``: never retried forever.

``drain.lock`` (an advisory ``flock``, dropped by the kernel when its holder dies) says
whether a drainer runs; ``serve.json`` names a running `memvault serve` (pid and port).
"""

import fcntl
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memvault.files import atomic_write_text

SPOOL = "spool"
DRAIN_LOCK = "drain.lock"
SERVE_INFO = "serve.json"
LIVE_LOG = "live.log"


def spool_dir(state_dir: Path) -> Path:
    return state_dir / SPOOL


def append(state_dir: Path, entry: Mapping[str, object]) -> Path:
    """Add ``entry`` to the spool (atomically: written aside, then renamed); returns its file."""
    folder = spool_dir(state_dir)
    folder.mkdir(parents=True, exist_ok=True)
    # Names sort in arrival order; pid and a counter keep two writers in one nanosecond apart.
    name = f"{time.time_ns():020d}-{os.getpid()}-{next(_COUNTER):04d}"
    final = folder / f"{name}.json"
    # No fsync, as before: the hook path stays cheap; the rename keeps the entry whole.
    atomic_write_text(final, json.dumps({**entry, "at": time.time()}, ensure_ascii=False), sync=False)
    return final


def _counter() -> Any:
    n = 0
    while True:
        n += 1
        yield n % 10_000


_COUNTER = _counter()


def entries(state_dir: Path) -> list[tuple[Path, dict[str, Any] | None]]:
    """Every spooled entry, oldest first; an unreadable one comes with ``None`` (the drainer
    logs and removes it: it can never become readable)."""
    folder = spool_dir(state_dir)
    if not folder.is_dir():
        return []
    out: list[tuple[Path, dict[str, Any] | None]] = []
    for path in sorted(folder.glob("*.json")):
        if path.name == ATTEMPTS:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue  # another drainer removed it meanwhile
        except (OSError, ValueError):
            data = None
        out.append((path, data if isinstance(data, dict) else None))
    return out


def pending(state_dir: Path) -> int:
    """How many entries wait (a cheap directory listing)."""
    folder = spool_dir(state_dir)
    return sum(1 for p in folder.glob("*.json") if p.name != ATTEMPTS) if folder.is_dir() else 0


QUARANTINE = "quarantine"
ATTEMPTS = "attempts.json"
MAX_ATTEMPTS = 3  # drains an entry may fail before it is set aside


def quarantine(state_dir: Path, path: Path, reason: str) -> None:
    """Move the entry ``path`` aside to ``spool/quarantine/`` (never drained again, kept for a
    person to look at), with ``reason`` beside it; the drainer logs the reason to live.log."""
    folder = spool_dir(state_dir) / QUARANTINE
    folder.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(path, folder / path.name)
    except FileNotFoundError:
        return  # another drainer dealt with it
    (folder / f"{path.stem}.reason.txt").write_text(reason + "\n", encoding="utf-8")


def failed_attempts(state_dir: Path) -> dict[str, list[Any]]:
    """``{entry name: [failed drains, last error]}`` of entries whose drain failed."""
    try:
        data = json.loads((spool_dir(state_dir) / ATTEMPTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_failure(state_dir: Path, paths: list[Path], error: str) -> None:
    """Count one failed drain against each entry of ``paths`` (a later drain quarantines an
    entry after ``MAX_ATTEMPTS``, so one poisonous entry cannot jam the spool forever)."""
    counts = failed_attempts(state_dir)
    live = {p.name for p in spool_dir(state_dir).glob("*.json")}
    counts = {k: v for k, v in counts.items() if k in live}
    for path in paths:
        before = counts.get(path.name, [0, ""])
        counts[path.name] = [int(before[0]) + 1, error[:500]]
    tmp = spool_dir(state_dir) / f".{ATTEMPTS}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(counts), encoding="utf-8")
    os.replace(tmp, spool_dir(state_dir) / ATTEMPTS)


def remove(paths: list[Path]) -> None:
    for path in paths:
        try:
            path.unlink()
        except FileNotFoundError:
            pass


class DrainLock:
    """The drainer's own lock (not the writer lock): at most one drainer per home."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / DRAIN_LOCK
        self._fh: Any = None

    def acquire(self) -> bool:
        """Take the lock without waiting; False when another drainer holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Owner-only even in a process that never narrowed its umask (a test, a library caller).
        fh = os.fdopen(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600), "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            return False
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        self._fh = fh
        return True

    def release(self) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh, fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None


def drainer_running(state_dir: Path) -> bool:
    """True while some process holds ``drain.lock``."""
    lock = DrainLock(state_dir)
    if lock.acquire():
        lock.release()
        return False
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def serve_info(state_dir: Path) -> dict[str, Any] | None:
    """``{"pid", "host", "port", "drains"}`` of a running `memvault serve`, or None."""
    try:
        info = json.loads((state_dir / SERVE_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int) or not _alive(info["pid"]):
        return None
    return info


def write_serve_info(state_dir: Path, host: str, port: int, drains: bool, prompt_timeout_s: float) -> Path:
    """Announce this `memvault serve` to the hooks (they read it instead of the settings)."""
    path = state_dir / SERVE_INFO
    # A temp name of its own per writer: two servers starting at once never share one.
    atomic_write_text(path, json.dumps({"pid": os.getpid(), "host": host, "port": port, "drains": drains,
                                        "prompt_timeout_s": prompt_timeout_s}))
    return path


def clear_serve_info(state_dir: Path) -> None:
    info = serve_info(state_dir)
    if info is None or info.get("pid") == os.getpid():
        try:
            (state_dir / SERVE_INFO).unlink()
        except FileNotFoundError:
            pass


def log_line(state_dir: Path, message: str) -> None:
    """One line in ``.memvault/live.log`` (a hook must never print its trouble to the agent).

    The message is redacted (it may quote a path, a payload's key or an error that echoes a
    value) and kept on one line with control characters shown as escapes: the log is read in
    terminals, and a payload's ESC or newline must neither act there nor forge a log line.
    """
    from memvault.hygiene.redact import redact_message  # light: the rules are the standard library's re
    from memvault.hygiene.terminal import one_line

    message = one_line(redact_message(message))
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        with open(state_dir / LIVE_LOG, "a", encoding="utf-8") as fh:
            fh.write(f"{stamp}Z pid {os.getpid()}: {message}\n")
    except OSError:
        pass  # nowhere left to report to; the hook still exits 0

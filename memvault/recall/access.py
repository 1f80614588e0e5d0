"""The access side log: recall appends the ids it returned; the index stage folds the counts in.

A query never writes the node index (that would make a LanceDB version per query) and never
touches the ledger. Appenders and the folder coordinate with ``flock`` on a lock file beside
the log (``access.log.lock``), so no append is lost and none waits long:

- an appender holds the lock shared while it opens the log and writes its line;
- the folder holds it exclusively only while it renames the log aside, so every append to
  the renamed file has finished and none can start on it; it then reads and applies the
  renamed file, and deletes it only after the counts are applied. A fold that crashed
  leaves the renamed file, which the next fold takes first.
"""

import fcntl
import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)
ACCESS_LOG = "access.log"
FOLDING_SUFFIX = ".folding"
LOCK_SUFFIX = ".lock"


@contextmanager
def _log_lock(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path.with_name(path.name + LOCK_SUFFIX), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # releases the lock


def append_access(path: Path, ids: list[str]) -> None:
    """Append one line of node ids to the log at ``path`` (safe against a concurrent fold).

    Never raises for a write that fails (a full disk, a read-only home): the counts only nudge
    ranking, and a recall must not fail over them — the line is dropped with a warning.
    """
    if not ids:
        return
    line = (json.dumps({"ids": ids}) + "\n").encode()
    try:
        with _log_lock(path, fcntl.LOCK_SH):
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
    except OSError as exc:
        log.warning("recall's access counts not recorded (%s: %s); the answer is unaffected", path, exc.strerror or exc)


def read_counts(path: Path) -> tuple[Counter[str], int]:
    """Access counts in a log file, and how many malformed lines were skipped."""
    counts: Counter[str] = Counter()
    bad = 0
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not raw.strip():
            continue
        try:
            ids = json.loads(raw)["ids"]
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        counts.update(str(i) for i in ids if isinstance(i, str))
    return counts, bad


def fold_access(path: Path, apply: Callable[[dict[str, int]], None]) -> dict[str, int]:
    """Move the log aside, hand its counts to ``apply``, then delete it.

    Returns ``{"nodes": …, "accesses": …, "malformed": …}``. If ``apply`` raises, the
    renamed file stays and the next fold retries it (counts are applied at most once per
    successful fold, at least once overall).
    """
    folding = path.with_name(path.name + FOLDING_SUFFIX)
    if not folding.exists():
        with _log_lock(path, fcntl.LOCK_EX):  # appends in flight finish first; new ones wait
            try:
                os.replace(path, folding)
            except FileNotFoundError:
                return {"nodes": 0, "accesses": 0, "malformed": 0}
    counts, bad = read_counts(folding)
    if counts:
        apply(dict(counts))
    folding.unlink()
    return {"nodes": len(counts), "accesses": sum(counts.values()), "malformed": bad}

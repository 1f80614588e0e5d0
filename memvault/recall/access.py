"""The access side log: recall appends the ids it returned; the index stage folds the counts in.

A query never writes the node index (that would make a LanceDB version per query) and never
touches the ledger. Appenders and the folder coordinate with ``flock``, so no append is lost:

- an appender opens the log, takes a shared lock, and checks that the file it holds is
  still the one at the path (the folder may have renamed it meanwhile); if not, it retries
  on the new file;
- the folder renames the log aside, takes an exclusive lock on the renamed file (waiting
  for appends in flight), then reads and applies it, and deletes it only after the counts
  are applied. A fold that crashed leaves the renamed file, which the next fold takes first.
"""

import fcntl
import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ACCESS_LOG = "access.log"
FOLDING_SUFFIX = ".folding"


def append_access(path: Path, ids: list[str]) -> None:
    """Append one line of node ids to the log at ``path`` (safe against a concurrent fold)."""
    if not ids:
        return
    line = (json.dumps({"ids": ids}) + "\n").encode()
    for _ in range(5):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                continue  # renamed away between open and lock: write to a fresh log
            held = os.fstat(fd)
            if (held.st_ino, held.st_dev) != (current.st_ino, current.st_dev):
                continue
            os.write(fd, line)
            return
        finally:
            os.close(fd)
    raise OSError(f"could not append to {path}: it keeps being replaced — is a fold looping?")


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
        try:
            os.replace(path, folding)
        except FileNotFoundError:
            return {"nodes": 0, "accesses": 0, "malformed": 0}
    fd = os.open(folding, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # appends that opened the old file finish first
        counts, bad = read_counts(folding)
    finally:
        os.close(fd)
    if counts:
        apply(dict(counts))
    folding.unlink()
    return {"nodes": len(counts), "accesses": sum(counts.values()), "malformed": bad}

"""Atomic file writes: a temp file in the same folder, fsync, then rename over the target.

The one place the write-aside-then-replace dance lives: readers of the target see the old
file or the new one, never half of one, and a failed write leaves no temp file behind.
"""

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: Path, suffix: str = ".tmp", sync: bool = True) -> Iterator[Path]:
    """A temp path beside ``path`` for a writer that needs a file name (numpy, SQLite, a
    stream); when the block ends without error it is fsynced and replaces ``path``, else it
    is removed. ``suffix`` keeps an extension a writer insists on (``np.save`` adds ``.npy``);
    ``sync=False`` skips the fsync where a hook must stay cheap (a spool entry: the rename
    alone already keeps readers from seeing half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if sync:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: Path, data: bytes, sync: bool = True) -> None:
    """Write ``data`` to ``path`` so that readers see the old or the new file, never half."""
    with atomic_path(path, sync=sync) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: Path, text: str, encoding: str = "utf-8", sync: bool = True) -> None:
    """Write ``text`` to ``path`` (``\\n`` line ends) so that readers see the old or the new file, never half."""
    atomic_write_bytes(path, text.encode(encoding), sync)

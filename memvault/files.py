"""Files of a memory home: atomic writes (a temp file in the same folder, fsync, then rename over
the target: readers see the old file or the new one, never half of one, and a failed write leaves
no temp file behind) and owner-only modes (the umask every writer runs under, the check `status`
makes and the fix `init --fix-permissions` applies)."""

import os
import stat
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
    import tempfile  # shutil, random, bz2, lzma: 4 ms every agent hook would pay at import

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


# Owner-only: no bit for the group or other accounts. The memory holds whole conversations,
# so every folder and file memvault makes in a home is 0700/0600 (git's read-only objects 0400).
OWNER_ONLY_UMASK = 0o077


def owner_only_umask() -> None:
    """Narrow this process's umask so that what it creates — and what its DuckDB, LanceDB,
    Prefect and git children create — is owner-only, whatever umask the user runs with.

    Only ever narrows (a stricter umask stays); called by every entry point that writes a home.
    """
    old = os.umask(OWNER_ONLY_UMASK)
    os.umask(old | OWNER_ONLY_UMASK)


def wide_paths(root: Path, limit: int | None = None) -> list[Path]:
    """``root`` and the folders and files under it that another account may read or enter
    (any group or other bit), symlinks not followed; at most ``limit`` of them."""
    found: list[Path] = []

    def visit(path: Path) -> bool:
        try:
            mode = path.lstat().st_mode
        except OSError:
            return True  # gone meanwhile
        if stat.S_ISLNK(mode):
            return True
        if mode & 0o077:
            found.append(path)
        return limit is None or len(found) < limit

    if not root.exists() or not visit(root):
        return found
    for folder, dirs, files in os.walk(root, onerror=lambda _exc: None):
        for name in dirs + files:
            if not visit(Path(folder) / name):
                return found
    return found


def narrow_permissions(root: Path) -> list[Path]:
    """Make ``root`` and everything under it owner-only (folders 0700, files keep their owner
    bits: 0600, git's objects 0400); returns the paths that changed."""
    changed = wide_paths(root)
    for path in changed:
        mode = stat.S_IMODE(path.lstat().st_mode)
        owner = (mode & 0o700) | (0o700 if path.is_dir() else 0)
        os.chmod(path, owner)
    return changed


def storable_path(text: str) -> str:
    """A path as text that can be stored and printed: a file name that is not valid UTF-8 (a
    Latin-1 name from an old archive) keeps its odd bytes as ``\\xe9`` escapes instead of the
    lone surrogates Python decodes them to, which no UTF-8 store or terminal accepts."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")

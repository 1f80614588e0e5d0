"""Files of a memory home: atomic writes (a temp file in the same folder, fsync, then rename over
the target) and owner-only modes (the umask every writer runs under, the check `status` makes
and the fix `init --fix-permissions` applies)."""

import os
import stat
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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

"""`memvault backup DEST`: a consistent copy of the whole memory home.

Consistent because nothing writes while it copies: it holds the writer lock (a nightly run
waits or fails with a clear message), checkpoints the ledger so the DuckDB file holds every
committed row (no WAL left behind), and copies the tree — vault, `.git`, `.memvault` (ledger,
node index, run reports). The copy is built under a temporary name beside DEST and renamed
into place, so an interrupted backup never looks like a complete one.
"""

import os
import shutil
from pathlib import Path
from typing import Any

from memvault.errors import UsageError
from memvault.lock import LOCK_NAME
from memvault.ops.home import require_home
from memvault.ops.session import writing
from memvault.settings import Settings
from stores.location import index_uri, inside_home


def check_destination(home: Path, dest: Path) -> Path:
    """DEST resolved; refuses the home itself, a folder inside it, or a non-empty folder."""
    home, dest = home.resolve(), dest.expanduser().resolve()
    if dest == home or home in dest.parents:
        raise UsageError(f"backup destination {dest} is inside the memory home {home} — choose a folder outside it")
    if dest in home.parents:
        raise UsageError(f"backup destination {dest} contains the memory home — choose a new, empty folder")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UsageError(f"backup destination {dest} exists and is not empty — choose a new folder")
    return dest


def backup_home(settings: Settings, dest: Path) -> dict[str, Any]:
    """Copy the home to ``dest`` under the writer lock; returns what was copied."""
    require_home(settings.home)
    dest = check_destination(settings.home, dest)
    with writing(settings, f"memvault backup {dest}") as session:
        session.checkpoint_ledger()  # the file alone now holds every committed row
        partial = dest.with_name(f".{dest.name}.partial-{os.getpid()}")
        if partial.exists():
            shutil.rmtree(partial)
        dest.parent.mkdir(parents=True, exist_ok=True)
        # The lock file belongs to the running home, not to the copy.
        shutil.copytree(settings.home, partial, symlinks=True, ignore=shutil.ignore_patterns(LOCK_NAME))
        if dest.exists():
            dest.rmdir()  # checked empty above
        partial.rename(dest)
    files = [p for p in dest.rglob("*") if p.is_file()]
    uri = index_uri(settings)
    inside = inside_home(settings, uri)
    return {"home": str(settings.home), "dest": str(dest), "files": len(files),
            "bytes": sum(p.stat().st_size for p in files),
            "index_copied": inside,
            "note": None if inside else (f"the node index lives at {uri}, outside the home, and was not copied; "
                                         "`memvault reindex` rebuilds it from the copy")}

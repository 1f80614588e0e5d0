"""`memvault backup DEST`: a consistent copy of the whole memory home.

Consistent because nothing writes while it copies: it holds the writer lock (a nightly run
waits or fails with a clear message), checkpoints the ledger so the DuckDB file holds every
committed row (no WAL left behind), and copies the tree — vault, `.git`, `.memvault` (ledger,
node index, run reports). The copy is built under a temporary name beside DEST and renamed
into place, so an interrupted backup never looks like a complete one. Where the last backup
went is recorded in `.memvault/last-backup.json`, so a damaged-ledger error can point to it.

`memvault restore SRC` is the inverse for the ledger: from a backup folder (its
`.memvault/ledger.duckdb`) or a ledger file (a migration copy `ledger.duckdb.pre-vN.bak`), it
checks that the copy reads whole, moves the current ledger aside (never deleting it) and puts
the copy in its place, under the writer lock.
"""

import json
import os
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

from memvault.errors import UsageError
from memvault.files import atomic_write_text
from memvault.lock import LOCK_NAME
from memvault.ops.admin_results import BackupReport, RestoreReport
from memvault.ops.home import require_home
from memvault.ops.session import writing
from memvault.config.settings import Settings
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


def backup_home(settings: Settings, dest: Path) -> BackupReport:
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
        from stores.ledger import LAST_BACKUP

        atomic_write_text(settings.state_dir / LAST_BACKUP, json.dumps({"dest": str(dest), "time": time.time()}) + "\n")
    files = [p for p in dest.rglob("*") if p.is_file()]
    uri = index_uri(settings)
    inside = inside_home(settings, uri)
    return {"home": str(settings.home), "dest": str(dest), "files": len(files),
            "bytes": sum(p.stat().st_size for p in files),
            "index_copied": inside,
            "note": None if inside else (f"the node index lives at {uri}, outside the home, and was not copied; "
                                         "`memvault reindex` rebuilds it from the copy")}


def restore_source(settings: Settings, src: Path) -> Path:
    """The ledger file ``src`` names: a backup folder's `.memvault/ledger.duckdb`, or a file."""
    src = src.expanduser().resolve()
    name = settings.ledger_path.name
    candidate = src / ".memvault" / name if src.is_dir() else src
    if not candidate.is_file():
        raise UsageError(f"{src} is neither a ledger file nor a folder made by `memvault backup` (no .memvault/{name} "
                         f"in it) — give a backup folder or a copy such as {settings.ledger_path}.pre-v1.bak")
    if candidate == settings.ledger_path.resolve():
        raise UsageError(f"{candidate} is the ledger itself — give a backup folder or a migration copy (*.bak)")
    return candidate


def restore_ledger(settings: Settings, src: Path) -> RestoreReport:
    """Replace the ledger with the copy at ``src`` (see the module docstring); returns what happened.

    Refuses while another process holds the writer lock (a run, an ingest), and refuses a
    copy that is itself damaged before anything moves.
    """
    from stores.ledger import Ledger

    require_home(settings.home)
    candidate = restore_source(settings, src)
    with writing(settings, f"memvault restore {src}") as session:
        copy = Ledger(candidate, read_only=True)
        try:
            copy.verify()
        finally:
            copy.close()
        ledger = settings.ledger_path
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        aside = None
        if ledger.exists():
            aside = ledger.with_name(f"{ledger.name}.before-restore-{stamp}")
            os.replace(ledger, aside)
        wal = ledger.with_name(ledger.name + ".wal")
        if wal.exists():
            os.replace(wal, ledger.with_name(f"{ledger.name}.before-restore-{stamp}.wal"))
        partial = ledger.with_name(f".{ledger.name}.restoring")
        shutil.copy2(candidate, partial)
        os.replace(partial, ledger)
        # Opening it applies any newer migrations (copying the file aside first).
        counts = session.ledger.counts()
    return {"home": str(settings.home), "source": str(candidate), "kept_aside": str(aside) if aside else None,
            "conversations": counts.conversations, "messages": counts.messages, "chunks": counts.chunks,
            "buckets": counts.buckets,
            "note": "conversations ingested after this copy was made are read again from their transcript files "
                    "on the next run, where those files still exist; `memvault run` brings the index up to date"}

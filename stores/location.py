"""Where the node index lives: a folder of this machine or an object-store URI (``s3://…``),
and the live pointer that `memvault reindex` swaps.

Every question of that kind is answered here and nowhere else: whether a location is remote,
which index is live, where a rebuild goes, how big it is, and which replaced folders may go.

`memvault reindex` builds a new index beside the old one, then atomically rewrites
``.memvault/nodes.current`` (a folder name relative to ``.memvault/``, or a full URI), so a
reader resolves either the old complete index or the new complete one, never half of one.
"""

import shutil
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from memvault.files import atomic_write_text
from memvault.config.settings import DEFAULT_INDEX, INDEX_EMBEDDER_FILE, INDEX_POINTER, Settings

# Re-exported: the names of the pointer a reindex swaps and of the default index folder.
__all__ = ["DEFAULT_INDEX", "INDEX_POINTER"]


def is_remote(uri: str) -> bool:
    """A URI (``s3://…``, ``file://…``) rather than a folder path of this machine."""
    return "://" in uri


def local_path(uri: str) -> Path | None:
    """The folder of a local index; None for a remote one."""
    return None if is_remote(uri) else Path(uri)


def configured_index_uri(settings: Settings) -> str:
    """``index.uri`` from the settings, else ``<home>/.memvault/nodes.lance``."""
    return settings.index.uri or str(settings.state_dir / DEFAULT_INDEX)


def index_uri(settings: Settings) -> str:
    """The live index: the one the pointer names, else the configured location."""
    pointer = settings.state_dir / INDEX_POINTER
    current = pointer.read_text(encoding="utf-8").strip() if pointer.is_file() else ""
    if current:
        return current if is_remote(current) else str(settings.state_dir / current)
    return configured_index_uri(settings)


def next_index_uri(settings: Settings) -> str:
    """A fresh location beside the configured one (never the live one), for a rebuild."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    base = settings.index.uri
    if base and is_remote(base):
        base = base.rstrip("/")
        return f"{base[:-6]}-{stamp}.lance" if base.endswith(".lance") else f"{base}-{stamp}"
    parent = Path(base).expanduser().resolve().parent if base else settings.state_dir
    return str(parent / f"nodes-{stamp}.lance")


def set_live_index(settings: Settings, uri: str) -> None:
    """Point every reader at ``uri`` with one atomic file replace.

    A folder inside ``.memvault/`` is stored by its name, so a copied home stays portable.
    """
    state = settings.state_dir.resolve()
    local = local_path(uri)
    resolved = local.resolve() if local is not None else None
    value = resolved.name if resolved is not None and resolved.parent == state else uri
    atomic_write_text(settings.state_dir / INDEX_POINTER, value + "\n")


def record_index_embedder(settings: Settings, model: str) -> None:
    """Say beside the live index that an index of this version's making, by ``model``, is (or is
    about to be) live: a home without it was indexed by the fp32 MiniLM and keeps that embedder
    until a reindex (memvault.config.settings.keep_index_embedder)."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(settings.state_dir / INDEX_EMBEDDER_FILE, model + "\n")


def index_bytes(uri: str) -> int | None:
    """Bytes on disk of a local index (0 when it does not exist); None for object storage."""
    root = local_path(uri)
    if root is None:
        return None
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0


def inside_home(settings: Settings, uri: str) -> bool:
    """Whether a copy of the home (`memvault backup`) carries this index."""
    local = local_path(uri)
    return local is not None and settings.home.resolve() in local.resolve().parents


def remove_local_index(uri: str) -> None:
    """Delete a half-built local index folder (a remote one is left to its store's lifecycle)."""
    local = local_path(uri)
    if local is not None and local.exists():
        shutil.rmtree(local)


def retire_replaced_indexes(settings: Settings, older_than_s: float) -> list[str]:
    """Delete the index folders in ``.memvault/`` that a reindex replaced, once older than
    ``older_than_s``; returns their names. The live index is never touched."""
    live = local_path(index_uri(settings))
    current = live.resolve() if live is not None else None
    cutoff = time.time() - older_than_s
    removed = []
    for path in sorted(settings.state_dir.glob("nodes*.lance")):
        if path.is_dir() and path.resolve() != current and path.stat().st_mtime < cutoff:
            shutil.rmtree(path)
            removed.append(path.name)
    return removed

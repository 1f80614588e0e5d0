"""reindex: rebuild the node index from the ledger and the vault into a new location, then swap.

Used after the embedding model changes (vectors of two models are never mixed) or when the
index is lost. The old index keeps serving recall while the new one is built beside it; when
the new one is complete, one atomic write of `.memvault/nodes.current` makes it the live
index (`Settings.index_uri` reads that pointer). The old directory stays until `memvault
maintenance` retires it past the cleanup margin, so a reader that opened it keeps working.

Reuses the index stage's pure functions (rows_for, embed_rows) and maintenance's exact edge
pass; the caller holds the writer lock, so no run changes the ledger or vault meanwhile.
"""

import shutil
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memvault.ids import short_ids
from memvault.ops.maintenance import rebuild_edges, set_live_index
from memvault.markdown.tree import article_nodes
from memvault.progress import Progress
from memvault.settings import Settings
from stores.ledger import Ledger
from stores.nodes import NodeIndex
from stores.vault import Vault
from tasks.index import conversation_rows, embed_rows, rows_for

BATCH = 256


def next_index_uri(settings: Settings) -> str:
    """A fresh location beside the configured one (never the live one)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
    base = settings.index.uri
    if base and "://" in base:
        base = base.rstrip("/")
        return f"{base[:-6]}-{stamp}.lance" if base.endswith(".lance") else f"{base}-{stamp}"
    parent = Path(base).expanduser().resolve().parent if base else settings.state_dir
    return str(parent / f"nodes-{stamp}.lance")


def all_rows(ledger: Ledger, vault: Vault, context_turns: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of every article and every conversation not ignored; and those conversations' ids."""
    rows: list[dict[str, Any]] = []
    for path in vault.list_articles():
        rows += rows_for(path.stem, "article", article_nodes(path.stem, path.read_text(encoding="utf-8")))
    ignored = set(ledger.ignored_conversation_ids())
    cids = [c for c in ledger.conversation_ids() if c not in ignored]
    shorts = short_ids(ledger.conversation_ids())
    for cid in cids:
        rows += conversation_rows(ledger, cid, shorts[cid], context_turns)
    return rows, cids


def rebuild_index(settings: Settings, ledger: Ledger, vault: Vault, embedder: Any,
                  progress: Progress | None = None) -> dict[str, Any]:
    """Build a complete new index, then make it the live one; returns counts and both locations."""
    old = settings.index_uri
    rows, cids = all_rows(ledger, vault, settings.index.context_turns)
    uri = next_index_uri(settings)
    try:
        index = NodeIndex(uri, embedder.name, embedder.dim, create=True)
        if progress:
            progress.begin(len(rows))
        pending = 0
        for start in range(0, len(rows), BATCH):
            part = rows[start:start + BATCH]
            pending += embed_rows(embedder, part, embedder.dim)
            index.upsert(part)
            if progress:
                progress.advance(len(part))
        edges = rebuild_edges(index, settings.index.similar_threshold, settings.index.max_similar)
        if rows:
            # The same indexes the index stage keeps: full text, BTrees, and ANN past the threshold.
            index.ensure_indexes(settings.index.ann_threshold)
    except BaseException:
        # The live index was never touched; drop the half-built one so it cannot be mistaken.
        if "://" not in uri and Path(uri).exists():
            shutil.rmtree(uri)
        raise
    set_live_index(settings, uri)
    ledger.mark_indexed(cids)
    if progress:
        progress.done()
    return {"old_index": old, "new_index": uri, "nodes": index.count(), "pending": pending,
            "edges": edges["edges_after"], "model": embedder.name}

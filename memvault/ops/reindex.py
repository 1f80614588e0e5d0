"""reindex: rebuild the node index from the ledger and the vault into a new location, then swap.

Used after the embedding model changes (vectors of two models are never mixed) or when the
index is lost. The old index keeps serving recall while the new one is built beside it; when
the new one is complete, one atomic write of `.memvault/nodes.current` makes it the live
index (stores/location.py reads and writes that pointer). The old directory stays until
`memvault maintenance` retires it past the cleanup margin, so a reader that opened it keeps
working.

Reuses the index stage's pure functions (rows_for, embed_rows) and maintenance's exact edge
pass; it holds the writer lock, so no run changes the ledger or vault meanwhile.
"""

from typing import Any

from memvault.embeddings import Embedder
from memvault.embeddings.select import embedder_for
from memvault.ids import short_ids
from memvault.markdown.tree import article_nodes
from memvault.ops.admin_results import ReindexStarted, Reindexed
from memvault.ops.maintenance import rebuild_edges
from memvault.ops.session import writing
from memvault.runs.progress import Progress
from memvault.config.settings import Settings, default_embeddings
from stores.ledger import Ledger
from stores.location import index_uri, next_index_uri, record_index_embedder, remove_local_index, set_live_index
from stores.nodes import NodeIndex
from stores.vector_cache import cached
from stores.vault import Vault
from memvault.stages.index_rows import conversation_rows, embed_rows, rows_for

BATCH = 256


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


REINDEX_LOG = "reindex.log"


def spawn_reindex(settings: Settings) -> ReindexStarted:
    """Start `memvault reindex` detached (its own session, no terminal), logging to
    ``.memvault/reindex.log``; returns its pid and the log. Recall keeps using the old index
    meanwhile; the swap happens when the new one is complete, and a killed rebuild leaves
    the old one live."""
    import subprocess
    import sys

    log_path = settings.state_dir / REINDEX_LOG
    with open(log_path, "a", encoding="utf-8") as log:  # the child inherits it
        proc = subprocess.Popen([sys.executable, "-m", "memvault.cli", "--home", str(settings.home), "reindex"],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)
    return {"pid": proc.pid, "log": str(log_path)}


def rebuild_index(settings: Settings, embedder: Embedder | None = None, progress: Progress | None = None) -> Reindexed:
    """Under the writer lock, build a complete new index, then make it the live one; returns
    counts and both locations."""
    # A home kept on the fp32 MiniLM (indexed before the int8 default) moves to the default here.
    settings = default_embeddings(settings)
    # Behind the home's vector cache: a reindex with an embedder used before re-embeds
    # only what it has never seen.
    embedder = embedder or cached(embedder_for(settings), settings.state_dir)
    with writing(settings, "memvault reindex") as session:
        return _rebuild(settings, session.ledger, session.vault, embedder, progress)


def _rebuild(settings: Settings, ledger: Ledger, vault: Vault, embedder: Embedder,
             progress: Progress | None) -> Reindexed:
    old = index_uri(settings)
    rows, cids = all_rows(ledger, vault, settings.index.context_turns)
    uri = next_index_uri(settings)
    try:
        index = NodeIndex.open_or_create(settings, uri, embedder)
        if progress:
            progress.begin(len(rows))
        pending = 0
        for start in range(0, len(rows), BATCH):
            part = rows[start:start + BATCH]
            pending += embed_rows(embedder, part, embedder.dim, sentences=settings.index.sentence_vectors)
            index.upsert(part)
            if progress:
                progress.advance(len(part))
        edges = rebuild_edges(index, settings.index.similar_threshold, settings.index.max_similar)
        if rows:
            # The same indexes the index stage keeps: full text, BTrees, and ANN past the threshold.
            index.ensure_indexes(settings.index.ann_threshold)
    except BaseException:
        # The live index was never touched; drop the half-built one so it cannot be mistaken.
        remove_local_index(uri)
        raise
    set_live_index(settings, uri)
    record_index_embedder(settings, index.model_name)
    ledger.mark_indexed(cids)
    if progress:
        progress.done()
    return {"old_index": old, "new_index": uri, "nodes": index.count(), "pending": pending,
            "edges": edges["edges_after"], "model": embedder.name}

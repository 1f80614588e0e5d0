"""index: new or changed articles and conversations → nodes, vectors and `similar` edges.

Incremental by content hash: a node whose text did not change is never re-embedded; nodes
of removed sections (and of removed articles) are deleted. Each new node gets up to three
`similar` edges from bounded candidates — the write's other nodes, the most recent nodes and
each node's nearest nodes by vector (one batched search) — never a scan of every node. A
failed embedding batch leaves its nodes `pending` (text stored, searchable by full text)
for the next run to embed.

An index that lost data (its folder deleted, restored from an older copy) heals: every
conversation the ledger marks indexed must have its document in the index; those that do
not have their marks cleared and are rebuilt in the same run (`conversations_recovered`).
"""
import logging
from typing import Any, ClassVar


from memvault.errors import EmbedderMismatchError
from memvault.failpoints import failpoint
from memvault.ids import conv_ref, node_id, short_ids
from memvault.markdown.tree import article_nodes
from memvault.runs.progress import current
from memvault.recall.access import ACCESS_LOG, fold_access
from memvault.stages.context import StageContext
from memvault.stages.result import StageResult
from memvault.stages.index_rows import (ARTICLE_IMPORTANCE, CONVERSATION_IMPORTANCE, context_texts, conversation_rows, embed_rows,
                              kin, node_hash, replies, rows_for, similar_edges, sync_doc, write_index)

__all__ = ["ARTICLE_IMPORTANCE", "CONVERSATION_IMPORTANCE", "IndexResult", "context_texts", "conversation_rows",
           "embed_rows", "kin", "missing_conversations", "node_hash", "node_id", "replies", "rows_for",
           "run_index", "similar_edges", "sync_doc", "write_index"]

log = logging.getLogger(__name__)


def missing_conversations(indexed: list[str], docs: dict[str, str]) -> list[str]:
    """Conversations marked indexed in the ledger whose document the index does not hold
    (every indexed conversation has at least its root node)."""
    return [cid for cid in indexed if conv_ref(cid) not in docs]


class IndexResult(StageResult):
    """What index did: documents looked at, nodes written, deleted and left pending."""

    documents: int = 0
    nodes_written: int = 0
    nodes_deleted: int = 0
    pending: int = 0  # nodes whose embedding failed: zero vectors, retried next run
    embedded: int = 0
    nodes_total: int = 0
    conversations_recovered: int = 0  # marked indexed in the ledger but missing from the index
    accesses_folded: int = 0
    index_rebuilt: str | None = None  # why the index was created anew (a killed first creation), if it was
    omit_when_none: ClassVar[frozenset[str]] = frozenset({"index_rebuilt"})
    skipped: str | None = None  # why the index was left as it is (built by another embedder)


def run_index(ctx: StageContext) -> IndexResult:
    """Bring the node index up to date with the vault's articles and the changed conversations.

    Reads every article (parsed, cheap), the conversations changed since `indexed_at`, the
    pending nodes and recall's access log; writes nodes, vectors, `similar` edges and search
    indexes to LanceDB, then `indexed_at`. Unit of work: the run's one document batch;
    failpoint `index:1` fires after it is written, before the ledger is marked.
    Long because it is one sequence over the two kinds of document, then one write.
    """
    try:
        nodes = ctx.nodes
    except EmbedderMismatchError as exc:
        # Never mix vectors: the old index keeps serving recall as it is; the conversations
        # stay unmarked, so `memvault reindex` (or the run after it) indexes them.
        log.warning("index left as it is: %s", exc)
        return IndexResult(skipped=str(exc))
    ledger, settings = ctx.ledger, ctx.settings.index
    writes: list[dict[str, Any]] = []
    deletes: list[str] = []
    docs_seen = 0
    # Articles: every file is parsed (cheap); only changed nodes are embedded.
    articles = {p.stem: p for p in ctx.vault.list_articles()}
    for stem, path in articles.items():
        changed, gone = sync_doc(nodes, stem, rows_for(stem, "article", article_nodes(stem, path.read_text(encoding="utf-8"))))
        writes += changed
        deletes += gone
        docs_seen += 1
    have = nodes.docs()
    for doc, kind in have.items():
        if kind == "article" and doc not in articles:
            deletes += list(nodes.doc_hashes(doc))
    # The ledger's marks are only true while the index holds what they claim: a conversation
    # marked indexed but absent from the index (a deleted or older index) is indexed again.
    lost = missing_conversations(ledger.indexed_conversation_ids(), have)
    if lost:
        ledger.clear_indexed(lost)
        log.warning("the node index lacks %d conversation(s) the ledger marks indexed; rebuilding them", len(lost))
    # Conversations: only those changed since they were last indexed.
    todo = ledger.conversations_to_index()
    shorts = short_ids(ledger.conversation_ids())
    for cid in todo:
        changed, gone = sync_doc(nodes, conv_ref(cid), conversation_rows(ledger, cid, shorts[cid], settings.context_turns))
        writes += changed
        deletes += gone
        docs_seen += 1
    pending_ids = [i for i in nodes.pending_ids() if i not in {r["id"] for r in writes}]
    retry = nodes.get(pending_ids)
    for r in retry:
        r.pop("_distance", None)
    writes += retry
    failed = write_index(nodes, ctx.embedder, writes, deletes, settings, progress=current("index"))
    failpoint("index", 1)  # the run's one document batch is written; the ledger not yet marked
    ledger.mark_indexed(todo)
    # Recall's access side log: renamed aside, then folded, so appends meanwhile are kept.
    access = fold_access(ctx.settings.state_dir / ACCESS_LOG, nodes.add_access)
    log.info("indexed %d node(s), deleted %d, %d pending", len(writes), len(deletes), failed)
    if access["malformed"]:
        log.warning("access log: %d malformed line(s) skipped", access["malformed"])
    return IndexResult(documents=docs_seen, nodes_written=len(writes), nodes_deleted=len(deletes), pending=failed,
                       embedded=len(writes) - failed, nodes_total=nodes.count(), conversations_recovered=len(lost),
                       accesses_folded=access["accesses"], index_rebuilt=nodes.rebuilt)

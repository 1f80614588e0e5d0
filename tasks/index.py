"""index: new or changed articles and conversations → nodes, vectors and `similar` edges.

Incremental by content hash: a node whose text did not change is never re-embedded; nodes
of removed sections (and of removed articles) are deleted. Each new node gets up to three
`similar` edges from bounded candidates — the most recent nodes plus full-text neighbours —
never a scan of every node. A failed embedding batch leaves its nodes `pending` (text
stored, searchable by full text) for the next run to embed.
"""

import hashlib
from datetime import datetime
from typing import Any

import numpy as np
from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from memvault.ids import short_ids
from memvault.markdown.tree import TreeNode, article_nodes, conversation_nodes
from stores.nodes import NodeIndex, now_utc


def node_id(doc: str, path: str) -> str:
    return hashlib.sha256(f"{doc}\x1f{path}".encode()).hexdigest()[:32]


def node_hash(n: TreeNode) -> str:
    return hashlib.sha256(f"{n.kind}\x1f{n.title}\x1f{n.text}".encode()).hexdigest()


def _stable(path: str) -> str:
    """A conversation path without its `/conv:<short>` root, whose prefix may grow later."""
    return "/" + path.split("/", 2)[2] if path.startswith("/conv:") and path.count("/") > 1 else \
        ("/" if path.startswith("/conv:") else path)


def rows_for(doc: str, doc_kind: str, tree: list[TreeNode]) -> list[dict[str, Any]]:
    """Index rows for a document's tree; ids depend on the document key and a stable path."""
    now = now_utc()
    out = []
    for n in tree:
        created = n.timestamp if isinstance(n.timestamp, datetime) else now
        out.append({
            "id": node_id(doc, _stable(n.path)), "doc": doc, "doc_kind": doc_kind, "path": n.path,
            "parent": node_id(doc, _stable(n.parent)) if n.parent else None, "kind": n.kind, "title": n.title,
            "text": n.text, "ref": n.ref, "ord": n.order, "vector": None, "pending": True,
            "content_hash": node_hash(n), "created_at": created.replace(tzinfo=None), "updated_at": now,
            "importance": 0.5 if doc_kind == "article" else 0.3, "access": 0,
        })
    return out


def sync_doc(nodes: NodeIndex, doc: str, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows to (re)write and ids to delete so the index matches ``rows`` for ``doc``."""
    have = nodes.doc_hashes(doc)
    changed = [r for r in rows if have.get(r["id"]) != r["content_hash"]]
    keep = {r["id"] for r in rows}
    return changed, [i for i in have if i not in keep]


def embed_rows(embedder: Any, rows: list[dict[str, Any]], dim: int, log: Any = None) -> int:
    """Fill vectors in place; a failed batch stays pending with a zero vector. Returns failures."""
    failed = 0
    batch = 256
    for start in range(0, len(rows), batch):
        part = rows[start:start + batch]
        try:
            vecs = embedder.embed([f"{r['title']}\n{r['text']}"[:2000] for r in part])
        except (RuntimeError, ValueError, OSError, MemoryError) as exc:
            failed += len(part)
            if log:
                log.warning("embedding batch failed (%s); %d node(s) left pending", exc, len(part))
            for r in part:
                r["vector"], r["pending"] = [0.0] * dim, True
            continue
        for r, v in zip(part, vecs):
            r["vector"], r["pending"] = v.astype(float).tolist(), False
    return failed


def similar_edges(nodes: NodeIndex, rows: list[dict[str, Any]], threshold: float, k: int,
                  recent: int, fts: int) -> list[tuple[str, str, float]]:
    """Up to ``k`` edges per new row, from recent nodes plus full-text neighbours."""
    pool = {r["id"]: np.asarray(r["vector"], dtype=np.float32) for r in nodes.recent(recent)}
    edges = []
    for r in rows:
        if r["pending"]:
            continue
        cands = dict(pool)
        for hit in nodes.fts_search(" ".join(r["text"].split()[:12]), fts):
            if not hit["pending"]:
                cands[hit["id"]] = np.asarray(hit["vector"], dtype=np.float32)
        v = np.asarray(r["vector"], dtype=np.float32)
        scored = sorted(((float(v @ w), i) for i, w in cands.items() if i != r["id"] and i != r["parent"]), reverse=True)
        edges.extend((r["id"], i, s) for s, i in scored[:k] if s >= threshold)
    return edges


def run_index(ctx: Any, log: Any = None) -> dict[str, Any]:
    nodes, ledger, settings = ctx.nodes, ctx.ledger, ctx.settings.index
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
    for doc, kind in nodes.docs().items():
        if kind == "article" and doc not in articles:
            deletes += list(nodes.doc_hashes(doc))
    # Conversations: only those changed since they were last indexed.
    todo = ledger.conversations_to_index()
    shorts = short_ids(ledger.conversation_ids())
    for cid in todo:
        conv = ledger.conversation(cid)
        msgs = [(m["native_id"], m["role"], m["text"], m["timestamp"]) for m in ledger.active_thread(cid)
                if not m["low_value"]]
        date = conv["started_at"].strftime("%Y-%m-%d") if conv["started_at"] else None
        tree = conversation_nodes(cid, shorts[cid], conv["title"] or "", date, conv["source"], msgs)
        changed, gone = sync_doc(nodes, f"conv:{cid}", rows_for(f"conv:{cid}", "conversation", tree))
        writes += changed
        deletes += gone
        docs_seen += 1
    pending_ids = [i for i in nodes.pending_ids() if i not in {r["id"] for r in writes}]
    retry = nodes.get(pending_ids)
    for r in retry:
        r.pop("_distance", None)
    writes += retry
    failed = embed_rows(ctx.embedder, writes, ctx.embedder.dim, log)
    if deletes:
        nodes.delete(deletes)
    if writes:
        nodes.upsert(writes)
        nodes.add_edges(similar_edges(nodes, writes, settings.similar_threshold, settings.max_similar,
                                      settings.recent_candidates, settings.fts_candidates))
    if writes or deletes:
        nodes.ensure_fts()
    ledger.mark_indexed(todo)
    if log:
        log.info("indexed %d node(s), deleted %d, %d pending", len(writes), len(deletes), failed)
    return {"documents": docs_seen, "nodes_written": len(writes), "nodes_deleted": len(deletes),
            "pending": failed, "embedded": len(writes) - failed, "nodes_total": nodes.count()}


@task(name="index", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def index(ctx: Any) -> dict[str, Any]:
    """Prefect task: bring the node index up to date with the vault and the ledger."""
    return run_index(ctx, get_run_logger())

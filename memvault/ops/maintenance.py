"""Maintenance over the stores: compaction, a full edge rebuild, near-duplicate merging, age
tiers, retired index directories. Functions of open stores (a node index, or the writing
:class:`~memvault.ops.session.Session` whose lock they run under) and plain values; the
`maintenance` flow (flows/maintenance.py) opens the session and runs each as a task.

Every step keeps recall working while it runs: LanceDB writes are new versions (readers keep
the one they opened), old versions are deleted only past a margin, and the edge set is swapped
in one commit.
"""

import difflib
import re
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from memvault.ops.admin_results import Checkpointed, Compacted, EdgesRebuilt, Merged, Retired, Tiered
from memvault.ops.session import Session
from stores.location import retire_replaced_indexes
from stores.nodes import NodeIndex, now_utc


def compact(nodes: NodeIndex, margin_hours: float) -> Compacted:
    """LanceDB optimize: merge small files, fold new rows into indexes, drop versions past the margin."""
    return {"versions_left": nodes.optimize(timedelta(hours=margin_hours))}


def _matrix(table: Any) -> np.ndarray:
    flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.asarray(flat, dtype=np.float32).reshape(table.num_rows, -1)


def top_similar(vectors: np.ndarray, ids: list[str], parents: list[str | None], threshold: float, k: int,
                budget: int = 1 << 25) -> list[tuple[str, str, float]]:
    """Up to ``k`` edges per row to its most similar other rows (never itself or its parent).

    The O(N²) pass the nightly flow avoids, done as batched matrix products so memory stays
    near ``budget`` floats whatever N is.
    """
    n = len(ids)
    if n < 2 or k <= 0:
        return []
    position = {i: p for p, i in enumerate(ids)}
    rows_per_batch = max(1, budget // n)
    edges: list[tuple[str, str, float]] = []
    for start in range(0, n, rows_per_batch):
        sims = vectors[start:start + rows_per_batch] @ vectors.T
        for off in range(sims.shape[0]):
            row = sims[off]
            row[start + off] = -np.inf
            parent = parents[start + off]
            if parent in position:
                row[position[parent]] = -np.inf
            take = min(k, n - 1)
            best = np.argpartition(-row, take - 1)[:take]
            for j in sorted(best, key=lambda j: -row[j]):
                if row[j] >= threshold:
                    edges.append((ids[start + off], ids[j], float(row[j])))
    return edges


def rebuild_edges(nodes: NodeIndex, threshold: float, k: int) -> EdgesRebuilt:
    """Replace every `similar` edge by the exact top-``k`` over all nodes (one commit)."""
    table = nodes.vectors()
    before = len(nodes.all_edges())
    edges = top_similar(_matrix(table), table.column("id").to_pylist(), table.column("parent").to_pylist(),
                        threshold, k)
    nodes.replace_edges(edges)
    return {"edges_before": before, "edges_after": len(edges)}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip().lower()


def near_identical(a: str, b: str, ratio: float = 0.97) -> bool:
    """Text equal up to whitespace and case, or differing in a few characters."""
    a, b = _norm(a), _norm(b)
    if a == b:
        return True
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return matcher.real_quick_ratio() >= ratio and matcher.quick_ratio() >= ratio and matcher.ratio() >= ratio


def find_duplicates(table: Any, inner: set[str], similarity: float,
                    kinds: tuple[str, ...] = ("conversation",)) -> dict[str, str]:
    """Duplicate id → the id kept. Leaves only (a tree's inner nodes are never merged), same kind,
    cosine ≥ ``similarity`` and the same text hash or near-identical text; the oldest is kept.

    Only conversation nodes by default: article nodes are re-derived from the vault on every
    run, so merging them would only bring them back (and re-embed them) the next night.
    """
    rows = table.to_pylist()
    keep = [p for p, r in enumerate(rows) if r["doc_kind"] in kinds and r["id"] not in inner]
    if len(keep) < 2:
        return {}
    sub = table.take(keep)
    vectors = _matrix(sub)
    rows = sub.to_pylist()
    order = sorted(range(len(rows)), key=lambda p: (rows[p]["created_at"] or datetime.min, rows[p]["id"]))
    rank = {p: n for n, p in enumerate(order)}
    keeper: dict[str, str] = {}
    for start in range(0, len(rows), 512):
        sims = vectors[start:start + 512] @ vectors.T
        for off in range(sims.shape[0]):
            a = start + off
            for b in map(int, np.nonzero(sims[off] >= similarity)[0]):
                if b == a or rank[b] > rank[a] or rows[a]["doc_kind"] != rows[b]["doc_kind"]:
                    continue  # each pair once, from its younger member towards the older one
                if rows[a]["content_hash"] == rows[b]["content_hash"] or near_identical(rows[a]["text"], rows[b]["text"]):
                    target = rows[b]["id"]
                    while target in keeper:
                        target = keeper[target]
                    if target != rows[a]["id"]:
                        keeper.setdefault(rows[a]["id"], target)
    return {dup: _root(keeper, dup) for dup in keeper}


def _root(keeper: dict[str, str], node: str) -> str:
    while node in keeper:
        node = keeper[node]
    return node


def repoint(edges: list[tuple[str, str, float]], merged: dict[str, str]) -> list[tuple[str, str, float]]:
    """Edges with merged ids replaced by their keeper; self-loops dropped, the best of twins kept."""
    best: dict[tuple[str, str], float] = {}
    for src, dst, sim in edges:
        src, dst = merged.get(src, src), merged.get(dst, dst)
        if src != dst:
            best[(src, dst)] = max(sim, best.get((src, dst), -1.0))
    return [(s, d, w) for (s, d), w in best.items()]


def merge_duplicates(nodes: NodeIndex, similarity: float) -> Merged:
    """Keep one of each group of near-duplicate nodes and point their edges at it."""
    merged = find_duplicates(nodes.vectors(), nodes.parent_ids(), similarity)
    if merged:
        nodes.replace_edges(repoint(nodes.all_edges(), merged))
        nodes.delete(list(merged))
    return {"merged": len(merged)}


def age_tiers(nodes: NodeIndex, cold_after_days: int | None, now: datetime | None = None) -> Tiered:
    """Drop the vectors of conversation nodes older than ``cold_after_days`` (None: keep all).

    Their text stays in the full-text index, so recall still finds them by words.
    """
    if cold_after_days is None:
        return {"cold": 0}
    cutoff = (now or now_utc()) - timedelta(days=cold_after_days)
    table = nodes.vectors()
    cold = [r["id"] for r in table.select(["id", "doc_kind", "created_at"]).to_pylist()
            if r["doc_kind"] == "conversation" and r["created_at"] is not None and r["created_at"] < cutoff]
    nodes.mark_cold(cold)
    return {"cold": len(cold)}


def retire_old_indexes(session: Session, margin_hours: float) -> Retired:
    """Delete node-index directories that `memvault reindex` replaced, once past the margin.

    A reader that opened the old index before the swap keeps working until then.
    """
    return {"retired_indexes": retire_replaced_indexes(session.settings, margin_hours * 3600)}


def checkpoint_ledger(session: Session) -> Checkpointed:
    """Fold the ledger's write-ahead log into its file (nothing to do before the first run)."""
    return {"checkpointed": session.checkpoint_ledger()}

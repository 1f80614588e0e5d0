"""The index stage's pure part: articles and conversations → node rows, embeddings, `similar` edges.

Split from `memvault/stages/index.py` (the stage and its Prefect task) so the live drainer
(`memvault/ops/drain.py`) and `memvault reindex` write nodes exactly as the nightly stage does
without importing Prefect. Row ids are stable per document and path, and a row carries the
hash of what was embedded, so an unchanged node is never embedded again.
"""


import hashlib
import itertools
import logging
from datetime import datetime
from typing import Any

import numpy as np

from memvault.ids import conv_ref, node_id
from memvault.hygiene.noise import strip_noise
from memvault.runs.progress import Progress
from memvault.markdown.tree import TreeNode, conversation_nodes, split_sentences, truncate
from stores.ledger import Ledger
from stores.nodes import NodeIndex, now_utc
from memvault.stages.text import EMBED_CHARS

log = logging.getLogger(__name__)

# A new node's importance prior (in [0, 1]; recall weighs it by `w_importance`, a small term).
# An article is memory already distilled and cited, a conversation turn the raw material, so
# an article starts a little ahead; both stay mid-scale so access and edits can move them.
ARTICLE_IMPORTANCE = 0.5
CONVERSATION_IMPORTANCE = 0.3


CONTEXT_CHARS = 200  # each neighbouring turn contributes at most this much to an embedding


def node_hash(n: TreeNode, embed_text: str = "", links: str = "") -> str:
    """What decides whether a node is rewritten: its text, what it is embedded with, and the
    turns it links to (a grown conversation gives its last turn a reply and new kin)."""
    extra = f"\x1f{embed_text}" if embed_text else ""
    extra += f"\x1e{links}" if links else ""
    return hashlib.sha256(f"{n.kind}\x1f{n.title}\x1f{n.text}{extra}".encode()).hexdigest()


def context_texts(tree: list[TreeNode], turns: int) -> dict[str, str]:
    """Contextual embedding text of each message node, by path: the conversation's title and
    date, then up to ``turns`` turns before it, the message, and ``turns`` turns after it.

    A turn such as "Yes, it was so powerful!" means little alone; embedded with its
    neighbours and date it is found by the question it answers. The same window is what
    full-text search matches (``fts_text``), for questions that paraphrase across turns; the
    node's stored text (what recall shows) stays the message alone.
    """
    if turns <= 0 or not tree or tree[0].kind != "conversation":
        return {}
    root = tree[0]
    header = " · ".join(p for p in (root.title, root.timestamp if isinstance(root.timestamp, str) else None) if p)
    messages = [n for n in tree if n.kind == "message"]
    out = {}
    for i, m in enumerate(messages):
        around = [*messages[max(0, i - turns):i], m, *messages[i + 1:i + 1 + turns]]
        lines = [n.text if n is m else truncate(n.text, CONTEXT_CHARS) for n in around]
        out[m.path] = "\n".join([header, *lines] if header else lines)
    return out


def exchange_texts(tree: list[TreeNode]) -> dict[str, str]:
    """Embedding text of each exchange node, by path: its messages as the chunk stage renders
    an exchange (``role: text`` lines, at most ``EMBED_CHARS``). The chunk stage has embedded
    the same text minutes earlier, so the embedder's cache answers it instead of the model
    embedding every exchange twice a run (bench/index_rate.py: a fifth of the index stage's
    tokens). Exchanges differ only where a message was split into pieces; those embed anew."""
    lines: dict[str, list[str]] = {}
    for n in tree:
        if n.kind == "message" and n.parent:
            lines.setdefault(n.parent, []).append(n.text)
    return {path: "\n".join(texts)[:EMBED_CHARS] for path, texts in lines.items()}


def kin(tree: list[TreeNode]) -> dict[str, list[str]]:
    """Path of each exchange → its messages' paths; of each message → the other messages of
    its exchange (what recall lifts from an exchange hit or a message hit)."""
    children: dict[str, list[str]] = {}
    for n in tree:
        if n.kind == "message" and n.parent:
            children.setdefault(n.parent, []).append(n.path)
    out = dict(children)
    for n in tree:
        if n.kind == "message" and n.parent:
            out[n.path] = [p for p in children[n.parent] if p != n.path]
    return out


def replies(tree: list[TreeNode]) -> dict[str, str]:
    """Path of each message node → path of the next turn (the next message with another
    native id: the pieces of one long message are one turn). Recall lifts the reply of a
    turn that matches the query: a matching question is answered by the turn after it."""
    turns: list[list[TreeNode]] = []
    for m in (n for n in tree if n.kind == "message"):
        if turns and m.ref is not None and turns[-1][-1].ref == m.ref:
            turns[-1].append(m)
        else:
            turns.append([m])
    return {m.path: following[0].path for turn, following in itertools.pairwise(turns) for m in turn}


def _stable(path: str) -> str:
    """A conversation path without its `/conv:<short>` root, whose prefix may grow later."""
    return "/" + path.split("/", 2)[2] if path.startswith("/conv:") and path.count("/") > 1 else \
        ("/" if path.startswith("/conv:") else path)


def rows_for(doc: str, doc_kind: str, tree: list[TreeNode], context_turns: int = 1,
             scope: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Index rows for a document's tree; ids depend on the document key and a stable path.

    ``scope`` is what scoped recall filters on, the same for every node of the document:
    ``project`` (a conversation's working directory as its source records it), ``source``
    (its kind; ``article`` for articles) and ``doc_date`` (when it started).

    ``embed_text`` (not stored) is what gets embedded when it differs from title + text;
    it is part of the content hash, so a message re-embeds when its neighbours change.
    ``fts_text`` is what full-text search matches: the same window for a message, the
    node's own text otherwise.
    """
    now = now_utc()
    scope = scope or {}
    date = scope.get("doc_date")
    scoped = {"project": scope.get("project"), "source": scope.get("source") or doc_kind,
              "doc_date": date.replace(tzinfo=None) if isinstance(date, datetime) else None}
    contexts = context_texts(tree, context_turns)
    exchanged = exchange_texts(tree) if doc_kind == "conversation" else {}
    reply = replies(tree)
    kins = kin(tree)
    out = []
    for n in tree:
        created = n.timestamp if isinstance(n.timestamp, datetime) else now
        embed_text = contexts.get(n.path, "") or exchanged.get(n.path, "")
        # Stable paths (ids are made of them): a growing short id must not look like a change.
        links = "\x1f".join(_stable(p) for p in [reply.get(n.path, ""), *kins.get(n.path, [])] if p)
        out.append({
            "embed_text": embed_text or f"{n.title}\n{n.text}",
            "id": node_id(doc, _stable(n.path)), "doc": doc, "doc_kind": doc_kind, "path": n.path,
            "parent": node_id(doc, _stable(n.parent)) if n.parent else None, "kind": n.kind, "title": n.title,
            "text": n.text, "fts_text": contexts.get(n.path) or n.text, "ref": n.ref, "ord": n.order, "vector": None, "pending": True,
            "content_hash": node_hash(n, embed_text, links), "created_at": created.replace(tzinfo=None), "updated_at": now,
            "importance": ARTICLE_IMPORTANCE if doc_kind == "article" else CONVERSATION_IMPORTANCE, "access": 0,
            "similar": [], "reply": node_id(doc, _stable(reply[n.path])) if n.path in reply else None,
            "kin": [node_id(doc, _stable(p)) for p in kins.get(n.path, [])],
            **scoped,
        })
    return out


def sync_doc(nodes: NodeIndex, doc: str, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows to (re)write and ids to delete so the index matches ``rows`` for ``doc``."""
    have = nodes.doc_hashes(doc)
    changed = [r for r in rows if have.get(r["id"]) != r["content_hash"]]
    keep = {r["id"] for r in rows}
    return changed, [i for i in have if i not in keep]


def conversation_rows(ledger: Ledger, cid: str, short: str, context_turns: int) -> list[dict[str, Any]]:
    """Index rows of one conversation's active thread (low-value messages left out)."""
    conv = ledger.conversation(cid)
    if conv is None:
        raise KeyError(f"no conversation {cid} in the ledger")
    msgs: list[tuple[str, str, str, datetime | str | None]] = [
        (m.native_id, m.role, strip_noise(m.text), m.timestamp) for m in ledger.active_thread(cid) if not m.low_value]
    date = conv.started_at.strftime("%Y-%m-%d") if conv.started_at else None
    tree = conversation_nodes(cid, short, conv.title or "", date, conv.source, msgs)
    scope = {"project": conv.project, "source": conv.source, "doc_date": conv.started_at}
    return rows_for(conv_ref(cid), "conversation", tree, context_turns, scope)


def sentence_texts(row: dict[str, Any], limit: int) -> list[str]:
    """What is embedded of a turn besides the turn in its context: its first ``limit``
    sentences, each with who said it ("Ann: I painted that lake sunrise last year!"). None
    for a turn of one sentence (its vector says it already) or a node of another kind.

    A turn's context vector says what the passage is about; a question matches one thing said
    in it, which three other sentences dilute (LoCoMo dev, the turn's best sentence: cosine
    alone ranks open-domain evidence in the first ten 0.27 → 0.40, bench/README.md)."""
    if row.get("kind") != "message" or limit <= 0:
        return []
    text = row.get("text") or ""
    who, sep, said = text.partition(": ")
    if not sep or "\n" in who:
        who, said = "", text
    parts = [p.strip() for p in split_sentences(said) if p.strip()]
    if len(parts) < 2:
        return []
    return [f"{who}: {p}" if who else p for p in parts[:limit]]


def embed_rows(embedder: Any, rows: list[dict[str, Any]], dim: int, progress: Progress | None = None,
               sentences: int = 0) -> int:
    """Fill vectors in place (and, with ``sentences``, each turn's sentence vectors: see
    :func:`sentence_texts`); a failed batch leaves its rows pending with a zero vector.
    Returns how many rows failed.

    Longest text first across the whole write, so each batch holds texts of about one length
    (little padding: the model's cost grows faster than linearly with a batch's width);
    ``progress`` is told each batch's texts."""
    batch = 128
    # (row, sentence slot or -1 for the row's own vector, text)
    items = [(i, -1, (r.get("embed_text") or f"{r['title']}\n{r['text']}")[:EMBED_CHARS]) for i, r in enumerate(rows)]
    for i, r in enumerate(rows):
        said = sentence_texts(r, sentences)
        r["sentences"] = np.zeros((len(said), dim), dtype=np.float32) if said else None
        items += [(i, slot, t[:EMBED_CHARS]) for slot, t in enumerate(said)]
    order = sorted(range(len(items)), key=lambda n: -len(items[n][2]))
    failed_rows: set[int] = set()
    if progress:
        progress.begin(len(items))
    for start in range(0, len(order), batch):
        part = [items[n] for n in order[start:start + batch]]
        try:
            vecs = embedder.embed([text for _, _, text in part])
        except (RuntimeError, ValueError, OSError, MemoryError) as exc:
            log.warning("embedding batch failed (%s); %d text(s) left unembedded", exc, len(part))
            failed_rows.update(i for i, _, _ in part)
            continue
        finally:
            if progress:
                progress.advance(len(part))
        for (i, slot, _), v in zip(part, vecs):
            if slot < 0:
                rows[i]["vector"] = np.asarray(v, dtype=np.float32)
            else:
                rows[i]["sentences"][slot] = v
    for i, r in enumerate(rows):
        if i in failed_rows:
            r["vector"], r["pending"], r["sentences"] = [0.0] * dim, True, None
        else:
            r["pending"] = False
    if progress:
        progress.done()
    if failed_rows:
        log.warning("%d node(s) left pending", len(failed_rows))
    return len(failed_rows)


def similar_edges(nodes: NodeIndex, rows: list[dict[str, Any]], threshold: float, k: int,
                  recent: int, neighbours: int, nprobes: int = 20) -> dict[str, list[dict[str, Any]]]:
    """Up to ``k`` `similar` edges (cosine ≥ ``threshold``) of each row with a vector, by id.

    Candidates, all scored in a few matrix products: the other rows of this write, the
    ``recent`` most recent nodes of the index, and each row's ``neighbours`` nearest nodes
    by vector — one batched search for every row of the write (ANN once the index has one),
    never a query per row or a scan of every node. A row being rewritten is scored with its
    new vector, never the one still in the index.
    """
    live = [r for r in rows if not r["pending"]]
    if not live or k <= 0:
        return {}
    written = {r["id"] for r in rows}
    batch = np.asarray([r["vector"] for r in live], dtype=np.float32)
    pool = [p for p in nodes.recent(recent) if p["id"] not in written]
    ids = [r["id"] for r in live] + [p["id"] for p in pool]
    matrix = np.vstack([batch, np.asarray([p["vector"] for p in pool], dtype=np.float32)]) if pool else batch
    sims = batch @ matrix.T
    near = nodes.nearest_many(batch, neighbours, nprobes=nprobes)
    edges: dict[str, list[dict[str, Any]]] = {}
    # Only the best k + 2 of the write and the pool can win (the row itself and its parent
    # may be among them): a partial sort per row instead of a dict of every pair.
    top = min(k + 2, len(ids))
    best = np.argpartition(-sims, top - 1, axis=1)[:, :top]
    for i, r in enumerate(live):
        cands = {ids[j]: float(sims[i, j]) for j in best[i]}
        cands.update({c: s for c, s in near[i].items() if c not in written})
        scored = sorted(((s, c) for c, s in cands.items() if c != r["id"] and c != r["parent"]), reverse=True)
        edges[r["id"]] = [{"id": c, "sim": s} for s, c in scored[:k] if s >= threshold]
    return edges


def write_index(nodes: NodeIndex, embedder: Any, writes: list[dict[str, Any]], deletes: list[str],
                settings: Any, progress: Progress | None = None) -> int:
    """Embed ``writes``, apply them and ``deletes``, link new nodes, refresh the search indexes.

    Returns how many nodes were left pending. Shared by the index stage and the benchmarks,
    so what is measured is what the product stores. The rows go in with their `similar`
    edges already set: one commit (a merge-insert) for the whole write, whatever its size.
    """
    failed = embed_rows(embedder, writes, embedder.dim, progress, settings.sentence_vectors)
    if deletes:
        nodes.delete(deletes)
    if writes:
        # A rewritten node's old edges go with its old row; its new ones are found afresh.
        edges = similar_edges(nodes, writes, settings.similar_threshold, settings.max_similar,
                              settings.recent_candidates, settings.fts_candidates, settings.ann_nprobes)
        nodes.upsert([{**r, "similar": edges.get(r["id"], [])} for r in writes])
    # An index whose full text was built with an older tokenizer is re-tokenized on the next
    # run even when nothing changed (no vector is touched).
    if writes or deletes or (not nodes.fts_current() and nodes.count()):
        built = nodes.ensure_indexes(settings.ann_threshold)
        if built:
            log.info("search indexes built or refreshed: %s", ", ".join(built))
    return failed

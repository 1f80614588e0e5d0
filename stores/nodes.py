"""The node index: a LanceDB table of nodes (with vectors, full text and `similar` edges).

Derived state: rebuildable from the ledger and the vault (`memvault reindex`). Readers in
other processes open with ``read_consistency_interval=0`` so they see each new commit;
every write is one LanceDB version, so recall keeps reading the last committed one.

A node's outgoing `similar` edges, the id of the turn that replies to it (``reply``) and
its exchange's other messages (``kin``) are columns of its own row: a search hit arrives
with the id of everything recall lifts from it, so a recall is two rounds of reads (the two
searches, then the few lifted rows that can still rank), never one per kind of relative.

This module opens the tables and holds the reads and the searches; the schema and the SQL
pieces are in ``stores/nodes_schema.py``, the writes and index upkeep in
``stores/nodes_write.py`` (both re-exported here: import from ``stores.nodes``).
"""

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.query import FullTextOperator, MultiMatchQuery
from lancedb.table import AsyncTable

from memvault.embeddings import MODEL_DIMS, Embedder
from memvault.embeddings.http import identity
from memvault.errors import EmbedderMismatchError, EmbeddingServerError, IndexMismatchError
from memvault.config.settings import Settings
from stores.location import index_bytes, index_uri, local_path, record_index_embedder
from stores.nodes_schema import (COLD, COLD_SCHEMA, LIFTED_COLUMNS, LIGHT_COLUMNS, META, META_SCHEMA, NODES,
                                 RECALL_COLUMNS, SCORED_COLUMNS, SIMILAR_TYPE, id_list, node_schema, now_utc, quote, records,
                                 scope_filter)
from stores.nodes_write import NodeWrites

__all__ = ["COLD", "COLD_SCHEMA", "LIFTED_COLUMNS", "LIGHT_COLUMNS", "META", "META_SCHEMA", "NODES", "RECALL_COLUMNS", "SCORED_COLUMNS",
           "SIMILAR_TYPE", "IndexStatus", "NodeIndex", "embedding_model", "node_schema", "now_utc", "scope_filter"]


T = TypeVar("T")
log = logging.getLogger(__name__)
_LOOP: tuple[int, asyncio.AbstractEventLoop] | None = None
_LOOP_LOCK = threading.Lock()

def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on this process's background event loop and wait for its result.

    Recall reads through LanceDB's async API: a query costs about half the fixed overhead of
    the synchronous builder (which fetches the table schema twice per query), and the two
    searches of a recall run concurrently without a thread pool. Callable from any thread.
    """
    return _submit(coro).result()


def _submit(coro: Coroutine[Any, Any, T]) -> "Future[T]":
    """Start ``coro`` on the background event loop; its result is the returned future's."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP[0] != os.getpid():  # a forked child starts its own loop
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="memvault-lancedb", daemon=True).start()
            _LOOP = (os.getpid(), loop)
        loop = _LOOP[1]
    return asyncio.run_coroutine_threadsafe(coro, loop)



def embedding_model(settings: Settings) -> tuple[str, int | None]:
    """The embedder (name, dimensions) whose vectors the live index should hold: the one
    place that names it for every opener (``embeddings``; `embedder_for` embeds with it). An
    embeddings server's dimension is not known before its first answer (None)."""
    e = settings.embeddings
    if e.url:
        return identity(e.model, e.url), None
    return e.model, MODEL_DIMS[e.model]


def _stored_at(uri: str) -> dict[str, str]:
    """What an index at ``uri`` says of its vectors (``embedding_model``, ``dim``,
    ``embedding_url``), without judging it; empty when unreadable."""
    try:
        rows = lancedb.connect(uri).open_table(META).search().limit(100).to_list()
    except (ValueError, OSError):
        return {}
    return {str(r["key"]): str(r["value"]) for r in rows}


def _stored_model_at(uri: str) -> str | None:
    """The model an index at ``uri`` says its vectors come from, without judging it."""
    return _stored_at(uri).get("embedding_model")


@dataclass(frozen=True)
class IndexStatus:
    """What `memvault status` shows of the live index."""

    uri: str
    model: str | None  # the model its vectors come from (None: no index)
    nodes: int  # 0 when there is none, or it cannot be used as it is (another model, older layout)
    bytes: int | None  # on disk; None for object storage


class NodeIndex(NodeWrites):
    """Narrow interface over the LanceDB node tables.

    Open the live index with :meth:`open_existing` (readers, and writers that change what is
    there) or :meth:`open_or_create` (the index stage, a rebuild); the constructor is for an
    index at an explicit location with an explicit model (tests, benchmarks).
    """

    @classmethod
    def open_existing(cls, settings: Settings) -> "NodeIndex":
        """The live index; :class:`IndexMismatchError` (with the fix) when there is none or it
        holds another embedder's vectors (:class:`EmbedderMismatchError`)."""
        model, dim = embedding_model(settings)
        return cls(index_uri(settings), model, dim, create=False)

    @classmethod
    def open_stored(cls, settings: Settings) -> "NodeIndex":
        """The live index as it is, whichever embedder built it: for full-text reads and for
        writes that touch no vector (deletes) while it waits for `memvault reindex`."""
        uri = index_uri(settings)
        stored = _stored_at(uri)
        return cls(uri, stored.get("embedding_model", ""), int(stored.get("dim", 0)) or None, create=False)

    @classmethod
    def open_or_create(cls, settings: Settings, uri: str | None = None, embedder: Embedder | None = None) -> "NodeIndex":
        """The live index (or the one at ``uri``), created empty when it does not exist yet.

        ``embedder`` (the one that will write into it) is held to the index: its name must be
        the index's and its dimension the index's — an embeddings server that answers another
        one is an error naming its URL, before anything is written. A new index for a server
        learns the dimension from it (one request) before it is created, so a server that is
        down leaves no empty index behind."""
        model, dim = embedding_model(settings)
        live = index_uri(settings)
        uri = uri or live
        fresh = not cls._exists_at(uri)
        if dim is None and embedder is not None and fresh:
            dim = embedder.dim
        if fresh and uri == live:
            # Before it exists: a home whose live index lacks the file keeps the fp32 MiniLM.
            record_index_embedder(settings, model)
        e = settings.embeddings
        server = {"embedding_url": e.url, "embedding_server_model": e.model} if e.url else None
        index = cls(uri, model, dim, create=True, extra_meta=server)
        if embedder is not None and embedder.dim != index.dim:
            raise EmbeddingServerError(
                f"{embedder.name} gives {embedder.dim}-dimension vectors but the index at {uri} holds {index.dim} — "
                "nothing was written; check embeddings.model and embeddings.url, or run `memvault reindex`")
        return index

    @staticmethod
    def _exists_at(uri: str) -> bool:
        local = local_path(uri)
        if local is not None and not local.is_dir():
            return False
        return NODES in set(lancedb.connect(uri).list_tables().tables)

    @staticmethod
    def exists(settings: Settings) -> bool:
        """Whether the live index has been built (a home before its first run has none)."""
        return NodeIndex._exists_at(index_uri(settings))

    @classmethod
    def inspect(cls, settings: Settings) -> IndexStatus:
        """The live index's location, model, size and node count, never raising for a missing,
        foreign or older index (status must answer whatever state the home is in)."""
        uri = index_uri(settings)
        size = index_bytes(uri)
        try:
            if not cls.exists(settings):
                return IndexStatus(uri=uri, model=None, nodes=0, bytes=size)
            index = cls.open_existing(settings)
        except EmbedderMismatchError:
            # Another embedder's vectors: still readable by full text, so counted.
            stored = cls.open_stored(settings)
            return IndexStatus(uri=uri, model=stored.model_name, nodes=stored.count(), bytes=size)
        except IndexMismatchError:
            # Another model's vectors, or an older layout: name what it holds, count nothing.
            return IndexStatus(uri=uri, model=_stored_model_at(uri), nodes=0, bytes=size)
        except (ValueError, OSError):  # unreadable (a remote store that does not answer, a damaged folder)
            return IndexStatus(uri=uri, model=None, nodes=0, bytes=size)
        return IndexStatus(uri=uri, model=index.stored_model(), nodes=index.count(), bytes=size)

    def __init__(self, uri: str, model_name: str, dim: int | None, create: bool = True,
                 extra_meta: dict[str, str] | None = None) -> None:
        """``dim`` None: the index's own (an embeddings server whose dimension is learned from
        it); creating an index needs it."""
        self.uri, self.model_name = uri, model_name
        self.db = lancedb.connect(uri, read_consistency_interval=timedelta(0))
        self.rebuilt: str | None = None  # why an unreadable index was created anew (the run report says)
        names = set(self.db.list_tables().tables)
        if NODES not in names:
            if not create:
                raise IndexMismatchError(f"no node index at {uri} — run `memvault run` or `memvault reindex`")
            if dim is None:
                raise IndexMismatchError(f"cannot create the node index at {uri} before {model_name} has given "
                                         "one vector (its dimension is not known) — run `memvault run`")
            self._create(model_name, dim, extra_meta, overwrite=False)
        try:
            self.nodes = self.db.open_table(NODES)
            self.meta = self.db.open_table(META)
        except ValueError as exc:
            # A table folder without a manifest: the first creation was killed (SIGKILL). The
            # index is derived, so a writer creates it anew and the index stage refills it
            # from the ledger and the vault; a reader says what heals it.
            if "was not found" not in str(exc):
                raise
            if not create or dim is None:
                raise IndexMismatchError(
                    f"the node index at {uri} is unreadable ({exc}; a run was killed while creating it) — "
                    "`memvault run` rebuilds it (or `memvault reindex`)") from None
            self.rebuilt = f"the node index at {uri} was unreadable ({exc}) and was created anew"
            log.warning("%s; its conversations and articles are indexed again", self.rebuilt)
            self._create(model_name, dim, extra_meta, overwrite=True)
            self.nodes = self.db.open_table(NODES)
            self.meta = self.db.open_table(META)
        self._reader: AsyncTable | None = None  # the async handle of the nodes table, opened on first search
        missing = [c for c in ("fts_text", "similar", "reply", "kin", "project", "source", "doc_date", "card", "sentences")
                   if c not in self.nodes.schema.names]
        if missing:
            raise IndexMismatchError(
                f"the node index at {uri} was built by an older memvault (no `{missing[0]}` column) "
                "— run `memvault reindex`"
            )
        stored = self.stored_model()
        if stored != model_name:
            raise EmbedderMismatchError(
                f"the node index at {uri} holds vectors of `{stored}`, not `{model_name}`; "
                "vectors of different embedders are never mixed — run `memvault reindex`", stored, model_name)
        # The vectors' width, from the schema: what the index holds is what counts.
        width = self.nodes.schema.field("vector").type.list_size
        if dim is not None and dim != width:
            raise EmbedderMismatchError(
                f"the node index at {uri} holds {width}-dimension vectors, but `{model_name}` gives {dim} — "
                "run `memvault reindex`", stored, model_name)
        self.dim = int(width)

    def _create(self, model_name: str, dim: int, extra_meta: dict[str, str] | None, overwrite: bool) -> None:
        # Overwrite when healing: a table half made by a killed creation is replaced, never
        # appended to. A fresh index is created plainly (overwriting nothing makes lance warn).
        mode = "overwrite" if overwrite else "create"
        self.db.create_table(NODES, schema=node_schema(dim), mode=mode)
        self.db.create_table(META, schema=META_SCHEMA, mode=mode).add(
            [{"key": "embedding_model", "value": model_name}, {"key": "dim", "value": str(dim)},
             *({"key": k, "value": v} for k, v in (extra_meta or {}).items())]
        )

    def stored_model(self) -> str | None:
        rows = self.meta.search().where("key = 'embedding_model'").limit(1).to_list()
        return rows[0]["value"] if rows else None

    # -- reads ------------------------------------------------------------------------------
    def count(self) -> int:
        return self.nodes.count_rows()

    def doc_hashes(self, doc: str) -> dict[str, str]:
        rows = (self.nodes.search().where(f"doc = {quote(doc)}").select(["id", "content_hash"])
                .limit(1_000_000).to_list())
        return {r["id"]: r["content_hash"] for r in rows}

    def texts(self, kinds: Sequence[str] = ("message", "section", "paragraph")) -> list[str]:
        """The text of every node of ``kinds`` (what prompt-recall counts document frequencies on)."""
        where = "kind IN (" + ", ".join(quote(k) for k in kinds) + ")"
        table = self.nodes.search().where(where).select(["text"]).limit(100_000_000).to_arrow()
        return [t or "" for t in table.column("text").to_pylist()]

    def docs(self) -> dict[str, str]:
        """Every document key with its kind."""
        rows = self.nodes.search().where("kind IN ('article', 'conversation')").select(["doc", "doc_kind"]).limit(10_000_000).to_list()
        return {r["doc"]: r["doc_kind"] for r in rows}

    def get(self, ids: Sequence[str], with_vectors: bool = False) -> list[dict[str, Any]]:
        if not ids:
            return []
        # Full nodes, with what full text matches, so a rewrite (a pending retry) keeps it.
        cols = LIGHT_COLUMNS + ["fts_text"] + (["vector"] if with_vectors else [])
        where = "id IN " + id_list(ids)
        rows = self.nodes.search().where(where).select(cols).limit(len(ids)).to_list()
        order = {i: n for n, i in enumerate(ids)}
        return sorted(rows, key=lambda r: order.get(r["id"], 0))

    def doc_nodes(self, doc: str) -> list[dict[str, Any]]:
        rows = self.nodes.search().where(f"doc = {quote(doc)}").select(LIGHT_COLUMNS).limit(1_000_000).to_list()
        return sorted(rows, key=lambda r: r["ord"])

    def pending_ids(self) -> list[str]:
        # Cold nodes (vectors dropped by maintenance on purpose) are pending too, but not to retry.
        cold = self.cold_ids()
        return [r["id"] for r in self.nodes.search().where("pending").select(["id"]).limit(1_000_000).to_list()
                if r["id"] not in cold]

    def recent(self, n: int) -> list[dict[str, Any]]:
        """The ``n`` most recently created nodes that have vectors (edge candidates)."""
        # Pick by one small column (8 bytes a row, with the row ids), then read the chosen
        # rows alone: reading ids or vectors of every row would make each write O(N) in bytes.
        if n <= 0:
            return []
        table = self._table()

        async def pick() -> list[dict[str, Any]]:
            stamps = await table.query().where("NOT pending").select(["created_at"]).with_row_id().to_arrow()
            if not stamps.num_rows:
                return []
            order = np.argsort(stamps.column("created_at").to_numpy(), kind="stable")[-n:]
            row_ids = sorted(stamps.column("_rowid").take(pa.array(order)).to_pylist())
            got = await table.take_row_ids(row_ids).select(["id", "created_at", "vector"]).to_arrow()
            return records(got if isinstance(got, pa.Table) else pa.Table.from_batches(got))

        return _run(pick())

    def docs_matching(self, predicate: Callable[[str], bool], batch: int = 10_000) -> dict[str, int]:
        """Documents with a node whose title or text satisfies ``predicate(text)``: doc → nodes hit."""
        hits: dict[str, int] = {}
        reader = self.nodes.search().select(["doc", "title", "text"]).limit(10_000_000).to_batches(batch)
        for part in reader:
            for row in part.to_pylist():
                if predicate(row["title"] or "") or predicate(row["text"] or ""):
                    hits[row["doc"]] = hits.get(row["doc"], 0) + 1
        return hits

    def delete_docs(self, docs: Iterable[str]) -> int:
        """Delete every node of these documents (and their edges); returns the nodes deleted."""
        ids = [i for d in docs for i in self.doc_hashes(d)]
        self.delete(ids)
        return len(ids)


    # -- searches (recall: memvault/ops/memory.py; edge candidates: memvault/stages/index.py) -------------
    # Through LanceDB's async API on a background loop (see ``_run``): a recall is two rounds,
    # the two searches side by side, then one read of the lifted rows that can still rank.
    def _table(self) -> AsyncTable:
        if self._reader is None:
            async def open_nodes() -> AsyncTable:
                db = await lancedb.connect_async(self.uri, read_consistency_interval=timedelta(0))
                return await db.open_table(NODES)
            self._reader = _run(open_nodes())
        return self._reader

    def prewarm(self) -> list[str]:
        """Load the search indexes (full text, BTree, ANN) into LanceDB's cache now, not piece
        by piece as queries touch them; returns their names. For a long-lived process (the
        servers): at 1M nodes it costs ~0.6 s of CPU and ~250 MB once, and a recall's first
        touch of IVF partitions and posting lists — ~4 ms of a cold 1M recall — is gone."""
        table = self._table()
        names = [i.name for i in self.nodes.list_indices()]

        async def load() -> None:
            for name in names:
                await table.prewarm_index(name)

        _run(load())
        return names

    @staticmethod
    async def _fts(table: AsyncTable, query: str, k: int, columns: list[str],
                   where: str | None = None) -> list[dict[str, Any]]:
        """Full-text top-``k`` (with ``_score``): BM25 over the node's own text plus its
        context window (``fts_text``), summed — a neighbour's words can find a turn, but a
        turn's own words count twice (a boost on ``text`` beyond that measured worse)."""
        if not query.strip():
            return []
        try:
            q = table.query().nearest_to_text(MultiMatchQuery(query, ["text", "fts_text"], boosts=None,
                                                              operator=FullTextOperator.OR))
            if where:
                q = q.where(where)
            return records(await q.select(columns + ["_score"]).limit(k).to_arrow())
        except (ValueError, RuntimeError, OSError):
            return []  # no full-text index yet (an empty index), or a query the tokenizer rejects

    def nearest_many(self, vectors: np.ndarray, k: int, nprobes: int = 20, batch: int = 256) -> list[dict[str, float]]:
        """For each row of ``vectors`` (unit length), its ``k`` nearest nodes as ``{id: cosine}``
        — edge candidates for a write, found without a query per row.

        One vector search for ``batch`` query vectors at a time (ANN when the index has one;
        an exact scan otherwise, which LanceDB shares across the query vectors), without
        LanceDB's per-query re-ranking (a read of ``k × refine`` full vectors for each query
        vector, three quarters of the cost); instead every candidate of the batch is read
        once, in one take by row id, and scored exactly here. Pending nodes are left out.
        """
        table = self._table()
        out: list[dict[str, float]] = [{} for _ in range(len(vectors))]
        if k <= 0 or not len(vectors):
            return out
        vectors = np.asarray(vectors, dtype=np.float32)

        async def search(part: np.ndarray) -> pa.Table:
            q = table.query().nearest_to(list(part) if len(part) > 1 else part[0]).distance_type("cosine")
            # `_distance` named although unused: a vector search whose columns leave it out makes
            # lance print a deprecation warning on stderr (once per search, in `memvault run`).
            result = await q.nprobes(nprobes).select(["id", "pending", "_distance"]).with_row_id().limit(k).to_arrow()
            if "query_index" not in result.column_names:  # one query vector: no index column
                result = result.append_column("query_index", pa.array([0] * result.num_rows, pa.int32()))
            return result

        async def take(row_ids: list[int]) -> pa.Table:
            got = await table.take_row_ids(row_ids).select(["vector"]).with_row_id().to_arrow()
            return got if isinstance(got, pa.Table) else pa.Table.from_batches(got)

        for start in range(0, len(vectors), batch):
            try:
                hits = _run(search(vectors[start:start + batch]))
            except (ValueError, RuntimeError, OSError):
                return out  # an empty table: nothing to link to
            hits = hits.filter(pc.invert(hits.column("pending").fill_null(True)))
            if not hits.num_rows:
                continue
            wanted = sorted(set(hits.column("_rowid").to_pylist()))
            got = _run(take(wanted))
            where = {r: n for n, r in enumerate(got.column("_rowid").to_pylist())}
            matrix = got.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False).reshape(-1, self.dim)
            for q, node, row in zip(hits.column("query_index").to_pylist(), hits.column("id").to_pylist(),
                                    hits.column("_rowid").to_pylist()):
                if row in where:
                    out[start + q][node] = float(vectors[start + q] @ matrix[where[row]])
        return out

    def recall_search(self, vector: np.ndarray | Callable[[], np.ndarray] | None, query: str, k: int, nprobes: int = 20,
                      refine_factor: int = 5, where: str | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Vector top-``k`` (with ``_distance``) and full-text top-``k`` (with ``_score``),
        queried concurrently; both with ``RECALL_COLUMNS`` and the vector. ``where`` (see
        :func:`scope_filter`) prefilters both searches, so a scoped recall is still one round.
        ``vector`` may be the function that computes it (the query's embedding): the
        full-text search is then under way while it runs; None: full text only (an index of
        another embedder). A vector of another width than the index's is refused, never searched."""
        table = self._table()
        fts = _submit(self._fts(table, query, k, RECALL_COLUMNS + SCORED_COLUMNS, where))
        vector = vector() if callable(vector) else vector
        if vector is None:
            return [], fts.result()
        if vector.shape[-1] != self.dim:
            fts.result()
            raise IndexMismatchError(f"a {vector.shape[-1]}-dimension query vector cannot search the index at {self.uri} "
                                     f"({self.dim} dimensions, `{self.model_name}`) — run `memvault reindex`")
        # No "NOT pending" prefilter: it scans the whole `pending` column per query (3–5 ms at
        # 100k nodes, ten times that at 1M). Pending nodes hold a zero or no vector, which
        # cosine search never returns; a pending row that slips through is dropped below.
        vq = table.query().nearest_to(vector.astype(np.float32)).distance_type("cosine")
        vq = (vq.nprobes(nprobes).refine_factor(refine_factor).select(RECALL_COLUMNS + SCORED_COLUMNS + ["_distance"]).limit(k))
        if where:
            vq = vq.where(where)

        async def nearest() -> list[dict[str, Any]]:
            return [r for r in records(await vq.to_arrow()) if not r["pending"]]

        return _run(nearest()), fts.result()

    def text_search(self, query: str, k: int, where: str | None = None) -> list[dict[str, Any]]:
        """Full-text top-``k`` alone (with ``_score``, ``RECALL_COLUMNS`` and the vector): recall's
        second hop, which searches for words of the first hop's hits, not of the query."""
        return _run(self._fts(self._table(), query, k, RECALL_COLUMNS + SCORED_COLUMNS, where))

    def rows_of(self, ids: Sequence[str], scope: str | None = None) -> list[dict[str, Any]]:
        """``LIFTED_COLUMNS`` and the vector of each of ``ids`` that exists, in one read (the
        nodes that recall lifts and that can still rank; deleted ones are simply absent, and
        so are those outside ``scope``, a :func:`scope_filter`)."""
        if not ids:
            return []
        where = "id IN " + id_list(ids) + (f" AND ({scope})" if scope else "")
        query = self._table().query().where(where).select(LIFTED_COLUMNS + ["vector"]).limit(len(ids))
        return records(_run(query.to_arrow()))


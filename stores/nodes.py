"""The node index: a LanceDB table of nodes (with vectors, full text and `similar` edges).

Derived state: rebuildable from the ledger and the vault (`memvault reindex`). Readers in
other processes open with ``read_consistency_interval=0`` so they see each new commit;
every write is one LanceDB version, so recall keeps reading the last committed one.

A node's outgoing `similar` edges, the id of the turn that replies to it (``reply``) and
its exchange's other messages (``kin``) are columns of its own row: a search hit arrives
with the id of everything recall lifts from it, so a recall is two rounds of reads (the two
searches, then the few lifted rows that can still rank), never one per kind of relative.
"""

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, BTree, IvfPq
from lancedb.query import FullTextOperator, MultiMatchQuery
from lancedb.table import AsyncTable, Table

from memvault.embeddings import DIM, MODEL_NAME
from memvault.errors import IndexMismatchError
from memvault.settings import Settings
from stores.location import index_bytes, index_uri, local_path

NODES, META = "nodes", "meta"
SIMILAR_TYPE = pa.list_(pa.struct([pa.field("id", pa.string()), pa.field("sim", pa.float32())]))


T = TypeVar("T")
_LOOP: tuple[int, asyncio.AbstractEventLoop] | None = None
_LOOP_LOCK = threading.Lock()


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on this process's background event loop and wait for its result.

    Recall reads through LanceDB's async API: a query costs about half the fixed overhead of
    the synchronous builder (which fetches the table schema twice per query), and the two
    searches of a recall run concurrently without a thread pool. Callable from any thread.
    """
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP[0] != os.getpid():  # a forked child starts its own loop
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="memvault-lancedb", daemon=True).start()
            _LOOP = (os.getpid(), loop)
        loop = _LOOP[1]
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


def _optimize(table: Table, older_than: timedelta, **kwargs: Any) -> None:
    """Compact, fold new rows into the indexes, and delete versions older than ``older_than``.

    LanceDB prunes before it folds (one more commit): a second pass, with nothing left to
    compact or fold, prunes the version that the fold replaced.
    """
    table.optimize(cleanup_older_than=older_than, **kwargs)
    table.optimize(cleanup_older_than=older_than, **kwargs)


def _by_source(edges: Iterable[tuple[str, str, float]]) -> dict[str, dict[str, float]]:
    """``(src, dst, sim)`` edges as ``{src: {dst: sim}}`` (a repeated pair keeps the last weight)."""
    out: dict[str, dict[str, float]] = {}
    for src, dst, sim in edges:
        out.setdefault(src, {})[dst] = float(sim)
    return out


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def node_schema(dim: int) -> pa.Schema:
    return pa.schema([
        pa.field("id", pa.string()),
        pa.field("doc", pa.string()),
        pa.field("doc_kind", pa.string()),
        pa.field("path", pa.string()),
        pa.field("parent", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("title", pa.string()),
        pa.field("text", pa.string()),
        # What full-text search matches: a message with its neighbouring turns (the window the
        # index embeds), other nodes their own text. ``text`` stays what recall shows.
        pa.field("fts_text", pa.string()),
        pa.field("ref", pa.string()),
        pa.field("ord", pa.int32()),
        pa.field("vector", pa.list_(pa.float32(), dim)),
        pa.field("pending", pa.bool_()),
        pa.field("content_hash", pa.string()),
        pa.field("created_at", pa.timestamp("us")),
        pa.field("updated_at", pa.timestamp("us")),
        pa.field("importance", pa.float32()),
        pa.field("access", pa.int32()),
        # Outgoing `similar` edges (up to ``index.max_similar``, cosine ≥ the threshold).
        pa.field("similar", SIMILAR_TYPE),
        # A message: the id of the next turn of its conversation (the one that answers it).
        pa.field("reply", pa.string()),
        # An exchange: its messages; a message: the other messages of its exchange.
        pa.field("kin", pa.list_(pa.string())),
        # What scoped recall filters on inside the searches (one round of queries): the
        # document's project (a conversation's working directory), source kind (`article`
        # for articles) and start date.
        pa.field("project", pa.string()),
        pa.field("source", pa.string()),
        pa.field("doc_date", pa.timestamp("us")),
    ])


META_SCHEMA = pa.schema([pa.field("key", pa.string()), pa.field("value", pa.string())])
LIGHT_COLUMNS = ["id", "doc", "doc_kind", "path", "parent", "kind", "title", "text", "ref", "ord", "pending",
                 "content_hash", "created_at", "updated_at", "importance", "access", "similar", "reply", "kin",
                 "project", "source", "doc_date"]
# What recall reads of a search hit: scoring, what it lifts, the block and citations. Every
# column costs about half a millisecond per read, so a lifted node (which lifts nothing
# further) is read without its links.
LIFTED_COLUMNS = ["id", "doc", "path", "kind", "title", "text", "ref", "pending", "created_at", "importance", "access",
                  "project", "source"]
RECALL_COLUMNS = [*LIFTED_COLUMNS, "parent", "similar", "reply", "kin"]


def _records(table: pa.Table) -> list[dict[str, Any]]:
    """Rows of an Arrow result, the vector column as float32 numpy rows (a Python list of 384
    floats per row costs more than the read)."""
    if "vector" not in table.column_names:
        rows: list[dict[str, Any]] = table.to_pylist()
        return rows
    vectors = table.column("vector").combine_chunks()
    dim = vectors.type.list_size
    flat = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    if len(flat) == len(vectors) * dim:
        matrix: Any = flat.reshape(-1, dim)
    else:  # rows without a vector (cold nodes) leave the flattened array short
        matrix = [v.values.to_numpy(zero_copy_only=False).astype(np.float32) if v.is_valid else None for v in vectors]
    rows = table.drop_columns(["vector"]).to_pylist()
    for row, vector in zip(rows, matrix):
        row["vector"] = vector
    return rows


def embedding_model(settings: Settings) -> tuple[str, int]:
    """The embedding model (name, dimensions) whose vectors the live index holds: the one
    place that names it for every opener. (Only all-MiniLM-L6-v2 ships today; ``settings``
    is where a configurable model would come from.)"""
    return MODEL_NAME, DIM


def _stored_model_at(uri: str) -> str | None:
    """The model an index at ``uri`` says its vectors come from, without judging it."""
    try:
        rows = lancedb.connect(uri).open_table(META).search().where("key = 'embedding_model'").limit(1).to_list()
    except (ValueError, OSError):
        return None
    return str(rows[0]["value"]) if rows else None


@dataclass(frozen=True)
class IndexStatus:
    """What `memvault status` shows of the live index."""

    uri: str
    model: str | None  # the model its vectors come from (None: no index)
    nodes: int  # 0 when there is none, or it cannot be used as it is (another model, older layout)
    bytes: int | None  # on disk; None for object storage


class NodeIndex:
    """Narrow interface over the LanceDB node tables.

    Open the live index with :meth:`open_existing` (readers, and writers that change what is
    there) or :meth:`open_or_create` (the index stage, a rebuild); the constructor is for an
    index at an explicit location with an explicit model (tests, benchmarks).
    """

    @classmethod
    def open_existing(cls, settings: Settings) -> "NodeIndex":
        """The live index; :class:`IndexMismatchError` (with the fix) when there is none or it
        holds another model's vectors."""
        model, dim = embedding_model(settings)
        return cls(index_uri(settings), model, dim, create=False)

    @classmethod
    def open_or_create(cls, settings: Settings, uri: str | None = None) -> "NodeIndex":
        """The live index (or the one at ``uri``), created empty when it does not exist yet."""
        model, dim = embedding_model(settings)
        return cls(uri or index_uri(settings), model, dim, create=True)

    @staticmethod
    def exists(settings: Settings) -> bool:
        """Whether the live index has been built (a home before its first run has none)."""
        uri = index_uri(settings)
        local = local_path(uri)
        if local is not None and not local.is_dir():
            return False
        return NODES in set(lancedb.connect(uri).list_tables().tables)

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
        except IndexMismatchError:
            # Another model's vectors, or an older layout: name what it holds, count nothing.
            return IndexStatus(uri=uri, model=_stored_model_at(uri), nodes=0, bytes=size)
        except (ValueError, OSError):  # unreadable (a remote store that does not answer, a damaged folder)
            return IndexStatus(uri=uri, model=None, nodes=0, bytes=size)
        return IndexStatus(uri=uri, model=index.stored_model(), nodes=index.count(), bytes=size)

    def __init__(self, uri: str, model_name: str, dim: int, create: bool = True) -> None:
        self.uri, self.model_name, self.dim = uri, model_name, dim
        self.db = lancedb.connect(uri, read_consistency_interval=timedelta(0))
        names = set(self.db.list_tables().tables)
        if NODES not in names:
            if not create:
                raise IndexMismatchError(f"no node index at {uri} — run `memvault run` or `memvault reindex`")
            self.db.create_table(NODES, schema=node_schema(dim))
            self.db.create_table(META, schema=META_SCHEMA).add(
                [{"key": "embedding_model", "value": model_name}, {"key": "dim", "value": str(dim)}]
            )
        self.nodes = self.db.open_table(NODES)
        self.meta = self.db.open_table(META)
        self._reader: AsyncTable | None = None  # the async handle of the nodes table, opened on first search
        missing = [c for c in ("fts_text", "similar", "reply", "kin", "project", "source", "doc_date")
                   if c not in self.nodes.schema.names]
        if missing:
            raise IndexMismatchError(
                f"the node index at {uri} was built by an older memvault (no `{missing[0]}` column) "
                "— run `memvault reindex`"
            )
        stored = self.stored_model()
        if stored != model_name:
            raise IndexMismatchError(
                f"the node index at {uri} holds vectors of `{stored}`, not `{model_name}`; "
                "vectors of different models are never mixed — run `memvault reindex`"
            )

    def stored_model(self) -> str | None:
        rows = self.meta.search().where("key = 'embedding_model'").limit(1).to_list()
        return rows[0]["value"] if rows else None

    # -- reads ------------------------------------------------------------------------------
    def count(self) -> int:
        return self.nodes.count_rows()

    def doc_hashes(self, doc: str) -> dict[str, str]:
        rows = (self.nodes.search().where(f"doc = {_quote(doc)}").select(["id", "content_hash"])
                .limit(1_000_000).to_list())
        return {r["id"]: r["content_hash"] for r in rows}

    def docs(self) -> dict[str, str]:
        """Every document key with its kind."""
        rows = self.nodes.search().where("kind IN ('article', 'conversation')").select(["doc", "doc_kind"]).limit(10_000_000).to_list()
        return {r["doc"]: r["doc_kind"] for r in rows}

    def get(self, ids: Sequence[str], with_vectors: bool = False) -> list[dict[str, Any]]:
        if not ids:
            return []
        # Full nodes, with what full text matches, so a rewrite (a pending retry) keeps it.
        cols = LIGHT_COLUMNS + ["fts_text"] + (["vector"] if with_vectors else [])
        where = "id IN (" + ", ".join(_quote(i) for i in ids) + ")"
        rows = self.nodes.search().where(where).select(cols).limit(len(ids)).to_list()
        order = {i: n for n, i in enumerate(ids)}
        return sorted(rows, key=lambda r: order.get(r["id"], 0))

    def doc_nodes(self, doc: str) -> list[dict[str, Any]]:
        rows = self.nodes.search().where(f"doc = {_quote(doc)}").select(LIGHT_COLUMNS).limit(1_000_000).to_list()
        return sorted(rows, key=lambda r: r["ord"])

    def pending_ids(self) -> list[str]:
        # Cold nodes (vectors dropped by maintenance on purpose) are pending too, but not to retry.
        cold = self.cold_ids()
        return [r["id"] for r in self.nodes.search().where("pending").select(["id"]).limit(1_000_000).to_list()
                if r["id"] not in cold]

    def recent(self, n: int) -> list[dict[str, Any]]:
        """The ``n`` most recently created nodes that have vectors (edge candidates)."""
        # Pick by the small columns first, then read only the chosen vectors: a scan of
        # every vector would make each write O(N) in bytes read.
        tbl = self.nodes.search().where("NOT pending").select(["id", "created_at"]).limit(10_000_000).to_arrow()
        if tbl.num_rows > n:
            idx = np.argsort(tbl.column("created_at").to_numpy())[-n:]
            tbl = tbl.take(pa.array(idx))
        ids = tbl.column("id").to_pylist()
        if not ids:
            return []
        where = "id IN (" + ", ".join(_quote(i) for i in ids) + ")"
        return self.nodes.search().where(where).select(["id", "created_at", "vector"]).limit(len(ids)).to_list()

    # -- writes ---------------------------------------------------------------------------------
    def upsert(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            # Rows built elsewhere (tests, the latency bench) may omit it: full text then
            # matches the node's own text.
            rows = [{**r, "fts_text": r.get("fts_text") or r.get("text"), "similar": r.get("similar") or [],
                     "kin": r.get("kin") or []} for r in rows]
            (self.nodes.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
             .execute(pa.Table.from_pylist(rows, schema=self.nodes.schema)))

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            where = "(" + ", ".join(_quote(i) for i in part) + ")"
            self.nodes.delete(f"id IN {where}")
        # Edges into deleted nodes stay in their sources' rows until those are rewritten or
        # maintenance rebuilds the edges; recall skips a neighbour it cannot read.

    def set_edges(self, edges: list[tuple[str, str, float]]) -> None:
        """Make ``edges`` the `similar` edges of their sources (other rows keep theirs), in one
        commit. The index stage passes every edge of the rows it has just written."""
        self._write_similar(_by_source(edges))

    def _write_similar(self, similar: dict[str, dict[str, float]]) -> None:
        """Set the `similar` column of these rows, in one commit (a partial merge-insert)."""
        if not similar:
            return
        data = pa.Table.from_pylist(
            [{"id": i, "similar": [{"id": d, "sim": s} for d, s in sorted(e.items(), key=lambda kv: -kv[1])]}
             for i, e in similar.items()],
            schema=pa.schema([pa.field("id", pa.string()), pa.field("similar", SIMILAR_TYPE)]))
        self.nodes.merge_insert("id").when_matched_update_all().execute(data)

    def add_access(self, counts: dict[str, int]) -> None:
        """Fold access counts from the side log into the nodes (one write per run, not per query)."""
        by_increment: dict[int, list[str]] = {}
        for node_id, n in counts.items():
            if n > 0:
                by_increment.setdefault(int(n), []).append(node_id)
        # One update per distinct increment (not per node): few versions however many nodes.
        for n, ids in sorted(by_increment.items()):
            for start in range(0, len(ids), 500):
                where = "id IN (" + ", ".join(_quote(i) for i in ids[start:start + 500]) + ")"
                self.nodes.update(where=where, values_sql={"access": f"coalesce(access, 0) + {n}"})

    def ensure_indexes(self, ann_threshold: int, fold_fraction: float = 0.1) -> list[str]:
        """Create the indexes a write needs and return which ones were built or refreshed.

        Full text and a BTree on ``id`` (merge-insert and id lookups use it) always; the ANN
        index once the table holds ``ann_threshold`` rows. Rows written later are still
        searched (flat) until the indexes are folded: here when they exceed ``fold_fraction``
        of the indexed rows, otherwise by maintenance — so a small write never costs O(N).
        """
        have = {tuple(i.columns): i for i in self.nodes.list_indices()}
        done = []
        if ("text",) not in have or ("fts_text",) not in have:
            self.ensure_fts()
            done.append("fts")
        for column in ("id", "parent"):  # id lookups and merge-insert; children of a hit
            if (column,) not in have:
                self.nodes.create_index(column, config=BTree(), replace=True)
                done.append(column)
        rows = self.count()
        if ("vector",) not in have and rows >= max(ann_threshold, 256):
            self.create_ann(rows)
            done.append("ann")
        elif any((i.num_unindexed_rows or 0) > fold_fraction * max(i.num_indexed_rows or 0, 1) for i in have.values()):
            self.nodes.optimize()  # folds new rows into every index; old versions kept (7-day default)
            done.append("fold")
        return done

    def create_ann(self, rows: int | None = None) -> None:
        """IVF-PQ over the vectors (cosine): ~√N partitions, 8 dimensions per PQ code."""
        rows = rows or self.count()
        partitions = max(1, min(4096, int(rows ** 0.5)))
        sub_vectors = self.dim // 8 if self.dim % 8 == 0 else 1
        self.nodes.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=partitions,
                                                        num_sub_vectors=sub_vectors), replace=True)

    def has_ann(self) -> bool:
        return any(tuple(i.columns) == ("vector",) for i in self.nodes.list_indices())

    def ensure_fts(self) -> None:
        """(Re)build the full-text indexes over ``text`` and ``fts_text``; rows added later are still searched."""
        for column in ("text", "fts_text"):
            self.nodes.create_index(column, config=FTS(with_position=False), replace=True)

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

    def purge_old_versions(self) -> None:
        """Drop every older version's files, so deleted text no longer sits on disk.

        A reader still on an older version at that moment may fail its query; the caller holds
        the writer lock and means it (a secret must leave the disk), so LanceDB's warning is
        silenced.
        """
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            _optimize(self.nodes, timedelta(0), delete_unverified=True)

    # -- maintenance (memvault/ops/maintenance.py) ----------------------------------------------------
    def vectors(self) -> pa.Table:
        """Every node that has a vector, with what maintenance needs to compare and merge them."""
        cols = ["id", "doc", "doc_kind", "parent", "content_hash", "text", "created_at", "vector"]
        return self.nodes.search().where("NOT pending").select(cols).limit(10_000_000).to_arrow()

    def parent_ids(self) -> set[str]:
        """Ids that some node names as its parent (inner nodes of a document tree)."""
        rows = self.nodes.search().where("parent IS NOT NULL").select(["parent"]).limit(10_000_000).to_arrow()
        return set(rows.column("parent").to_pylist())

    def all_edges(self) -> list[tuple[str, str, float]]:
        tbl = self.nodes.search().select(["id", "similar"]).limit(100_000_000).to_arrow()
        return [(src, e["id"], float(e["sim"])) for src, out in zip(tbl.column("id").to_pylist(),
                                                                    tbl.column("similar").to_pylist())
                for e in out or []]

    def replace_edges(self, edges: list[tuple[str, str, float]]) -> None:
        """The whole edge set in one commit: readers see the old set or the new one, never none."""
        new = _by_source(edges)
        ids = self.nodes.search().select(["id"]).limit(100_000_000).to_arrow().column("id").to_pylist()
        self._write_similar({i: new.get(i, {}) for i in ids})

    def cold_ids(self) -> set[str]:
        if COLD not in set(self.db.list_tables().tables):
            return set()
        return set(self.db.open_table(COLD).to_arrow().column("id").to_pylist())

    def mark_cold(self, ids: Sequence[str]) -> None:
        """Drop these nodes' vectors: vector search skips them, full-text search still finds them."""
        ids = [i for i in ids if i not in self.cold_ids()]
        if not ids:
            return
        names = set(self.db.list_tables().tables)
        cold = self.db.open_table(COLD) if COLD in names else self.db.create_table(COLD, schema=COLD_SCHEMA)
        cold.add([{"id": i} for i in ids])
        for start in range(0, len(ids), 500):
            where = "id IN (" + ", ".join(_quote(i) for i in ids[start:start + 500]) + ")"
            self.nodes.update(where=where, values={"pending": True, "vector": None})

    def optimize(self, cleanup_older_than: timedelta) -> dict[str, int]:
        """Compact every table and delete versions older than the margin; returns versions left."""
        out = {}
        for name in self.db.list_tables().tables:
            table = self.db.open_table(name)
            _optimize(table, cleanup_older_than)
            out[name] = len(table.list_versions())
        return out

    # -- searches (recall: memvault/ops/memory.py; edge candidates: tasks/index.py) -------------
    # Through LanceDB's async API on a background loop (see ``_run``): a recall is two rounds,
    # the two searches side by side, then one read of the lifted rows that can still rank.
    def _table(self) -> AsyncTable:
        if self._reader is None:
            async def open_nodes() -> AsyncTable:
                db = await lancedb.connect_async(self.uri, read_consistency_interval=timedelta(0))
                return await db.open_table(NODES)
            self._reader = _run(open_nodes())
        return self._reader

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
            return _records(await q.select(columns + ["_score"]).limit(k).to_arrow())
        except (ValueError, RuntimeError, OSError):
            return []  # no full-text index yet (an empty index), or a query the tokenizer rejects

    def lexical_neighbours(self, text: str, k: int) -> list[dict[str, Any]]:
        """The ``k`` nodes whose words best match ``text`` — the full-text half of a recall —
        with ``id``, ``pending`` and the vector (candidates for `similar` edges)."""
        return _run(self._fts(self._table(), text, k, ["id", "pending", "vector"]))

    def recall_search(self, vector: np.ndarray, query: str, k: int, nprobes: int = 20,
                      refine_factor: int = 5, where: str | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Vector top-``k`` (with ``_distance``) and full-text top-``k`` (with ``_score``),
        queried concurrently; both with ``RECALL_COLUMNS`` and the vector. ``where`` (see
        :func:`scope_filter`) prefilters both searches, so a scoped recall is still one round."""
        table = self._table()
        # No "NOT pending" prefilter: it scans the whole `pending` column per query (3–5 ms at
        # 100k nodes, ten times that at 1M). Pending nodes hold a zero or no vector, which
        # cosine search never returns; a pending row that slips through is dropped below.
        vq = table.query().nearest_to(vector.astype(np.float32)).distance_type("cosine")
        vq = (vq.nprobes(nprobes).refine_factor(refine_factor).select(RECALL_COLUMNS + ["vector", "_distance"]).limit(k))
        if where:
            vq = vq.where(where)

        async def both() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            vector_rows, fts_rows = await asyncio.gather(vq.to_arrow(),
                                                         self._fts(table, query, k, RECALL_COLUMNS + ["vector"], where))
            return [r for r in _records(vector_rows) if not r["pending"]], fts_rows

        return _run(both())

    def rows_of(self, ids: Sequence[str], scope: str | None = None) -> list[dict[str, Any]]:
        """``LIFTED_COLUMNS`` and the vector of each of ``ids`` that exists, in one read (the
        nodes that recall lifts and that can still rank; deleted ones are simply absent, and
        so are those outside ``scope``, a :func:`scope_filter`)."""
        if not ids:
            return []
        where = "id IN (" + ", ".join(_quote(i) for i in ids) + ")" + (f" AND ({scope})" if scope else "")
        query = self._table().query().where(where).select(LIFTED_COLUMNS + ["vector"]).limit(len(ids))
        return _records(_run(query.to_arrow()))


def scope_filter(project: str | None = None, source: str | None = None,
                 since: datetime | None = None, until: datetime | None = None) -> str | None:
    """The SQL prefilter of a scoped recall (None when unscoped).

    ``project`` matches a stored project exactly or by its last path component
    (``--project memvault`` finds ``/home/me/src/memvault``); ``since``/``until`` bound the
    document's start date (inclusive; documents without one, articles, are left out).
    """
    parts = []
    if project:
        p = project.rstrip("/")
        parts.append(f"(project = {_quote(p)} OR project LIKE {_quote('%/' + p)})"
                     if "/" not in p else f"project = {_quote(p)}")
    if source:
        parts.append(f"source = {_quote(source)}")
    if since is not None:
        parts.append(f"doc_date >= {_ts(since)}")
    if until is not None:
        parts.append(f"doc_date <= {_ts(until)}")
    return " AND ".join(parts) or None


def _ts(t: datetime) -> str:
    t = t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t
    return f"TIMESTAMP '{t.isoformat(sep=' ', timespec='microseconds')}'"


COLD = "cold"
COLD_SCHEMA = pa.schema([pa.field("id", pa.string())])


def now_utc() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)

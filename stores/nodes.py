"""The node index: LanceDB tables of nodes (with vectors and full text) and `similar` edges.

Derived state: rebuildable from the ledger and the vault (`memvault reindex`). Readers in
other processes open with ``read_consistency_interval=0`` so they see each new commit;
every write is one LanceDB version, so recall keeps reading the last committed one.
"""

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS

from memvault.errors import IndexMismatchError

NODES, EDGES, META = "nodes", "edges", "meta"


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
        pa.field("ref", pa.string()),
        pa.field("ord", pa.int32()),
        pa.field("vector", pa.list_(pa.float32(), dim)),
        pa.field("pending", pa.bool_()),
        pa.field("content_hash", pa.string()),
        pa.field("created_at", pa.timestamp("us")),
        pa.field("updated_at", pa.timestamp("us")),
        pa.field("importance", pa.float32()),
        pa.field("access", pa.int32()),
    ])


EDGE_SCHEMA = pa.schema([pa.field("src", pa.string()), pa.field("dst", pa.string()), pa.field("sim", pa.float32())])
META_SCHEMA = pa.schema([pa.field("key", pa.string()), pa.field("value", pa.string())])
LIGHT_COLUMNS = ["id", "doc", "doc_kind", "path", "parent", "kind", "title", "text", "ref", "ord", "pending",
                 "content_hash", "created_at", "updated_at", "importance", "access"]


class NodeIndex:
    """Narrow interface over the LanceDB node tables."""

    def __init__(self, uri: str, model_name: str, dim: int, create: bool = True) -> None:
        self.uri, self.model_name, self.dim = uri, model_name, dim
        self.db = lancedb.connect(uri, read_consistency_interval=timedelta(0))
        names = set(self.db.list_tables().tables)
        if NODES not in names:
            if not create:
                raise IndexMismatchError(f"no node index at {uri} — run `memvault run` or `memvault reindex`")
            self.db.create_table(NODES, schema=node_schema(dim))
            self.db.create_table(EDGES, schema=EDGE_SCHEMA)
            self.db.create_table(META, schema=META_SCHEMA).add(
                [{"key": "embedding_model", "value": model_name}, {"key": "dim", "value": str(dim)}]
            )
        self.nodes = self.db.open_table(NODES)
        self.edges = self.db.open_table(EDGES)
        self.meta = self.db.open_table(META)
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
        cols = LIGHT_COLUMNS + (["vector"] if with_vectors else [])
        where = "id IN (" + ", ".join(_quote(i) for i in ids) + ")"
        rows = self.nodes.search().where(where).select(cols).limit(len(ids)).to_list()
        order = {i: n for n, i in enumerate(ids)}
        return sorted(rows, key=lambda r: order.get(r["id"], 0))

    def doc_nodes(self, doc: str) -> list[dict[str, Any]]:
        rows = self.nodes.search().where(f"doc = {_quote(doc)}").select(LIGHT_COLUMNS).limit(1_000_000).to_list()
        return sorted(rows, key=lambda r: r["ord"])

    def pending_ids(self) -> list[str]:
        return [r["id"] for r in self.nodes.search().where("pending").select(["id"]).limit(1_000_000).to_list()]

    def recent(self, n: int) -> list[dict[str, Any]]:
        """The ``n`` most recently created nodes that have vectors (edge candidates)."""
        tbl = self.nodes.search().where("NOT pending").select(["id", "created_at", "vector"]).limit(10_000_000).to_arrow()
        if tbl.num_rows <= n:
            return tbl.to_pylist()
        idx = np.argsort(tbl.column("created_at").to_numpy())[-n:]
        return tbl.take(pa.array(idx)).to_pylist()

    def vector_search(self, vector: np.ndarray, k: int, where: str | None = None) -> list[dict[str, Any]]:
        q = self.nodes.search(vector.astype(np.float32), vector_column_name="vector").metric("cosine")
        q = q.where("NOT pending" + (f" AND ({where})" if where else ""), prefilter=True)
        return q.select(LIGHT_COLUMNS + ["vector"]).limit(k).to_list()

    def fts_search(self, query: str, k: int) -> list[dict[str, Any]]:
        if not query.strip():
            return []
        try:
            return self.nodes.search(query, query_type="fts", fts_columns="text").select(LIGHT_COLUMNS + ["vector", "_score"]).limit(k).to_list()
        except (ValueError, RuntimeError, OSError):
            # No FTS index yet (an empty index), or a query the tokenizer rejects.
            return []

    def neighbours(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        if not ids:
            return []
        where = "src IN (" + ", ".join(_quote(i) for i in ids) + ")"
        return self.edges.search().where(where).limit(100_000).to_list()

    # -- writes ---------------------------------------------------------------------------------
    def upsert(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            (self.nodes.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
             .execute(pa.Table.from_pylist(rows, schema=self.nodes.schema)))

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            where = "(" + ", ".join(_quote(i) for i in part) + ")"
            self.nodes.delete(f"id IN {where}")
            self.edges.delete(f"src IN {where} OR dst IN {where}")

    def add_edges(self, edges: list[tuple[str, str, float]]) -> None:
        if edges:
            self.edges.add([{"src": s, "dst": d, "sim": float(w)} for s, d, w in edges])

    def add_access(self, counts: dict[str, int]) -> None:
        """Fold access counts from the side log into the nodes (one write per run, not per query)."""
        for node in self.get(list(counts)):
            self.nodes.update(where=f"id = {_quote(node['id'])}", values={"access": int(node["access"] or 0) + counts[node["id"]]})

    def ensure_fts(self) -> None:
        """(Re)build the full-text index over node text; rows added later are still searched."""
        self.nodes.create_index("text", config=FTS(with_position=False), replace=True)


def now_utc() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)

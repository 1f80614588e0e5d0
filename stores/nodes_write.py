"""Writes to the node index and its upkeep: rows, `similar` edges, access counts, the search
indexes (full text, BTree, IVF-PQ), and maintenance's bulk reads and rewrites.

:class:`NodeWrites` is one half of :class:`stores.nodes.NodeIndex` (the class that opens the
tables); it only needs the open ``nodes`` table, the connection and the vector size.
"""

import warnings
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa
from lancedb.db import DBConnection
from lancedb.index import FTS, BTree, IvfPq
from lancedb.table import Table

from stores.nodes_schema import COLD, COLD_SCHEMA, SIMILAR_TYPE, by_source, card_fields, card_of, id_list


def _optimize(table: Table, older_than: timedelta, **kwargs: Any) -> None:
    """Compact, fold new rows into the indexes, and delete versions older than ``older_than``.

    LanceDB prunes before it folds (one more commit): a second pass, with nothing left to
    compact or fold, prunes the version that the fold replaced.
    """
    table.optimize(cleanup_older_than=older_than, **kwargs)
    table.optimize(cleanup_older_than=older_than, **kwargs)


# The ANN index is trained again once the table holds this many times the rows it was trained on.
ANN_REGROW = 4

# Full-text tokenizer: ICU word boundaries segment Chinese and Japanese (the default `simple`
# tokenizer keeps a run of CJK characters as one token, so no phrase within it matches),
# with lower-casing, ASCII folding (café = cafe; Cyrillic keeps its letters) and English
# stemming as before. Recorded in the meta table under FTS_KEY; an index built with another
# (older homes: `simple`) has its full-text indexes rebuilt in place by the next write's
# `ensure_indexes` — no vector is touched.
FTS_TOKENIZER = "icu"
FTS_KEY = "fts_tokenizer"
# The English stop words, given explicitly: with the ICU tokenizer LanceDB 0.40's built-in
# list also drops single digits ("May 7" would lose its 7), which the `simple` tokenizer
# kept. These are the words the built-in pipeline drops, found by probing it (a row per
# word, then a query per word), so English full text ranks as before.
FTS_STOP_WORDS = (
    "a about after again against all am an and are as at be been being below between both but by can did do doing "
    "down each few for from further had has have having he her here him how i if in into is it just me more most my "
    "myself no not now of off on or other our out over own same she should so some such than that the their then "
    "there these they this through to too under until up was we what when where which while who whom will with you "
    "yourself"
).split()


def arrow_rows(rows: list[dict[str, Any]], schema: pa.Schema, dim: int) -> pa.Table:
    """``rows`` as an Arrow table of ``schema``; the vectors (lists or numpy rows, None for a
    node without one) go into the fixed-size list column as one float32 block, not one
    Python float at a time."""
    rest = pa.schema([f for f in schema if f.name not in ("vector", "sentences")])
    table = pa.Table.from_pylist(rows, schema=rest)
    if "sentences" in schema.names:
        table = table.append_column(schema.field("sentences"), _sentence_lists(rows))
    values = [r.get("vector") for r in rows]
    present = [v is not None for v in values]
    flat = np.zeros((len(rows), dim), dtype=np.float32)
    if any(present):
        flat[present] = np.asarray([v for v in values if v is not None], dtype=np.float32).reshape(-1, dim)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1)), dim,
                                                mask=None if all(present) else pa.array([not p for p in present]))
    return table.add_column(schema.get_field_index("vector"), schema.field("vector"), vectors).select(schema.names)


def _sentence_lists(rows: list[dict[str, Any]]) -> pa.Array:
    """Each row's sentence vectors (an (n, dim) array, a list of vectors, or None) flattened
    into one float32 list per row: one block for the write, not one Python float at a time."""
    blocks = [None if r.get("sentences") is None or len(r["sentences"]) == 0
              else np.asarray(r["sentences"], dtype=np.float32).reshape(-1) for r in rows]
    sizes = [0 if b is None else len(b) for b in blocks]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    values = np.concatenate([b for b in blocks if b is not None]) if any(sizes) else np.zeros(0, np.float32)
    mask = pa.array([b is None for b in blocks])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, pa.float32()), mask=mask)


def complete(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as the table stores them: with their ``card`` (what recall reads, packed), and
    with full text over the node's own text where a row names no ``fts_text`` (rows built
    elsewhere — tests, the latency bench — may omit it)."""
    out = []
    for r in rows:
        full = {**r, "fts_text": r.get("fts_text") or r.get("text"), "similar": r.get("similar") or [],
                "kin": r.get("kin") or []}
        full["card"] = card_of(full)
        out.append(full)
    return out


class NodeWrites:
    """Every write to the nodes table (and the ``cold`` table), as :class:`NodeIndex` methods."""

    nodes: Table
    meta: Table
    db: DBConnection
    dim: int

    # -- writes ---------------------------------------------------------------------------------
    def upsert(self, rows: list[dict[str, Any]]) -> None:
        """Insert these rows, replacing those with the same ``id``, in one commit."""
        if rows:
            rows = complete(rows)
            (self.nodes.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
             .execute(arrow_rows(rows, self.nodes.schema, self.dim)))

    def append(self, rows: list[dict[str, Any]]) -> None:
        """Add rows whose ids are not in the index yet (a fresh index's bulk load), in one
        commit: unlike :meth:`upsert`, no join against the rows already there."""
        if rows:
            rows = complete(rows)
            self.nodes.add(arrow_rows(rows, self.nodes.schema, self.dim))

    def delete(self, ids: Iterable[str]) -> None:
        """Delete these nodes (500 ids per commit)."""
        ids = list(ids)
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            self.nodes.delete(f"id IN {id_list(part)}")
        # Edges into deleted nodes stay in their sources' rows until those are rewritten or
        # maintenance rebuilds the edges; recall skips a neighbour it cannot read.

    def set_edges(self, edges: list[tuple[str, str, float]]) -> None:
        """Make ``edges`` the `similar` edges of their sources (other rows keep theirs), in one
        commit. The index stage passes every edge of the rows it has just written."""
        self._write_similar(by_source(edges))

    def _write_similar(self, similar: dict[str, dict[str, float]]) -> None:
        """Set the `similar` column (and the card) of these rows, in one commit (a partial merge-insert)."""
        if not similar:
            return
        cards = self._cards(similar)
        edges = {i: [{"id": d, "sim": s} for d, s in sorted(e.items(), key=lambda kv: -kv[1])]
                 for i, e in similar.items() if i in cards}
        data = pa.Table.from_pylist(
            [{"id": i, "similar": e, "card": card_of({**cards[i], "similar": e})} for i, e in edges.items()],
            schema=pa.schema([pa.field("id", pa.string()), pa.field("similar", SIMILAR_TYPE),
                              pa.field("card", pa.string())]))
        if data.num_rows:
            self.nodes.merge_insert("id").when_matched_update_all().execute(data)

    def _cards(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The card fields of these nodes (those that exist), for a write that changes some of them."""
        wanted = set(ids)
        if len(wanted) > 5_000:  # most of the table (maintenance's edge rebuild): one scan, not IN lists
            parts = [self.nodes.search().select(["id", "card"]).limit(100_000_000).to_arrow()]
        else:
            order = sorted(wanted)
            parts = [self.nodes.search().where("id IN " + id_list(order[s:s + 500])).select(["id", "card"])
                     .limit(500).to_arrow() for s in range(0, len(order), 500)]
        return {i: card_fields(c) for part in parts
                for i, c in zip(part.column("id").to_pylist(), part.column("card").to_pylist())
                if i in wanted and c is not None}

    def add_access(self, counts: dict[str, int]) -> None:
        """Fold access counts from the side log into the nodes, in one commit (one write per
        run, not per query); the cards carry the new counts too."""
        counts = {i: int(n) for i, n in counts.items() if n > 0}
        cards = self._cards(counts)
        if not cards:
            return
        updated = [{**fields, "access": int(fields.get("access") or 0) + counts[i]} for i, fields in cards.items()]
        data = pa.Table.from_pylist([{"id": f["id"], "access": f["access"], "card": card_of(f)} for f in updated],
                                    schema=pa.schema([pa.field("id", pa.string()), pa.field("access", pa.int32()),
                                                      pa.field("card", pa.string())]))
        self.nodes.merge_insert("id").when_matched_update_all().execute(data)

    def ensure_indexes(self, ann_threshold: int, fold_fraction: float = 0.1) -> list[str]:
        """Create the indexes a write needs and return which ones were built or refreshed.

        Full text and a BTree on ``id`` (merge-insert and id lookups use it) always; the ANN
        index once the table holds ``ann_threshold`` rows. Rows written later are still
        searched (flat) until the indexes are folded: here when they exceed ``fold_fraction``
        of the indexed rows, otherwise by maintenance — so a small write never costs O(N).
        """
        have = {tuple(i.columns): i for i in self.nodes.list_indices()}
        done = []
        if ("text",) not in have or ("fts_text",) not in have or self.fts_tokenizer() != FTS_TOKENIZER:
            self.ensure_fts()
            done.append("fts")
        for column in ("id", "parent"):  # id lookups and merge-insert; children of a hit
            if (column,) not in have:
                self.nodes.create_index(column, config=BTree(), replace=True)
                done.append(column)
        rows = self.nodes.count_rows()
        ann = have.get(("vector",))
        if ann is None and rows >= max(ann_threshold, 256):
            self.create_ann(rows)
            done.append("ann")
        elif ann is not None and rows >= ANN_REGROW * self._ann_trained_rows(ann.num_indexed_rows or rows):
            # Folding keeps the partitions the index was trained with: grown 4×, they hold
            # 4× the rows each (a probe scans 4× the codes), so it is trained again at √N.
            self.create_ann(rows)
            done.append("ann")
        stale = [i for c, i in have.items() if not (c == ("vector",) and "ann" in done)]
        if any((i.num_unindexed_rows or 0) > fold_fraction * max(i.num_indexed_rows or 0, 1) for i in stale):
            self.nodes.optimize()  # folds new rows into every index; old versions kept (7-day default)
            done.append("fold")
        return done

    def create_ann(self, rows: int | None = None) -> None:
        """IVF-PQ over the vectors (cosine): ~√N partitions, 8 dimensions per PQ code; the
        number of rows it was trained on is kept in the meta table (``ann_rows``)."""
        rows = rows or self.nodes.count_rows()
        partitions = max(1, min(4096, int(rows ** 0.5)))
        sub_vectors = self.dim // 8 if self.dim % 8 == 0 else 1
        self.nodes.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=partitions,
                                                        num_sub_vectors=sub_vectors), replace=True)
        self._set_ann_rows(rows)

    def _ann_trained_rows(self, indexed: int) -> int:
        """The rows the ANN index was trained on; an index older than that record counts from
        the rows it indexes now (recorded, so that its growth counts from here)."""
        found = self.meta.search().where("key = 'ann_rows'").limit(1).to_list()
        if found:
            return int(found[0]["value"])
        self._set_ann_rows(indexed)
        return indexed

    def _set_ann_rows(self, rows: int) -> None:
        (self.meta.merge_insert("key").when_matched_update_all().when_not_matched_insert_all()
         .execute([{"key": "ann_rows", "value": str(rows)}]))

    def has_ann(self) -> bool:
        """Whether the vectors have an ANN index (below ``index.ann_threshold`` search is exact)."""
        return any(tuple(i.columns) == ("vector",) for i in self.nodes.list_indices())

    def ensure_fts(self) -> None:
        """(Re)build the full-text indexes over ``text`` and ``fts_text``; rows added later are still searched."""
        for column in ("text", "fts_text"):
            self.nodes.create_index(column, config=FTS(with_position=False, base_tokenizer=FTS_TOKENIZER,
                                                      custom_stop_words=FTS_STOP_WORDS), replace=True)
        (self.meta.merge_insert("key").when_matched_update_all().when_not_matched_insert_all()
         .execute([{"key": FTS_KEY, "value": FTS_TOKENIZER}]))

    def fts_tokenizer(self) -> str | None:
        """The tokenizer the full-text indexes were built with (None: before it was recorded)."""
        found = self.meta.search().where(f"key = '{FTS_KEY}'").limit(1).to_list()
        return str(found[0]["value"]) if found else None

    def fts_current(self) -> bool:
        """Whether the full-text indexes are built with today's tokenizer (see FTS_TOKENIZER)."""
        return self.fts_tokenizer() == FTS_TOKENIZER

    def purge_old_versions(self) -> None:
        """Drop every older version's files, so deleted text no longer sits on disk.

        A reader still on an older version at that moment may fail its query; the caller holds
        the writer lock and means it (a secret must leave the disk), so LanceDB's warning is
        silenced.
        """
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
        """Every `similar` edge as ``(src, dst, sim)``."""
        tbl = self.nodes.search().select(["id", "similar"]).limit(100_000_000).to_arrow()
        return [(src, e["id"], float(e["sim"])) for src, out in zip(tbl.column("id").to_pylist(),
                                                                    tbl.column("similar").to_pylist())
                for e in out or []]

    def replace_edges(self, edges: list[tuple[str, str, float]]) -> None:
        """The whole edge set in one commit: readers see the old set or the new one, never none."""
        new = by_source(edges)
        ids = self.nodes.search().select(["id"]).limit(100_000_000).to_arrow().column("id").to_pylist()
        self._write_similar({i: new.get(i, {}) for i in ids})

    def cold_ids(self) -> set[str]:
        """Nodes whose vectors maintenance dropped on purpose (see :meth:`mark_cold`)."""
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
            where = "id IN " + id_list(ids[start:start + 500])
            self.nodes.update(where=where, values={"pending": True, "vector": None, "sentences": None})
        cards = self._cards(ids)
        data = pa.Table.from_pylist([{"id": i, "card": card_of({**f, "pending": True})} for i, f in cards.items()],
                                    schema=pa.schema([pa.field("id", pa.string()), pa.field("card", pa.string())]))
        if data.num_rows:
            self.nodes.merge_insert("id").when_matched_update_all().execute(data)

    def optimize(self, cleanup_older_than: timedelta) -> dict[str, int]:
        """Compact every table and delete versions older than the margin; returns versions left."""
        out = {}
        for name in self.db.list_tables().tables:
            table = self.db.open_table(name)
            _optimize(table, cleanup_older_than)
            out[name] = len(table.list_versions())
        return out

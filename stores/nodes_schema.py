"""The node index's tables as data: the schemas, which columns each read takes, the SQL
pieces of a filter, and Arrow results turned into rows. No LanceDB handle lives here."""

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa

NODES, META, COLD = "nodes", "meta", "cold"
SIMILAR_TYPE = pa.list_(pa.struct([pa.field("id", pa.string()), pa.field("sim", pa.float32())]))


def node_schema(dim: int) -> pa.Schema:
    """The nodes table with ``dim``-dimensional vectors."""
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
        # A turn's first sentences, each embedded alone (``index.sentence_vectors``), one
        # ``dim`` block after another; null for a node of one sentence and for other kinds.
        # Recall weighs the best of them with the vector (``memvault.recall.scoring``).
        pa.field("sentences", pa.list_(pa.float32())),
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
        # What recall reads of a hit that never changes after the write (``CARD_FIELDS``),
        # packed as one JSON array: a search reads one column instead of fourteen (see
        # ``card_of``). The columns above stay the truth for filters, indexes and ``get``.
        pa.field("card", pa.string()),
    ])


META_SCHEMA = pa.schema([pa.field("key", pa.string()), pa.field("value", pa.string())])
LIGHT_COLUMNS = ["id", "doc", "doc_kind", "path", "parent", "kind", "title", "text", "ref", "ord", "pending",
                 "content_hash", "created_at", "updated_at", "importance", "access", "similar", "reply", "kin",
                 "project", "source", "doc_date"]
# What recall reads of a search hit: scoring, what it lifts, the block and citations. A
# search's cost is mostly its columns (each read of a hit's column is a random read per row:
# about half a millisecond per column at 100k nodes, three times that at 1M), so all of it is
# one packed column, ``card``: a search reads the card and the vector, and costs about what
# a search for ids alone does. The columns stay the truth for filters, indexes and ``get``;
# every write that changes a carded field in place (edges, access counts, a node gone cold)
# rewrites the card in the same write (``stores/nodes_write.py``).
CARD_FIELDS = ("id", "doc", "path", "kind", "title", "text", "ref", "created_at", "importance", "project", "source",
               "parent", "reply", "kin", "similar", "access", "pending")
LIFTED_COLUMNS = ["card"]
RECALL_COLUMNS = ["card"]
# What recall scores a candidate's meaning with: its vector and its turn's sentence vectors.
SCORED_COLUMNS = ["vector", "sentences"]


def _stored_time(value: Any) -> str | None:
    """A timestamp as the ``timestamp("us")`` columns store it: naive UTC, to the microsecond."""
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value.isoformat()


def card_of(row: Mapping[str, Any]) -> str:
    """``CARD_FIELDS`` of a row as one JSON array, each value as its column would read back
    (importance and edge weights rounded to float32, the creation time naive UTC)."""
    values = {f: row.get(f) for f in CARD_FIELDS}
    values["created_at"] = _stored_time(row.get("created_at"))
    values["importance"] = _f32(row.get("importance"))
    values["kin"] = list(row.get("kin") or [])
    values["similar"] = [{"id": e["id"], "sim": _f32(e["sim"])} for e in row.get("similar") or []]
    values["access"] = None if row.get("access") is None else int(row["access"])
    values["pending"] = None if row.get("pending") is None else bool(row["pending"])
    return json.dumps([values[f] for f in CARD_FIELDS], ensure_ascii=False, separators=(",", ":"))


def card_fields(card: str) -> dict[str, Any]:
    """The fields a ``card`` packs (the inverse of :func:`card_of`)."""
    values = json.loads(card)
    if values[_CREATED] is not None:
        values[_CREATED] = datetime.fromisoformat(values[_CREATED])
    return dict(zip(CARD_FIELDS, values))


def _f32(value: Any) -> float | None:
    return None if value is None else float(np.float32(value))


_CREATED = CARD_FIELDS.index("created_at")


def _unpack(rows: list[dict[str, Any]]) -> None:
    """Replace each row's ``card`` with the fields it packs."""
    for row in rows:
        card = row.pop("card", None)
        if card is not None:
            row.update(card_fields(card))


def records(table: pa.Table) -> list[dict[str, Any]]:
    """Rows of an Arrow result, the vector column as float32 numpy rows (a Python list of 384
    floats per row costs more than the read) and a ``card`` unpacked into its fields."""
    if "vector" not in table.column_names:
        rows: list[dict[str, Any]] = table.to_pylist()
        _unpack(rows)
        return rows
    vectors = table.column("vector").combine_chunks()
    dim = vectors.type.list_size
    flat = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    if len(flat) == len(vectors) * dim:
        matrix: Any = flat.reshape(-1, dim)
    else:  # rows without a vector (cold nodes) leave the flattened array short
        matrix = [v.values.to_numpy(zero_copy_only=False).astype(np.float32) if v.is_valid else None for v in vectors]
    sentences = _sentence_blocks(table, dim)
    rows = table.drop_columns(["vector"] + (["sentences"] if sentences is not None else [])).to_pylist()
    _unpack(rows)
    for row, vector in zip(rows, matrix):
        row["vector"] = vector
    if sentences is not None:
        for row, block in zip(rows, sentences):
            row["sentences"] = block
    return rows


def _sentence_blocks(table: pa.Table, dim: int) -> list[np.ndarray | None] | None:
    """The ``sentences`` column as one (n, dim) float32 matrix per row (None where null or
    empty); None when the result has no such column."""
    if "sentences" not in table.column_names:
        return None
    column = table.column("sentences").combine_chunks()
    # ``values`` and ``offsets`` index each other whatever slice of the column this is.
    flat = column.values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    offsets = column.offsets.to_numpy()
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    return [flat[start:end].reshape(-1, dim) if ok and end > start else None
            for ok, start, end in zip(valid, offsets[:-1].tolist(), offsets[1:].tolist())]


COLD_SCHEMA = pa.schema([pa.field("id", pa.string())])


def quote(value: str) -> str:
    """``value`` as an SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def id_list(ids: Iterable[str]) -> str:
    """``(id1, id2, …)`` for an ``id IN`` filter."""
    return "(" + ", ".join(quote(i) for i in ids) + ")"


def by_source(edges: Iterable[tuple[str, str, float]]) -> dict[str, dict[str, float]]:
    """``(src, dst, sim)`` edges as ``{src: {dst: sim}}`` (a repeated pair keeps the last weight)."""
    out: dict[str, dict[str, float]] = {}
    for src, dst, sim in edges:
        out.setdefault(src, {})[dst] = float(sim)
    return out


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
        parts.append(f"(project = {quote(p)} OR project LIKE {quote('%/' + p)})"
                     if "/" not in p else f"project = {quote(p)}")
    if source:
        parts.append(f"source = {quote(source)}")
    if since is not None:
        parts.append(f"doc_date >= {_ts(since)}")
    if until is not None:
        parts.append(f"doc_date <= {_ts(until)}")
    return " AND ".join(parts) or None


def _ts(t: datetime) -> str:
    t = t.astimezone(timezone.utc).replace(tzinfo=None) if t.tzinfo else t
    return f"TIMESTAMP '{t.isoformat(sep=' ', timespec='microseconds')}'"




def now_utc() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)

"""Contextual full-text search: a message is matched with its neighbouring turns, the text
shown stays the message alone, and an index built before the column existed is refused."""

from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from memvault.errors import IndexMismatchError
from memvault.markdown.tree import conversation_nodes
from stores.nodes import NodeIndex, node_schema
from memvault.stages.index import rows_for

DIM = 8


def _index(tmp_path: Path, turns: int) -> NodeIndex:
    msgs = [("m1", "Ann", "I went to the pottery workshop on Saturday.", None),
            ("m2", "Bo", "Oh nice, how was it?", None),
            ("m3", "Ann", "Yes, it was so relaxing!", None)]
    tree = conversation_nodes("k", "abcd", "Weekend", "2024-05-01", "locomo", msgs)
    rows = rows_for("conv:k", "conversation", tree, context_turns=turns)
    rng = np.random.default_rng(0)
    for r in rows:
        v = rng.standard_normal(DIM)
        r["vector"], r["pending"] = (v / np.linalg.norm(v)).astype(np.float32).tolist(), False
    nodes = NodeIndex(str(tmp_path / f"nodes{turns}.lance"), "test-model", DIM)
    nodes.upsert(rows)
    nodes.ensure_indexes(ann_threshold=10_000)
    return nodes


def _text_hits(nodes: NodeIndex, query: str) -> list[dict]:
    """The full-text half of a recall (what recall scores), message nodes only."""
    _, hits = nodes.recall_search(np.zeros(DIM, dtype=np.float32) + 1.0, query, 10)
    return [h for h in hits if h["kind"] == "message"]


def test_full_text_matches_a_message_through_its_neighbours(tmp_path: Path) -> None:
    nodes = _index(tmp_path, turns=1)
    hits = _text_hits(nodes, "pottery")
    # "Oh nice, how was it?" never says pottery; its window (the turn before) does…
    assert {h["ref"] for h in hits} == {"m1", "m2"}
    # …and what recall shows is still the message alone
    assert next(h for h in hits if h["ref"] == "m2")["text"] == "Bo: Oh nice, how was it?"
    assert "pottery" in nodes.get([next(h["id"] for h in hits if h["ref"] == "m2")])[0]["fts_text"]
    # without context, full text matches the message alone
    plain = _index(tmp_path, turns=0)
    assert {h["ref"] for h in _text_hits(plain, "pottery")} == {"m1"}


def test_an_index_without_fts_text_asks_for_reindex(tmp_path: Path) -> None:
    uri = str(tmp_path / "old.lance")
    old = pa.schema([f for f in node_schema(DIM) if f.name != "fts_text"])
    db = lancedb.connect(uri)
    db.create_table("nodes", schema=old)
    db.create_table("edges", schema=pa.schema([pa.field("src", pa.string())]))
    db.create_table("meta", schema=pa.schema([pa.field("key", pa.string()), pa.field("value", pa.string())])).add(
        [{"key": "embedding_model", "value": "test-model"}])
    with pytest.raises(IndexMismatchError, match="memvault reindex"):
        NodeIndex(uri, "test-model", DIM)

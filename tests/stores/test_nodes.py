"""The node index (LanceDB): the ANN index past a threshold and kept incremental, edges kept in
the node rows, and an index built by an older memvault refused with the fix."""

from pathlib import Path

import numpy as np
import pytest

from stores.nodes import NodeIndex
from tests.helpers import synthetic_rows

DIM = 16


def test_ann_index_is_built_past_the_threshold_and_kept_incremental(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    nodes = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", DIM)
    rows = synthetic_rows(300, rng)
    nodes.upsert(rows)
    nodes.set_edges([("n1", "n2", 0.8)])
    assert [(s, d, round(w, 3)) for s, d, w in nodes.all_edges()] == [("n1", "n2", 0.8)]  # kept in n1's row
    assert sorted(nodes.ensure_indexes(ann_threshold=1000)) == ["fts", "id", "parent"]
    assert not nodes.has_ann()
    assert nodes.ensure_indexes(ann_threshold=1000) == []  # nothing new: nothing to do
    assert nodes.ensure_indexes(ann_threshold=300) == ["ann"]
    assert nodes.has_ann()
    # ANN search with re-ranking (recall's path) still finds a stored vector first
    target = np.asarray(rows[42]["vector"], dtype=np.float32)
    assert nodes.recall_search(target, "", 5)[0][0]["id"] == "n42"
    # a small write is searched before it is indexed and costs no index rebuild
    nodes.upsert(synthetic_rows(10, rng, start=300))
    assert nodes.ensure_indexes(ann_threshold=300) == []
    new = nodes.get(["n307"], with_vectors=True)[0]
    vector_hits, text_hits = nodes.recall_search(np.asarray(new["vector"], dtype=np.float32), "note 305", 3)
    assert vector_hits[0]["id"] == "n307" and text_hits[0]["id"] == "n305"
    assert [h["id"] for h in nodes.lexical_neighbours("note 305", 3)][:1] == ["n305"]  # the index stage's use
    # past the fold fraction, new rows are folded into the existing indexes
    nodes.upsert(synthetic_rows(60, rng, start=310))
    assert nodes.ensure_indexes(ann_threshold=300) == ["fold"]
    assert nodes.has_ann()


def test_an_index_built_by_an_older_memvault_is_refused_with_the_fix(tmp_path: Path) -> None:
    import lancedb
    import pyarrow as pa

    from memvault.errors import IndexMismatchError
    from stores.nodes import META_SCHEMA, node_schema

    uri = str(tmp_path / "nodes.lance")
    old = pa.schema([f for f in node_schema(DIM) if f.name not in ("similar", "reply", "kin")])
    db = lancedb.connect(uri)
    db.create_table("nodes", schema=old)
    db.create_table("meta", schema=META_SCHEMA).add([{"key": "embedding_model", "value": "test-model"}])
    with pytest.raises(IndexMismatchError, match=r"older memvault \(no `similar` column\).*memvault reindex"):
        NodeIndex(uri, "test-model", DIM, create=False)

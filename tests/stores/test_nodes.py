"""The node index (LanceDB): the ANN index past a threshold and kept incremental, edges kept in
the node rows, and an index built by an older memvault refused with the fix."""

from pathlib import Path

import numpy as np
import pytest

from stores.nodes import NodeIndex
from tests.helpers import synthetic_rows

DIM = 16


def _vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _row(node: str, text: str, **fields: object) -> dict:
    from datetime import datetime

    return {"id": node, "doc": "conv:c", "doc_kind": "conversation", "path": f"/conv:c/e1/{node}", "parent": None,
            "kind": "message", "title": text[:20], "text": text, "ref": node, "ord": 0, "pending": False,
            "content_hash": node, "created_at": datetime(2025, 1, 1), "updated_at": datetime(2025, 1, 1),
            "importance": 0.3, "access": 0, **fields}


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
    # the index stage's edge candidates: one batched search, exact cosines, unindexed rows too
    probe = np.asarray([new["vector"], rows[42]["vector"]], dtype=np.float32)
    near = nodes.nearest_many(probe, 5)
    assert [max(n, key=n.get) for n in near] == ["n307", "n42"]
    assert near[0]["n307"] == pytest.approx(1.0, abs=1e-5)
    assert all(abs(s - float(np.asarray(nodes.get([i], with_vectors=True)[0]["vector"]) @ probe[0])) < 1e-5
               for i, s in near[0].items())
    # past the fold fraction, new rows are folded into the existing indexes
    nodes.upsert(synthetic_rows(60, rng, start=310))
    assert nodes.ensure_indexes(ann_threshold=300) == ["fold"]
    assert nodes.has_ann()


def test_the_ann_index_is_trained_again_once_the_table_grew_fourfold(tmp_path: Path) -> None:
    # Folding new rows keeps the partitions trained at the threshold; a home that grows from
    # there to a million nodes must not keep √threshold partitions of ever more rows each.
    rng = np.random.default_rng(5)
    nodes = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", DIM)
    nodes.upsert(synthetic_rows(300, rng))
    assert "ann" in nodes.ensure_indexes(ann_threshold=300)

    def trained() -> int:
        return int(nodes.meta.search().where("key = 'ann_rows'").limit(1).to_list()[0]["value"])

    assert trained() == 300
    nodes.upsert(synthetic_rows(600, rng, start=300))  # 900 rows: folded, not retrained
    assert nodes.ensure_indexes(ann_threshold=300) == ["fold"] and trained() == 300
    nodes.upsert(synthetic_rows(300, rng, start=900))  # 1,200 = 4 × 300
    assert nodes.ensure_indexes(ann_threshold=300) == ["ann", "fold"] and trained() == 1200  # full text folded too
    target = np.asarray(nodes.get(["n1100"], with_vectors=True)[0]["vector"], dtype=np.float32)
    assert nodes.recall_search(target, "", 5)[0][0]["id"] == "n1100"
    # An index from before the record counts its growth from the rows it indexes when first seen.
    nodes.meta.delete("key = 'ann_rows'")
    assert nodes.ensure_indexes(ann_threshold=300) == [] and trained() == 1200


def test_nearest_many_below_the_ann_threshold_is_exact_and_skips_pending_nodes(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    nodes = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", DIM)
    rows = synthetic_rows(120, rng)
    rows[7]["pending"], rows[7]["vector"] = True, [0.0] * DIM
    nodes.append(rows)
    vectors = np.asarray([r["vector"] for r in rows], dtype=np.float32)
    queries = vectors[[3, 8, 50]]
    near = nodes.nearest_many(queries, 6, batch=2)  # two searches: the batches join up
    for q, found in zip(queries, near):
        exact = vectors @ q
        exact[7] = -np.inf  # pending: never a candidate
        assert set(found) == {f"n{i}" for i in np.argsort(-exact)[:6]}
    assert nodes.nearest_many(queries, 0) == [{}, {}, {}]


def test_searches_print_no_lance_deprecation_warning(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # lance logs on the process's stderr (fd 2) when a vector search's columns leave out
    # `_distance`; the index stage's searches and recall's must not (a user sees it in `memvault run`)
    rng = np.random.default_rng(6)
    nodes = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", DIM)
    rows = synthetic_rows(300, rng)
    nodes.append(rows)
    queries = np.asarray([r["vector"] for r in rows[:3]], dtype=np.float32)
    for ann in (False, True):
        if ann:
            nodes.ensure_indexes(ann_threshold=300)
        capfd.readouterr()
        assert len(nodes.nearest_many(queries, 3)) == 3 and nodes.nearest_many(queries[:1], 3)[0]
        vector_hits, text_hits = nodes.recall_search(queries[0], "note 3", 3)
        assert vector_hits and text_hits
        assert nodes.rows_of(["n1", "n2"])
        err = capfd.readouterr().err
        assert "Deprecation" not in err and "WARN" not in err, err


def test_prewarm_loads_every_search_index_and_searches_answer_the_same(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    nodes = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", DIM)
    assert nodes.prewarm() == []  # no index yet: nothing to load
    rows = synthetic_rows(300, rng)
    nodes.append(rows)
    nodes.ensure_indexes(ann_threshold=300)
    query = np.asarray(rows[5]["vector"], dtype=np.float32)

    def ids() -> tuple[list[str], list[str]]:
        vector_hits, text_hits = nodes.recall_search(query, "note 7", 10)
        return [r["id"] for r in vector_hits], [r["id"] for r in text_hits]

    before = ids()
    assert sorted(nodes.prewarm()) == sorted(i.name for i in nodes.nodes.list_indices())
    assert {"vector_idx", "text_idx", "fts_text_idx"} <= set(nodes.prewarm())
    assert ids() == before and before[0][0] == "n5" and before[1][0] == "n7"


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


@pytest.mark.parametrize("column", ["card", "sentences"])  # the packed recall card; the turns' sentence vectors
def test_an_index_without_a_newer_column_is_refused_with_the_fix(tmp_path: Path, column: str) -> None:
    import lancedb
    import pyarrow as pa

    from memvault.errors import IndexMismatchError
    from stores.nodes import META_SCHEMA, node_schema

    uri = str(tmp_path / "nodes.lance")
    db = lancedb.connect(uri)
    db.create_table("nodes", schema=pa.schema([f for f in node_schema(DIM) if f.name != column]))
    db.create_table("meta", schema=META_SCHEMA).add([{"key": "embedding_model", "value": "test-model"}])
    with pytest.raises(IndexMismatchError, match=rf"older memvault \(no `{column}` column\).*memvault reindex"):
        NodeIndex(uri, "test-model", DIM, create=False)


def test_a_turns_sentence_vectors_are_stored_and_read_back_with_each_search(tmp_path: Path) -> None:
    # Recall reads them beside the vector from both searches (a lifted node is not measured
    # against the query: its rows come without them); a node without them (one sentence,
    # another kind, gone cold) reads None.
    idx = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", DIM)
    said = np.stack([_vec(1), _vec(2), _vec(3)])
    idx.upsert([_row("two", "Ann: I painted a lake sunrise. It was cold.", vector=_vec(0), sentences=said),
                _row("one", "Bo: nice", vector=_vec(4))])
    idx.ensure_indexes(ann_threshold=1000)
    vector_hits, fts_hits = idx.recall_search(_vec(0), "lake sunrise", 5)
    by_id = {r["id"]: r for r in vector_hits}
    assert np.allclose(by_id["two"]["sentences"], said) and by_id["two"]["sentences"].shape == (3, DIM)
    assert by_id["one"]["sentences"] is None
    assert np.allclose(fts_hits[0]["sentences"], said)
    assert "sentences" not in idx.rows_of(["two"])[0]
    idx.mark_cold(["two"])
    assert idx.text_search("lake sunrise", 5)[0]["sentences"] is None


def test_recall_reads_a_hit_through_its_card_as_the_columns_hold_it(tmp_path: Path) -> None:
    from datetime import datetime, timedelta, timezone

    from stores.nodes import LIFTED_COLUMNS

    rng = np.random.default_rng(5)
    nodes = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", DIM)
    rows = synthetic_rows(20, rng)
    # values a card must carry exactly as their columns read back: a tz-aware time (stored as
    # naive UTC), an importance that float32 rounds, links, quotes and non-ASCII text
    rows[3].update(created_at=datetime(2024, 5, 1, 12, 30, 1, 123456, tzinfo=timezone(timedelta(hours=2))),
                   importance=0.1, kin=["n4", "n5"], reply="n4", parent="n0", project="/src/mv", source="claude",
                   text='Ünïcode "quoted" — text', title="t'3")
    nodes.upsert(rows)
    nodes.set_edges([("n3", "n7", 0.8)])
    nodes.add_access({"n3": 2})
    full = nodes.get(["n3"], with_vectors=True)[0]
    vector_hits, _ = nodes.recall_search(np.asarray(full["vector"], dtype=np.float32), "", 3)
    hit = vector_hits[0]
    assert hit["id"] == "n3" and "card" not in hit
    for field in ("doc", "path", "kind", "title", "text", "ref", "created_at", "importance", "project", "source",
                  "parent", "reply", "kin", "access", "pending"):
        assert hit[field] == full[field], field
    assert hit["created_at"] == datetime(2024, 5, 1, 10, 30, 1, 123456)
    assert [(e["id"], round(e["sim"], 3)) for e in hit["similar"]] == [("n7", 0.8)]  # edges written later
    lifted = nodes.rows_of(["n3", "n9", "gone"])
    assert {r["id"] for r in lifted} == {"n3", "n9"}
    assert LIFTED_COLUMNS == ["card"] and all("card" not in r for r in lifted)
    assert next(r for r in lifted if r["id"] == "n3")["access"] == 2
    # every write that changes a carded field in place rewrites the card with it
    nodes.mark_cold(["n9"])
    nodes.set_edges([("n3", "n8", 0.75), ("n3", "n7", 0.9)])
    nodes.add_access({"n3": 1})
    cold, n3 = sorted(nodes.rows_of(["n9", "n3"]), key=lambda r: r["id"], reverse=True)
    assert cold["pending"] is True and cold["vector"] is None
    assert n3["access"] == 3 and [e["id"] for e in n3["similar"]] == ["n7", "n8"]
    assert {k: n3[k] for k in ("access", "similar", "pending")} == \
        {k: nodes.get(["n3"])[0][k] for k in ("access", "similar", "pending")}

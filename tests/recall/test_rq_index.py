"""Index-stage work for recall quality and scale: contextual message embeddings, exchanges of
named speakers, the ANN index past a threshold, and folding the access side log."""

import threading
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memvault.markdown.tree import conversation_nodes
from memvault.recall.access import ACCESS_LOG, append_access, fold_access
from stores.nodes import NodeIndex
from tasks.index import context_texts, node_hash, rows_for

DIM = 16


def test_named_speakers_get_one_exchange_per_round() -> None:
    msgs = [("D1:1", "Ann", "Hi Bo!", None), ("D1:2", "Bo", "Hey Ann.", None),
            ("D1:3", "Ann", "I adopted a dog.", None), ("D1:4", "Bo", "What breed?", None),
            ("D1:5", "Bo", "Send a photo!", None)]
    nodes = conversation_nodes("k", "s1", "Chat", "2023-05-08", "locomo", msgs)
    exchanges = [n for n in nodes if n.kind == "exchange"]
    assert len(exchanges) == 2
    assert exchanges[1].text == "Ann: I adopted a dog.\nBo: What breed?\nBo: Send a photo!"
    assert [n.ref for n in nodes if n.parent == exchanges[1].path] == ["D1:3", "D1:4", "D1:5"]


def test_message_embeddings_carry_their_neighbours_and_date() -> None:
    msgs = [("m1", "user", "How do I rebuild the index?", None), ("m2", "assistant", "Run reindex.", None),
            ("m3", "user", "Did it work for you?", None), ("m4", "assistant", "Yes, it was fine.", None)]
    tree = conversation_nodes("k", "abcd", "Reindexing", "2024-05-01", "codex", msgs)
    contexts = context_texts(tree, 1)
    m4 = next(n for n in tree if n.ref == "m4")
    assert contexts[m4.path] == "Reindexing · 2024-05-01\nuser: Did it work for you?\nassistant: Yes, it was fine."
    rows = {r["ref"]: r for r in rows_for("conv:k", "conversation", tree)}
    assert rows["m4"]["embed_text"] == contexts[m4.path]
    assert rows["m4"]["text"] == "assistant: Yes, it was fine."  # what recall shows stays the message
    # a neighbour's edit re-embeds the message next to it, and only it and its other neighbour
    edited = [*msgs[:2], ("m3", "user", "Did the rebuild work?", None), msgs[3]]
    again = {r["ref"]: r for r in rows_for("conv:k", "conversation", conversation_nodes(
        "k", "abcd", "Reindexing", "2024-05-01", "codex", edited))}
    changed = {ref for ref in rows if ref and rows[ref]["content_hash"] != again[ref]["content_hash"]}
    assert changed == {"m2", "m3", "m4"}
    # context off: the message and the turns it links to (by id), never their words
    plain = {r["ref"]: r for r in rows_for("conv:k", "conversation", tree, context_turns=0)}
    plain_again = {r["ref"]: r for r in rows_for("conv:k", "conversation", conversation_nodes(
        "k", "abcd", "Reindexing", "2024-05-01", "codex", edited), context_turns=0)}
    assert {ref for ref in plain if ref and plain[ref]["content_hash"] != plain_again[ref]["content_hash"]} == {"m3"}
    assert plain["m4"]["content_hash"] != node_hash(m4)  # m4 links to m3, its exchange's other turn


def synthetic_rows(n: int, rng: np.random.Generator, start: int = 0) -> list[dict]:
    centers = rng.standard_normal((8, DIM))
    now = datetime(2025, 1, 1)
    rows = []
    for i in range(start, start + n):
        v = centers[i % 8] + 0.3 * rng.standard_normal(DIM)
        rows.append({"id": f"n{i}", "doc": f"d{i // 10}", "doc_kind": "article", "path": f"/d{i // 10}#p{i}",
                     "parent": f"n{(i // 10) * 10}" if i % 10 else None, "kind": "paragraph", "title": f"t{i}",
                     "text": f"word{i % 8} topic{i % 5} note {i}", "ref": None, "ord": i % 10,
                     "vector": (v / np.linalg.norm(v)).astype(np.float32).tolist(), "pending": False,
                     "content_hash": str(i), "created_at": now + timedelta(minutes=i), "updated_at": now,
                     "importance": 0.5, "access": 0})
    return rows


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


def test_access_log_folds_into_counts_and_keeps_appends_made_during_the_fold(tmp_path: Path) -> None:
    nodes = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", DIM)
    nodes.upsert(synthetic_rows(20, np.random.default_rng(5)))
    log = tmp_path / ACCESS_LOG
    append_access(log, ["n1", "n2"])
    append_access(log, ["n1"])
    with log.open("a") as fh:
        fh.write("not json\n")

    def apply(counts: dict[str, int]) -> None:
        append_access(log, ["n3"])  # a recall that lands while the fold runs
        nodes.add_access(counts)

    assert fold_access(log, apply) == {"nodes": 2, "accesses": 3, "malformed": 1}
    access = {r["id"]: r["access"] for r in nodes.get(["n1", "n2", "n3"])}
    assert access == {"n1": 2, "n2": 1, "n3": 0}
    assert log.read_text().count("n3") == 1  # kept for the next fold
    assert fold_access(log, nodes.add_access)["accesses"] == 1
    assert nodes.get(["n3"])[0]["access"] == 1
    assert not log.exists() and fold_access(log, nodes.add_access)["accesses"] == 0


def test_a_failed_fold_is_retried_not_lost(tmp_path: Path) -> None:
    log = tmp_path / ACCESS_LOG
    append_access(log, ["a", "b"])

    def broken(counts: dict[str, int]) -> None:
        raise OSError("index unavailable")

    with pytest.raises(OSError):
        fold_access(log, broken)
    append_access(log, ["a"])  # a new log beside the one left to retry
    seen: list[dict[str, int]] = []
    fold_access(log, seen.append)
    fold_access(log, seen.append)
    assert seen == [{"a": 1, "b": 1}, {"a": 1}]


def test_concurrent_appends_and_folds_lose_nothing(tmp_path: Path) -> None:
    log = tmp_path / ACCESS_LOG
    total: dict[str, int] = {}
    lock = threading.Lock()

    def apply(counts: dict[str, int]) -> None:
        with lock:
            for k, v in counts.items():
                total[k] = total.get(k, 0) + v

    def writer(name: str) -> None:
        for _ in range(300):
            append_access(log, [name])

    threads = [threading.Thread(target=writer, args=(f"w{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        fold_access(log, apply)
    for t in threads:
        t.join()
    fold_access(log, apply)
    assert total == {f"w{i}": 300 for i in range(4)}


def test_each_turn_names_the_turn_that_replies_to_it() -> None:
    long_turn = "This one is long. " * 80  # split into pieces: still one turn
    msgs = [("D1:1", "Ann", "Hi Bo, what's your best camping memory?", None), ("D1:2", "Bo", long_turn, None),
            ("D1:3", "Ann", "Wow.", None)]
    tree = conversation_nodes("k", "s1", "Chat", "2023-05-08", "test", msgs)
    rows = rows_for("conv:k", "conversation", tree)
    by_ref: dict[str, list[dict]] = {}
    for r in rows:
        if r["kind"] == "message":
            by_ref.setdefault(r["ref"], []).append(r)
    assert len(by_ref["D1:2"]) > 1
    first = {ref: pieces[0]["id"] for ref, pieces in by_ref.items()}
    assert by_ref["D1:1"][0]["reply"] == first["D1:2"]
    assert all(p["reply"] == first["D1:3"] for p in by_ref["D1:2"])  # every piece: the next turn
    assert by_ref["D1:3"][0]["reply"] is None
    assert all(r["reply"] is None for r in rows if r["kind"] != "message")


def test_a_grown_conversation_rewrites_the_turns_whose_links_changed(tmp_path: Path) -> None:
    from tasks.index import sync_doc

    msgs = [("m1", "user", "Which port does the NAS use?", None), ("m2", "assistant", "Port 5432.", None)]
    nodes = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", DIM)
    first = rows_for("conv:k", "conversation", conversation_nodes("k", "abcd", "NAS", None, "codex", msgs), 0)
    for r in first:
        r["vector"], r["pending"] = [0.0] * DIM, True
    nodes.upsert([{k: v for k, v in r.items() if k != "embed_text"} for r in first])
    grown = [*msgs, ("m3", "assistant", "And 8007 for the web UI.", None)]
    again = rows_for("conv:k", "conversation", conversation_nodes("k", "abcd", "NAS", None, "codex", grown), 0)
    changed, gone = sync_doc(nodes, "conv:k", again)
    by_id = {r["id"]: r for r in again}
    # m2 gains a reply and a sibling, m1 a sibling, the exchange a message; m3 is new
    assert {r["ref"] or r["kind"] for r in changed} == {"m1", "m2", "m3", "exchange"} and gone == []
    m2 = next(r for r in changed if r["ref"] == "m2")
    assert by_id[m2["reply"]]["ref"] == "m3"


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

"""Index-stage work for recall quality: contextual message embeddings, exchanges of named
speakers, reply links between turns, and folding the access side log into the index."""

import threading
from pathlib import Path

import numpy as np
import pytest

from memvault.markdown.tree import conversation_nodes
from memvault.recall.access import ACCESS_LOG, append_access, fold_access
from stores.nodes import NodeIndex
from memvault.stages.index import context_texts, node_hash, rows_for
from tests.helpers import synthetic_rows

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
    from memvault.stages.index import sync_doc

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


def test_a_write_links_each_new_node_to_its_most_similar_nodes_in_one_commit(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from memvault.stages.index import write_index

    rng = np.random.default_rng(9)
    nodes = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", DIM)
    old = synthetic_rows(200, rng)
    nodes.append(old)
    nodes.ensure_indexes(ann_threshold=10_000)
    new = synthetic_rows(15, rng, start=200)  # under the fold fraction: no index refresh
    vectors = {r["id"]: np.asarray(r["vector"], dtype=np.float32) for r in old + new}

    class Embedder:
        dim = DIM

        def embed(self, texts: list[str]) -> np.ndarray:
            return np.stack([vectors[t] for t in texts])

    for r in new:
        r["embed_text"], r["vector"], r["pending"] = r["id"], None, True
    settings = SimpleNamespace(similar_threshold=0.72, sentence_vectors=4, max_similar=3, recent_candidates=10, fts_candidates=15,
                               ann_nprobes=20, ann_threshold=10_000)
    version = nodes.nodes.version
    write_index(nodes, Embedder(), new, [], settings)
    assert nodes.nodes.version == version + 1  # rows and their edges: one commit
    by_id = {r["id"]: r for r in nodes.get([r["id"] for r in new])}
    everyone = np.stack(list(vectors.values()))
    ids = list(vectors)
    for r in new:
        edges = by_id[r["id"]]["similar"]
        assert len(edges) <= 3 and all(e["sim"] >= 0.72 for e in edges)
        assert all(e["id"] not in (r["id"], r["parent"]) for e in edges)
        # the best candidates are the exact best of all nodes (old and new) on this small index
        exact = sorted(((float(everyone[j] @ vectors[r["id"]]), i) for j, i in enumerate(ids)
                        if i not in (r["id"], r["parent"])), reverse=True)
        want = [i for s, i in exact[:3] if s >= 0.72]
        assert [e["id"] for e in edges] == want
        assert [round(e["sim"], 4) for e in edges] == [round(s, 4) for s, i in exact[:len(want)]]


def test_embed_rows_sends_texts_of_like_length_together_and_reports_progress() -> None:
    from memvault.stages.index import embed_rows

    rows = [{"embed_text": "w " * n, "title": "", "text": ""} for n in [3, 300, 7, 150, 1] * 60]
    calls: list[list[str]] = []
    steps: list[tuple[str, int]] = []

    class Embedder:
        def embed(self, texts: list[str]) -> np.ndarray:
            calls.append(texts)
            if len(calls) == 2:
                raise RuntimeError("server gone")
            return np.stack([np.full(4, len(t), dtype=np.float32) for t in texts])

    class Sink:
        def begin(self, total: int, label: str = "") -> None:
            steps.append(("begin", total))

        def advance(self, amount: int, label: str = "") -> None:
            steps.append(("advance", amount))

        def done(self) -> None:
            steps.append(("done", 0))

    failed = embed_rows(Embedder(), rows, 4, Sink())
    # Longest first across the whole write: each batch spans few lengths, so little padding.
    assert [len(t) for c in calls for t in c] == sorted((len(r["embed_text"]) for r in rows), reverse=True)
    assert failed == len(calls[1])  # the failed batch stays pending, the others are filled
    assert sum(r["pending"] for r in rows) == failed
    assert all(r["vector"][0] == len(r["embed_text"]) for r in rows if not r["pending"])
    assert steps[0] == ("begin", len(rows)) and steps[-1] == ("done", 0)
    assert sum(n for kind, n in steps if kind == "advance") == len(rows)


def test_a_turn_of_several_sentences_has_its_first_sentences_embedded_one_by_one() -> None:
    from memvault.stages.index_rows import embed_rows, sentence_texts

    turn = {"kind": "message", "text": "Ann: I went to the lake. I painted the sunrise there! Was it cold? Yes. Very."}
    assert sentence_texts(turn, 3) == ["Ann: I went to the lake.", "Ann: I painted the sunrise there!", "Ann: Was it cold?"]
    assert sentence_texts(turn, 0) == []
    assert sentence_texts({"kind": "message", "text": "Bo: Nice one, Ann."}, 4) == []  # its vector says it already
    assert sentence_texts({"kind": "paragraph", "text": "One. Two."}, 4) == []

    class Embedder:
        def embed(self, texts: list[str]) -> np.ndarray:
            return np.stack([np.full(4, len(t), dtype=np.float32) for t in texts])

    rows = [{"kind": "message", "title": "t", "text": turn["text"], "embed_text": "context " + turn["text"]},
            {"kind": "message", "title": "t", "text": "Bo: Nice one, Ann.", "embed_text": "context"}]
    assert embed_rows(Embedder(), rows, 4, sentences=2) == 0
    assert rows[0]["vector"][0] == len(rows[0]["embed_text"]) and not rows[0]["pending"]
    assert [v[0] for v in rows[0]["sentences"]] == [len("Ann: I went to the lake."), len("Ann: I painted the sunrise there!")]
    assert rows[1]["sentences"] is None and not rows[1]["pending"]


def test_an_exchange_is_embedded_as_the_chunk_stage_rendered_it() -> None:
    # The index stage's exchange vectors come from the embedder's cache only while both
    # stages embed the very same text; a change to either side would embed every exchange
    # twice a run again (bench/index_rate.py).
    from memvault.stages.chunk import exchanges, render
    from stores.rows import MessageRow

    said = [("user", "How do I rebuild the index?"), ("assistant", "Run `memvault reindex`.\n\nIt takes a minute."),
            ("user", "And the vault?"), ("assistant", "Untouched.")]
    ledger_rows = [MessageRow(native_id=f"m{i}", parent_native_id=None, seq=i, role=role, kind="text", text=text,
                              timestamp=None, low_value=False) for i, (role, text) in enumerate(said)]
    tree = conversation_nodes("k", "abcd", "Reindexing", "2024-05-01", "codex",
                              [(f"m{i}", role, text, None) for i, (role, text) in enumerate(said)])
    rows = [r for r in rows_for("conv:k", "conversation", tree) if r["kind"] == "exchange"]
    assert [r["embed_text"] for r in rows] == [render(g) for g in exchanges(ledger_rows)]
    # full-text search still matches the exchange's own text, not the embedding text
    assert [r["fts_text"] for r in rows] == [r["text"] for r in rows]

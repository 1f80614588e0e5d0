"""Changing the embedder never mixes vectors: recall keeps answering from the old index (by
full text when its embedder is not at hand), status says what to run, `memvault reindex`
builds a new index with the new embedder and swaps only when done, and a server that is
down or answers another dimension stops the rebuild with the old index still live and no
half-built one left. Real ledger, real LanceDB, a real HTTP server on loopback."""

import json
from pathlib import Path

import pytest

from memvault.errors import EmbeddingServerError
from memvault.ops.memory import MemoryService
from memvault.ops.prompt_recall import evaluate
from memvault.ops.reindex import rebuild_index
from memvault.ops.status import gather_status
from memvault.config.settings import FP32_MODEL, INDEX_EMBEDDER_FILE, Settings, load_settings
from memvault.embeddings import INT8_NAME
from stores.ledger import Ledger
from stores.location import index_uri
from stores.nodes import NodeIndex
from memvault.stages.ingest import ingest_roots
from tests.fake_embeddings import FakeServer, fake_embeddings_server
from tests.helpers import cc_session

TURNS = [
    "when does the postgres backup run?",
    "Nightly at three, kept for thirty days.",
    "我们讨论了数据库备份的时间安排",
    "好的，每天凌晨三点运行备份。",
    "明日の会議は東京本社で午後三時に始まります",
    "了解しました。資料を準備します。",
]
PROMPT = "how long are the postgres backups kept?"


def _settings(home: Path, url: str, model: str) -> Settings:
    return load_settings(home, embeddings={"url": url, "model": model, "retries": 1})


@pytest.fixture
def ingested(home: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "transcripts" / "proj"
    folder.mkdir(parents=True)
    (folder / "s1.jsonl").write_text(cc_session("S1", TURNS), encoding="utf-8")
    settings = load_settings(home)
    ledger = Ledger(settings.ledger_path)
    try:
        result = ingest_roots(ledger, settings, [("claude-code", folder.parent)])
    finally:
        ledger.close()
    assert result.messages_new == len(TURNS)
    return home


def _lance_dirs(settings: Settings) -> list[str]:
    return sorted(p.name for p in settings.state_dir.glob("nodes*.lance"))


def test_a_new_embedder_is_answered_by_full_text_until_reindex_then_by_its_vectors(ingested: Path) -> None:
    with fake_embeddings_server(FakeServer(dim=24)) as a, fake_embeddings_server(FakeServer(dim=40)) as b:
        old = _settings(ingested, a.url, "model-a")
        report = rebuild_index(old)
        assert report["nodes"] > 0 and a.batches
        live = index_uri(old)
        stored = NodeIndex.open_existing(old)
        assert (stored.dim, stored.stored_model()) == (24, f"model-a@{a.url}")

        new = _settings(ingested, b.url, "model-b")
        service = MemoryService(new)
        hits = service.search("数据库备份")
        assert hits and "数据库备份" in NodeIndex.open_stored(new).get([hits[0]["id"]])[0]["text"]
        assert service.search("東京本社の会議")
        assert not service.vectors and "full text only" in (service.notice or "")
        # The prompt hook still decides: its cosines come from the bundled MiniLM.
        answer = evaluate(service, PROMPT)
        assert answer.signals is not None and answer.signals.cosines_by == INT8_NAME and answer.signals.cos > 0.3
        assert b.requests == 0, "the new embedder's vectors never meet the old index"

        status = gather_status(new)
        assert status["embedding_model"] == f"model-a@{a.url}" and status["nodes"] > 0
        assert any("memvault reindex" in w and "model-a" in w for w in status["warnings"])
        assert not any("lacks" in w for w in status["warnings"]), "the old index holds every conversation"

        swapped = rebuild_index(new)
        assert swapped["old_index"] == live and swapped["new_index"] != live
        after = MemoryService(new)
        assert after.search("postgres backup") and after.vectors and after.notice is None and b.requests > 0
        assert NodeIndex.open_existing(new).dim == 40


def test_a_bundled_old_index_is_still_searched_with_its_own_embedder(ingested: Path, embedder) -> None:
    minilm = load_settings(ingested)
    rebuild_index(minilm, embedder)
    with fake_embeddings_server() as b:
        service = MemoryService(_settings(ingested, b.url, "model-b"))
        assert service.search("when is the database backed up")
        assert service.vectors and service.embedder.name == INT8_NAME  # the default built it
        # A prompt first: the hook's recall opens the index before it embeds the query.
        answer = evaluate(MemoryService(_settings(ingested, b.url, "model-b")), PROMPT)
        assert answer.signals is not None and answer.signals.cosines_by == "" and answer.signals.cos > 0.3
        assert b.requests == 0


def test_a_server_that_is_down_leaves_the_old_index_live_and_nothing_half_built(ingested: Path) -> None:
    with fake_embeddings_server() as a:
        old = _settings(ingested, a.url, "model-a")
        rebuild_index(old)
        live, dirs = index_uri(old), _lance_dirs(old)
        down = a.url
    with pytest.raises(EmbeddingServerError, match=down.replace(".", r"\.")):
        rebuild_index(_settings(ingested, down, "model-b"))
    assert index_uri(old) == live and _lance_dirs(old) == dirs


def test_a_server_that_changes_dimension_mid_rebuild_stops_it(ingested: Path) -> None:
    with fake_embeddings_server(FakeServer(dim=24)) as a:
        old = _settings(ingested, a.url, "model-a")
        rebuild_index(old)
        live, dirs = index_uri(old), _lance_dirs(old)

        with fake_embeddings_server(FakeServer(dim=16)) as b:
            new = load_settings(ingested, embeddings={"url": b.url, "model": "model-b", "retries": 0, "batch_size": 2})
            from memvault.embeddings.select import embedder_for

            e = embedder_for(new)
            assert e.dim == 16
            b.dim = 20  # the server swapped models after the first answer
            with pytest.raises(EmbeddingServerError, match="20-dimension vectors, not the 16"):
                rebuild_index(new, e)
        assert index_uri(old) == live and _lance_dirs(old) == dirs


def test_a_run_leaves_an_index_of_another_embedder_as_it_is(ingested: Path) -> None:
    from memvault.embeddings.select import embedder_for
    from stores.vault import Vault
    from memvault.stages.context import StageContext
    from memvault.stages.index import run_index

    with fake_embeddings_server(FakeServer(dim=24)) as a, fake_embeddings_server(FakeServer(dim=40)) as b:
        rebuild_index(_settings(ingested, a.url, "model-a"))
        before = NodeIndex.open_stored(load_settings(ingested)).count()
        new = _settings(ingested, b.url, "model-b")
        ledger = Ledger(new.ledger_path)
        try:
            ctx = StageContext(settings=new, ledger=ledger, vault=Vault(ingested), embedder=embedder_for(new),
                               run_id="run-test-migration")
            result = run_index(ctx)
        finally:
            ledger.close()
        assert result.skipped and "memvault reindex" in result.skipped and result.nodes_written == 0
        assert b.requests == 0, "nothing was embedded for an index that cannot take it"
        stored = NodeIndex.open_stored(new)
        assert stored.count() == before and stored.stored_model() == f"model-a@{a.url}"


def _as_before_the_int8_default(home: Path) -> None:
    """Build the index with the fp32 MiniLM and drop the file every index made since writes:
    the home is then as an older memvault left it."""
    rebuild_index(load_settings(home, embeddings={"model": FP32_MODEL}))
    (home / ".memvault" / INDEX_EMBEDDER_FILE).unlink()


def test_a_home_indexed_before_the_int8_default_keeps_fp32_until_reindex_moves_it(ingested: Path) -> None:
    _as_before_the_int8_default(ingested)
    kept = load_settings(ingested)
    assert kept.embeddings.model == FP32_MODEL and kept.embeddings.kept_from_index
    service = MemoryService(kept)
    assert service.search("when is the database backed up")
    assert service.vectors and service.embedder.name == FP32_MODEL and not service.notice
    assert any("memvault reindex` moves it" in w for w in gather_status(kept)["warnings"])

    report = rebuild_index(kept)
    assert report["model"] == INT8_NAME
    moved = load_settings(ingested)
    assert moved.embeddings.model == INT8_NAME and not moved.embeddings.kept_from_index
    assert NodeIndex.open_existing(moved).stored_model() == INT8_NAME
    assert not any("moves it" in w for w in gather_status(moved)["warnings"])


def test_a_new_home_is_indexed_with_the_int8_default(ingested: Path) -> None:
    settings = load_settings(ingested)
    assert settings.embeddings.model == INT8_NAME and not (ingested / ".memvault" / INDEX_EMBEDDER_FILE).exists()
    NodeIndex.open_or_create(settings)
    assert (ingested / ".memvault" / INDEX_EMBEDDER_FILE).read_text().strip() == INT8_NAME
    again = load_settings(ingested)
    assert again.embeddings.model == INT8_NAME and not again.embeddings.kept_from_index


def test_a_model_the_settings_name_is_never_replaced(ingested: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _as_before_the_int8_default(ingested)
    named = load_settings(ingested, embeddings={"model": INT8_NAME})
    assert named.embeddings.model == INT8_NAME and not named.embeddings.kept_from_index
    monkeypatch.setenv("MEMVAULT_EMBEDDINGS__MODEL", INT8_NAME)
    assert load_settings(ingested).embeddings.model == INT8_NAME



def test_a_home_that_embeds_with_another_model_keeps_minilm_for_its_topics() -> None:
    from memvault.embeddings import STATIC_NAME
    from memvault.embeddings.select import topic_embedder_for

    assert topic_embedder_for(Settings()) is None  # MiniLM (int8 or fp32) serves index and topics alike
    assert topic_embedder_for(Settings(embeddings={"model": FP32_MODEL})) is None
    for other in ({"model": STATIC_NAME}, {"url": "http://127.0.0.1:9/v1", "model": "bge-m3"}):
        topics = topic_embedder_for(Settings(embeddings=other))
        assert topics is not None and topics.name == INT8_NAME, other


def test_status_says_which_model_embeds_the_topics(ingested: Path) -> None:
    from memvault.embeddings import STATIC_NAME

    default = gather_status(load_settings(ingested))
    assert default["topics_embedding_model"] == default["configured_embedding_model"] == INT8_NAME
    static = gather_status(load_settings(ingested, embeddings={"model": STATIC_NAME}))
    assert (static["configured_embedding_model"], static["topics_embedding_model"]) == (STATIC_NAME, INT8_NAME)
    # The prompt hook measures a static home's cosines with MiniLM (tests/live): nothing to warn of.
    assert not any("prompt hook" in w for w in static["warnings"] + default["warnings"])


def test_a_run_with_a_server_chunks_with_minilm_and_indexes_with_the_server(ingested: Path, embedder) -> None:
    from memvault.ops.run import running
    from memvault.stages.chunk import plan_chunks, run_chunk
    from memvault.stages.index import run_index

    with fake_embeddings_server(FakeServer(dim=24)) as a:
        settings = _settings(ingested, a.url, "model-a")
        with running(settings, ["chunk", "index"], writes_vault=False, paths=[]) as run:
            assert run.ctx.topic_embedder is not None and run.ctx.topics.name == INT8_NAME
            run_chunk(run.ctx)
            assert a.requests == 0, "the topics are the bundled MiniLM's, not the server's"
            [cid] = run.ctx.ledger.conversation_ids()
            planned = plan_chunks(run.ctx.ledger.active_thread(cid), embedder, settings.chunk)
            vectors = run.ctx.ledger.unassigned_chunks()
            run_index(run.ctx)
            counted = (run.ctx.embedder.texts, run.ctx.topic_embedder.texts)
        assert a.requests > 0
    # The chunks are MiniLM's (its cuts, its vectors); the index is the server's.
    assert len(vectors) == len(planned) and all(len(v) == 384 for _, v in vectors)
    assert NodeIndex.open_stored(settings).dim == 24
    assert counted[0] > 0 and counted[1] == len(TURNS) // 2  # the three exchanges, once
    assert run.report["embedded_texts"] == sum(counted)  # the report counts both


def test_topics_an_older_memvault_embedded_with_the_server_are_re_embedded_before_clustering(ingested: Path, embedder) -> None:
    import numpy as np

    from memvault.embeddings.select import embedder_for
    from memvault.stages.chunk import run_chunk
    from memvault.stages.cluster import run_cluster
    from memvault.stages.context import StageContext
    from stores.vault import Vault

    with fake_embeddings_server(FakeServer(dim=24)) as a:
        settings = _settings(ingested, a.url, "model-a")
        ledger = Ledger(settings.ledger_path)
        try:
            # As before topic_embedder_for: the server's vectors were the chunks' and the buckets'.
            old = StageContext(settings=settings, ledger=ledger, vault=Vault(ingested), embedder=embedder_for(settings),
                               run_id="run-old")
            run_chunk(old)
            [(first, v), *rest] = ledger.unassigned_chunks()
            assert len(v) == 24
            ledger.upsert_bucket("Backups", "postgres backups", v, 1)
            ledger.assign(first, "Backups", 1.0, "run-old")
            ledger.upsert_bucket("Tokyo office", "meetings at the Tokyo office", [1.0] + [0.0] * 23, 0)  # by hand
            new = StageContext(settings=settings, ledger=ledger, vault=Vault(ingested), embedder=embedder_for(settings),
                               run_id="run-new", topic_embedder=embedder)
            result = run_cluster(new)  # before: a matmul of 384 against 24 stopped the run here
            assert result.reembedded == 1 + len(rest)
            assert ledger.chunks_of_other_width(384) == []
            centroids = {b.name: np.asarray(b.centroid) for b in ledger.buckets()}
            assert all(len(c) == 384 for c in centroids.values())
            mine = np.asarray(ledger.chunk_vectors([first])[first])
            np.testing.assert_allclose(centroids["Backups"], mine / np.linalg.norm(mine), atol=1e-5)
            words = embedder.embed(["Tokyo office. meetings at the Tokyo office"])[0]
            np.testing.assert_allclose(centroids["Tokyo office"], words / np.linalg.norm(words), atol=1e-5)
            assert run_cluster(new).reembedded is None  # once
        finally:
            ledger.close()


def test_live_capture_and_notes_wait_for_reindex_without_failing_or_losing_anything(ingested: Path, tmp_path: Path) -> None:
    """Between a change of embedder and `memvault reindex`, a captured session and a note go
    into the ledger and wait for the index (as the nightly run's index stage does): the drain
    does not fail, the spool entry is not set aside, the note is not an error, and the reindex
    makes both recallable."""
    from memvault.live import spool
    from memvault.ops.capture import capture
    from memvault.ops.capture_paths import register_agent_folder
    from memvault.ops.drain import drain_once
    from memvault.ids import conv_ref, conversation_id
    from memvault.ops.note import add_note
    from tests.helpers import write_topics

    with fake_embeddings_server(FakeServer(dim=24)) as a, fake_embeddings_server(FakeServer(dim=40)) as b:
        rebuild_index(_settings(ingested, a.url, "model-a"))
        nodes_before = NodeIndex.open_stored(load_settings(ingested)).count()
        new = _settings(ingested, b.url, "model-b")
        folder = tmp_path / "transcripts" / "proj"
        register_agent_folder(new.state_dir, "claude-code", folder.parent)
        (folder / "s2.jsonl").write_text(cc_session("S2", ["the llama named Pelusa eats hay", "noted"]), encoding="utf-8")
        hook = {"session_id": "S2", "transcript_path": str(folder / "s2.jsonl"), "hook_event_name": "Stop"}
        assert capture(ingested, json.dumps(hook), spawn=False)["spooled"]
        result = drain_once(new)
        assert result.messages_new == 2 and result.nodes_written == 0
        assert spool.pending(new.state_dir) == 0 and not list((spool.spool_dir(new.state_dir) / spool.QUARANTINE).glob("*"))
        assert NodeIndex.open_stored(new).count() == nodes_before and b.requests == 0
        assert "memvault reindex" in (new.state_dir / spool.LIVE_LOG).read_text()
        noted = add_note(new, "the llama Pelusa moved to the east barn")
        assert not noted["queued"] and "memvault reindex" in noted.get("note", "") and b.requests == 0
        # A topic the user now ignores leaves the old index at once (deleting mixes no vectors).
        s1 = conv_ref(conversation_id("claude-code", "S1"))
        assert s1 in NodeIndex.open_stored(new).docs()
        write_topics(ingested, "postgres backup")
        assert capture(ingested, json.dumps(hook), spawn=False)["spooled"]
        drain_once(new)
        assert s1 not in NodeIndex.open_stored(new).docs() and b.requests == 0
        write_topics(ingested)
        rebuild_index(new)
        hits = MemoryService(new).search("Pelusa the llama")
        texts = [r["text"] for r in NodeIndex.open_existing(new).get([h["id"] for h in hits])]
        assert any("eats hay" in t for t in texts) and any("east barn" in t for t in texts)


def test_while_the_embeddings_server_is_down_prompts_captures_and_notes_go_on(ingested: Path, tmp_path: Path) -> None:
    """An agent waits for the prompt hook: a failing server gets one short try, the prompt is
    recalled by full text and decided on MiniLM's cosines, and the next prompts leave the
    server alone for a while (one line in the log, not one a prompt). A captured session and a
    note are stored, not failed or set aside, and the next capture once it answers indexes them."""
    from memvault.live import spool
    from memvault.ops.capture import capture
    from memvault.ops.capture_paths import register_agent_folder
    from memvault.ops.drain import drain_once
    from memvault.ops.note import add_note

    with fake_embeddings_server(FakeServer(dim=24)) as a:
        settings = _settings(ingested, a.url, "model-a")
        rebuild_index(settings)
        up = evaluate(MemoryService(settings), PROMPT)
        assert up.signals is not None and up.signals.cosines_by == INT8_NAME  # a server's model: MiniLM decides
        assert not any("did not answer" in r for r in up.reasons)

        a.fail_next = [503] * 1000  # the server is in trouble
        service = MemoryService(settings)
        down = evaluate(service, PROMPT)
        assert "did not answer: recalled by full text only" in down.reasons[0] and a.url in down.reasons[0]
        assert down.signals is not None and down.signals.cosines_by == INT8_NAME and down.signals.cos > 0.3
        asked = a.requests
        again = evaluate(service, "when does the postgres backup run each night?")
        assert "did not answer" in again.reasons[0] and a.requests == asked, "the server is left alone a while"
        assert (settings.state_dir / spool.LIVE_LOG).read_text().count("full text only for") == 1

        folder = tmp_path / "transcripts" / "proj"
        register_agent_folder(settings.state_dir, "claude-code", folder.parent)
        (folder / "s2.jsonl").write_text(cc_session("S2", ["the llama named Pelusa eats hay", "noted"]), encoding="utf-8")
        hook = json.dumps({"session_id": "S2", "transcript_path": str(folder / "s2.jsonl"), "hook_event_name": "Stop"})
        assert capture(ingested, hook, spawn=False)["spooled"]
        stored = drain_once(settings)
        assert stored.messages_new == 2 and stored.nodes_written == 0 and "not indexed yet" in " ".join(stored.errors)
        assert spool.pending(settings.state_dir) == 0
        assert not list((spool.spool_dir(settings.state_dir) / spool.QUARANTINE).glob("*"))
        noted = add_note(settings, "the llama Pelusa moved to the east barn")
        assert not noted["queued"] and "once the embeddings server answers" in noted.get("note", "")

        a.fail_next = []  # back
        assert capture(ingested, hook, spawn=False)["spooled"]
        caught_up = drain_once(settings)
        assert caught_up.messages_new == 0 and caught_up.conversations_indexed == 2 and not caught_up.errors
        hits = MemoryService(settings).search("Pelusa the llama")
        texts = [r["text"] for r in NodeIndex.open_existing(settings).get([h["id"] for h in hits])]
        assert any("eats hay" in t for t in texts) and any("east barn" in t for t in texts)

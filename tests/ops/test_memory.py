"""The recall service over a real index (real MiniLM, real LanceDB): turns lifted through
their exchange, explain adding up, budgets, and the access log folded by the index code."""

from datetime import datetime
from pathlib import Path

import pytest

from memvault.markdown.tree import conversation_nodes
from memvault.recall.access import ACCESS_LOG, fold_access
from memvault.ops.memory import MemoryService
from memvault.config.settings import load_settings
from stores.nodes import NodeIndex
from memvault.stages.index import rows_for, write_index

TURNS = [
    ("D1:1", "Ann", "Guess what, I finally adopted a dog last weekend!"),
    ("D1:2", "Bo", "No way! What breed did you get?"),
    ("D1:3", "Ann", "A golden retriever puppy. We named her Maple."),
    ("D1:4", "Bo", "Maple is a lovely name for a golden retriever."),
    ("D1:5", "Ann", "I also started pottery classes on Tuesdays."),
    ("D1:6", "Bo", "Pottery sounds relaxing. I am training for a marathon in October."),
]


@pytest.fixture
def service(home: Path, embedder) -> MemoryService:
    settings = load_settings(home)
    nodes = NodeIndex.open_or_create(settings)
    when = datetime(2023, 5, 8, 13, 56)
    msgs = [(dia, who, text, when) for dia, who, text in TURNS]
    tree = conversation_nodes("chat", "s1", "Ann and Bo", "2023-05-08", "test", msgs)
    write_index(nodes, embedder, rows_for("conv:chat", "conversation", tree, settings.index.context_turns), [],
                settings.index)
    return MemoryService(settings, embedder)


def test_recall_ranks_turns_explains_and_logs_access(service: MemoryService) -> None:
    scored, rows = service._scored("What did Ann name her dog?", service.settings.recall.top_k)
    turns = [rows[s.id]["ref"] for s in scored if rows[s.id]["kind"] == "message"]
    # The answer ranks in the top four of six turns and above both turns about something else
    # (pottery, a marathon); in a chat this short, its one-turn full-text and embedding windows
    # share most words with its neighbours', so the adoption turn may rank beside it.
    assert "D1:3" in turns[:4] and set(turns[-2:]) == {"D1:5", "D1:6"}
    for s in scored:
        e = s.explain
        relevance = max(float(e["base"]), float(e["propagation"]))
        priors = sum(float(v) for k, v in e.items() if k.endswith("_prior"))  # the content prior too
        gathered = sum(float(v) for k, v in e.items() if k.endswith("_bonus"))  # Ann's turns: speaker_bonus
        assert float(e["total"]) == pytest.approx(relevance + gathered + priors, abs=1e-9)
    # Every turn of this six-turn chat matches directly at the default top_k (its full-text
    # window spans half the chat), so lifting is checked with two candidates per retriever:
    # turns neither returned are lifted, each naming its source.
    narrow, narrow_rows = service._scored("What did Ann name her dog?", 2)
    lifted = [s for s in narrow if s.source == "propagated" and narrow_rows[s.id]["kind"] == "message"]
    assert lifted and all(s.explain["propagated_from"] in narrow_rows for s in lifted)

    out = service.recall("What did Ann name her dog?", max_nodes=3, max_chars=300, max_node_chars=120)
    assert 0 < len(out["hits"]) <= 3
    assert sum(len(h["text"]) for h in out["hits"]) <= 300 and all(len(h["text"]) <= 120 for h in out["hits"])
    # A turn stands under its conversation's title (its own title is its text) with the day it
    # was said, which a "when" question needs: the block's line says both.
    turn = next(h for h in out["hits"] if h["kind"] == "message")
    assert (turn["title"], turn["date"]) == ("Ann and Bo", "2023-05-08")
    assert service._context_titles([{"id": "t", "doc": "conv:chat", "kind": "message"}], {}) == {"t": "Ann and Bo"}  # read by its id
    # So do search's hits and timeline's nodes (the conversation's own node: when it was indexed, not said).
    said = {"message": "2023-05-08", "exchange": "2023-05-08"}
    found = service.search("What did Ann name her dog?", limit=8)
    around = service.timeline(turn["id"], 2, 2)
    assert all(x["date"] == said.get(x["kind"]) for x in [*found, *around])
    assert {x["kind"] for x in [*found, *around]} >= {"message", "conversation"}
    assert f"] Ann and Bo — {turn['path']} (cite: {turn['cite']}) · 2023-05-08\n{turn['text']}" in out["block"]
    log = service.settings.state_dir / ACCESS_LOG
    assert log.read_text().count('"ids"') == 1

    folded = fold_access(log, service.nodes.add_access)
    assert folded["accesses"] == len(out["hits"])
    assert all(r["access"] == 1 for r in service.nodes.get([h["id"] for h in out["hits"]]))


CAMPING = [
    ("D2:1", "Ann", "We went to the lake again this summer."),
    ("D2:2", "Bo", "Nice! What's your best camping memory?"),
    ("D2:3", "Ann", "Lying under a clear sky watching the Perseid meteor shower with the kids."),
    ("D2:4", "Bo", "I am repainting the kitchen this weekend."),
]


def test_a_turn_of_several_sentences_is_weighed_by_its_best_one_too(service: MemoryService) -> None:
    # "A golden retriever puppy. We named her Maple." answers with its second sentence; the
    # turn in its context (the breed question before it, the reply after) says less of it.
    from memvault.cli.explain import explain_lines

    scored, rows = service._scored("What did Ann name her dog?", service.settings.recall.top_k)
    by_ref = {rows[s.id]["ref"]: s for s in scored if rows[s.id]["kind"] == "message"}
    named, e = by_ref["D1:3"], by_ref["D1:3"].explain
    share = service.settings.recall.w_sentence
    assert float(e["sentence_cos"]) > float(e["context_cos"])
    assert e["cos"] == pytest.approx((1 - share) * float(e["context_cos"]) + share * float(e["sentence_cos"]))
    assert any(line.startswith("meaning: its best sentence") for line in explain_lines(e))
    assert "sentence_cos" not in by_ref["D1:4"].explain  # one sentence: its vector says it already
    assert named.score > by_ref["D1:4"].score


def camping_service(home: Path, embedder, reply_damping: float) -> MemoryService:
    # Turns embedded alone (no context window), so the answer shares nothing with the query
    # and only the question turn is found directly.
    settings = load_settings(home, index={"context_turns": 0}, recall={"reply_damping": reply_damping})
    nodes = NodeIndex.open_or_create(settings)
    msgs = [(dia, who, text, datetime(2023, 8, 20)) for dia, who, text in CAMPING]
    tree = conversation_nodes("lake", "s2", "Ann and Bo", "2023-08-20", "test", msgs)
    write_index(nodes, embedder, rows_for("conv:lake", "conversation", tree, 0), [], settings.index)
    return MemoryService(settings, embedder)


def test_the_turn_that_answers_a_matching_question_is_lifted(home: Path, embedder) -> None:
    service = camping_service(home, embedder, reply_damping=0.8)
    scored, rows = service._scored("best camping memory", 1)
    by_ref = {rows[s.id]["ref"]: s for s in scored if rows[s.id]["kind"] == "message"}
    question, answer = by_ref["D2:2"], by_ref["D2:3"]
    assert question.source == "hit"
    assert answer.source == "propagated" and answer.explain["propagated_via"] == "reply"
    assert answer.explain["propagated_from"] == question.id
    # the answer opens the next exchange: without the reply lift, nothing reaches it
    off = camping_service(home, embedder, reply_damping=0.0)
    scored, rows = off._scored("best camping memory", 1)
    assert "D2:3" not in [rows[s.id]["ref"] for s in scored if s.source == "propagated"]


class _OneShot:
    """An embedder that, like the CLI's, lets its model go after the query: records its calls."""

    keep_session = False

    def __init__(self, inner, calls: list[str]) -> None:
        self.inner, self.calls = inner, calls

    def embed_one(self, text: str):
        self.calls.append("embed")
        return self.inner.embed_one(text)


def test_a_one_shot_embedder_embeds_before_the_index_search(service: MemoryService, embedder,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # A cold process's peak memory is the model's or the search's, not both at once; a warm
    # server's embedder overlaps its embedding with the full-text search instead.
    calls: list[str] = []
    real = NodeIndex.recall_search

    def recording(self, vector, *args, **kwargs):
        calls.append("search (vector ready)" if not callable(vector) or calls[-1:] == ["embed"] else "search")
        return real(self, vector, *args, **kwargs)

    monkeypatch.setattr(NodeIndex, "recall_search", recording)
    warm = service.recall("What did Ann name her dog?")["hits"]
    assert calls == ["search"]
    calls.clear()
    cold = MemoryService(service.settings, _OneShot(embedder, calls)).recall("What did Ann name her dog?")["hits"]
    assert calls == ["embed", "search (vector ready)"]
    assert [h["id"] for h in cold] == [h["id"] for h in warm]


def test_prewarm_loads_the_index_a_server_will_search_and_recall_is_unchanged(service: MemoryService,
                                                                              home: Path, embedder) -> None:
    before = service.recall("What did Ann name her dog?")["hits"]
    assert {"text_idx", "fts_text_idx"} <= set(service.prewarm())
    after = service.recall("What did Ann name her dog?")["hits"]
    assert [h["id"] for h in after] == [h["id"] for h in before]
    # a home before its first run has no index: nothing to load, nothing created
    empty = load_settings(home / "fresh")
    assert MemoryService(empty, embedder).prewarm() == [] and not NodeIndex.exists(empty)


def test_the_prompt_hook_takes_its_own_candidate_depth(service: MemoryService) -> None:
    # prompt-recall weighs live.prompt_top_k candidates a list (its gate was chosen on that
    # depth), whatever recall.top_k the other doors take.
    query = "What did Ann name her dog?"
    deep = service.settings.model_copy(update={"live": service.settings.live.model_copy(update={"prompt_top_k": 2})})
    narrow = MemoryService(deep, service.embedder)
    _, _, cands, _ = narrow.scored_candidates(query)
    assert max(c.vector_rank or 0 for c in cands) == 2 and max(c.fts_rank or 0 for c in cands) <= 2
    _, _, wide, _ = service.scored_candidates(query)
    assert len(wide) > len(cands) and service.settings.recall.top_k > service.settings.live.prompt_top_k


def test_an_article_paragraph_stands_under_its_section(demo_copy: Path, embedder) -> None:
    # A paragraph's own title is its text cut short; its hit takes its section's heading.
    service = MemoryService(load_settings(demo_copy), embedder)
    out = service.recall("sourdough starter feeding while we are away", max_nodes=12)
    paragraphs = [h for h in out["hits"] if h["kind"] == "paragraph"]
    assert paragraphs
    for n, hit in enumerate(out["hits"], start=1):
        if hit["kind"] == "paragraph":
            section = service.get([str(service.get([hit["id"]])[0]["parent"])])[0]
            assert hit["title"] == section["title"] and hit["date"] is None
            assert f"[{n}] {section['title']} — {hit['path']} (cite: " in out["block"]

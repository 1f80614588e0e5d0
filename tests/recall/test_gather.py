"""Evidence gathered across hits (memvault/recall/gather.py): the second hop over a real index
(real MiniLM, real LanceDB), session support, query coverage and the speaker term on small
cases, each in ``explain`` and adding up."""

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memvault.markdown.tree import conversation_nodes
from memvault.ops.memory import MemoryService
from memvault.recall.query import hop_terms, speaker
from memvault.recall.scoring import Candidate, ScoringWeights, score_candidates, score_head
from memvault.config.settings import load_settings
from stores.nodes import NodeIndex
from memvault.stages.index import rows_for, write_index
from tests.helpers import check_explain_adds_up

NOW = datetime(2025, 1, 1)
SESSIONS = {
    1: [("D1:1", "Ann", "My sister Priya and I finally flew to Reykjavik for a week."),
        ("D1:2", "Bo", "What made you pick Iceland for the holiday?"),
        ("D1:3", "Ann", "We wanted a trip somewhere cold and quiet for once."),
        ("D1:4", "Bo", "Sounds like a great trip.")],
    2: [("D2:1", "Bo", "I repainted the kitchen over the weekend."),
        ("D2:2", "Ann", "Priya still talks about the northern lights over Reykjavik harbour."),
        ("D2:3", "Bo", "The green paint turned out brighter than I expected."),
        ("D2:4", "Ann", "Bright green can work in a kitchen."),
        ("D2:5", "Bo", "I will add white shelves to calm it down.")],
}
QUERY = "What did Ann and her sister see on their trip?"


def build(home: Path, embedder: Any, **recall: Any) -> MemoryService:
    settings = load_settings(home, recall=recall)
    nodes = NodeIndex.open_or_create(settings)
    for n, turns in SESSIONS.items():
        when = datetime(2023, 5, n * 7)
        tree = conversation_nodes(f"chat-s{n}", f"s{n}", f"Ann and Bo session {n}", when.strftime("%Y-%m-%d"),
                                  "test", [(dia, who, text, when) for dia, who, text in turns])
        write_index(nodes, embedder, rows_for(f"conv:chat-s{n}", "conversation", tree, settings.index.context_turns),
                    [], settings.index)
    return MemoryService(settings, embedder)


def refs(cands: list[Candidate], rows: dict[str, dict[str, Any]]) -> dict[str, Candidate]:
    return {rows[c.id]["ref"]: c for c in cands if rows[c.id]["kind"] == "message"}


def test_the_second_hop_brings_a_turn_sharing_the_top_hits_rare_names(home: Path, embedder: Any) -> None:
    # Two candidates per list: the trip turns are found, the northern-lights turn (the answer,
    # which shares no content word with the question) is not.
    service = build(home, embedder, hop_k=0)
    cands, rows, _ = service._candidates(QUERY, 2)
    assert "D2:2" not in refs(cands, rows)

    # Three seeds (the default): the first session's turn naming Priya and Reykjavik ties within
    # 0.001 in cosine with an exchange of that session, so which of them is second differs between
    # machines (int8 vectors differ slightly from one to another); it is among the best three on each.
    service = build(home, embedder, hop_k=10, hop_seeds=3)
    cands, rows, lookup = service._candidates(QUERY, 2)
    found = refs(cands, rows)
    assert "D2:2" in found and found["D2:2"].hop_rank is not None
    assert found["D2:2"].vector_rank is None and found["D2:2"].fts_rank is None
    assert found["D2:2"].doc == "conv:chat-s2"

    # The hop term lifts it above the kitchen talk of its session and names what it shares.
    weights = service.weights().model_copy(update={"w_hop": 0.2, "hop_seeds": 3})
    scored = score_candidates(cands, lookup, weights, NOW, query=QUERY)
    by_ref = {rows[s.id]["ref"]: s for s in scored if rows[s.id]["kind"] == "message"}
    answer = by_ref["D2:2"]
    assert float(answer.explain["hop_bonus"]) > 0
    assert {"priya", "reykjavik"} & set(str(answer.explain["hop_terms"]).split())
    assert answer.score > max(by_ref[r].score for r in ("D2:1", "D2:3", "D2:5") if r in by_ref)
    for s in scored:
        check_explain_adds_up(s)


def test_recall_explains_every_gathered_term(home: Path, embedder: Any) -> None:
    service = build(home, embedder, hop_k=5, w_hop=0.1, w_session=0.1, w_cover=0.1, w_speaker=0.05)
    out = service.recall(QUERY, max_nodes=4)
    assert out["hits"]
    for hit in out["hits"]:
        e = hit["explain"]
        for term in ("hop_bonus", "session_bonus", "cover_bonus", "speaker_bonus"):
            assert term in e and float(e[term]) >= 0
        assert "hop_terms" in e
        priors = sum(float(v) for k, v in e.items() if k.endswith("_prior"))
        bonus = sum(float(v) for k, v in e.items() if k.endswith("_bonus"))
        assert float(e["total"]) == pytest.approx(float(e["relevance"]) + bonus + priors, abs=1e-5)
    assert any(float(h["explain"]["session_bonus"]) > 0 for h in out["hits"])
    assert any(float(h["explain"]["speaker_bonus"]) > 0 for h in out["hits"])  # Ann's turns


def no_lookup(ids: list[str]) -> Mapping[str, Candidate]:
    return {}


def turn(cid: str, doc: str, lexical: float, rank: int, text: str = "plain words") -> Candidate:
    return Candidate(cid, doc=doc, cos=0.3, lexical=lexical, fts_rank=rank, vector_rank=rank, age_days=1, text=text)


def test_session_support_lifts_a_session_of_many_weak_matches() -> None:
    # s1 and s3 hold one lucky turn each; s2 three turns that each match a little less.
    cands = [turn("s1/a", "s1", 4.0, 1), turn("s3/a", "s3", 3.7, 2), turn("s2/a", "s2", 3.6, 3),
             turn("s2/b", "s2", 3.5, 4), turn("s2/c", "s2", 3.4, 5)]
    plain = [s.id for s in score_candidates(cands, no_lookup, ScoringWeights(), NOW, query="q")]
    assert plain.index("s3/a") < plain.index("s2/a")
    w = ScoringWeights(w_session=0.1, session_top=3)
    scored = score_candidates(cands, no_lookup, w, NOW, query="q")
    ids = [s.id for s in scored]
    assert ids.index("s2/a") < ids.index("s3/a")  # the well-supported session's turn now leads the lone one
    by_id = {s.id: s for s in scored}
    assert by_id["s2/b"].explain["session_bonus"] == pytest.approx(0.1)  # s2 is the best-supported session
    assert 0 < float(by_id["s3/a"].explain["session_bonus"]) < 0.1
    for s in scored:
        check_explain_adds_up(s)


def test_coverage_rewards_the_hit_holding_what_the_best_hits_lack() -> None:
    query = "Which pets and which instruments does Ann have?"
    top = [turn(f"t{i}", "s1", 5.0 - i / 10, i + 1, "Ann: my pets are a cat and a dog") for i in range(3)]
    violin = turn("v", "s2", 2.0, 4, "Ann: I play the violin, my favourite instruments")
    same = turn("p", "s2", 2.0, 5, "Ann: the pets sleep all day")
    scored = {s.id: s for s in score_candidates([*top, violin, same], no_lookup,
                                                  ScoringWeights(w_cover=0.2, cover_seeds=3), NOW, query=query)}
    assert float(scored["v"].explain["cover_bonus"]) > 0
    assert scored["p"].explain["cover_bonus"] == 0  # "pets": already in the best hits
    assert scored["v"].score > scored["p"].score


def test_speaker_term_goes_to_the_named_persons_turns() -> None:
    cands = [turn("a", "s1", 3.0, 1, "Ann: we went camping"), turn("b", "s1", 3.0, 2, "Bo: we went camping")]
    scored = {s.id: s for s in score_candidates(cands, no_lookup, ScoringWeights(w_speaker=0.05), NOW,
                                                  query="Where did Ann go camping?")}
    assert scored["a"].explain["speaker_bonus"] == pytest.approx(0.05)
    assert scored["b"].explain["speaker_bonus"] == 0


def test_the_head_stays_exact_with_the_gathered_terms() -> None:
    # A lifted node can gain every gathered term: the bound counts them, so the head of
    # score_head equals that of the whole list.
    hits = [Candidate(f"h{i}", doc="s1", cos=0.9 - i / 50, lexical=5.0 - i / 10, vector_rank=i + 1, fts_rank=i + 1,
                      age_days=1, reply=f"r{i}", text=f"Ann: Priya Reykjavik plain {i}") for i in range(12)]
    store = {f"r{i}": Candidate(f"r{i}", doc="s1", age_days=1, text="Bo: Priya in Reykjavik") for i in range(12)}
    lookup = lambda ids: {i: store[i] for i in ids if i in store}  # noqa: E731
    w = ScoringWeights(w_hop=0.3, w_session=0.2, w_speaker=0.1, hop_max_share=1.0)
    query = "Did Bo see it?"
    full = score_candidates(hits, lookup, w, NOW, query=query)
    head, _ = score_head(hits, lookup, w, NOW, keep=5, query=query)
    assert [(s.id, s.score) for s in head[:5]] == [(s.id, s.score) for s in full[:5]]


def test_hop_terms_are_rare_new_words_of_the_seeds() -> None:
    seeds = ["Ann: my sister Priya and I flew to Reykjavik", "Bo: Reykjavik in winter sounds cold"]
    pool = seeds + [f"Bo: filler sentence number {i} about the kitchen" for i in range(20)]
    terms = hop_terms(seeds, pool, "Where did Ann travel with her sister?", 4, 0.25)
    assert terms[0] == "reykjavik"  # in both seeds
    assert "priya" in terms and "sister" not in terms and "ann" not in terms  # a query word, a speaker
    assert "kitchen" not in terms  # not in a seed
    assert speaker("Melanie: hi") == "melanie" and speaker("no speaker here") is None

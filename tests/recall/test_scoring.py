"""Recall scoring: the seed's formula, one-hop propagation, explainable totals, budgets."""

import math
from collections.abc import Mapping
from datetime import datetime, timedelta

import numpy as np
import pytest

from memvault.recall.scoring import Candidate, Scored, ScoringWeights, score_candidates, select
from tests.helpers import check_explain_adds_up

NOW = datetime(2025, 1, 1)


def no_lookup(ids: list[str]) -> Mapping[str, Candidate]:
    return {}


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=float)
    return v / np.linalg.norm(v)


def by_id(scored: list[Scored]) -> dict[str, Scored]:
    return {s.id: s for s in scored}


# Seed 000's weights, which the formula's arithmetic below is written in.
SEED = ScoringWeights(w_cos=0.55, w_lex=0.20, w_rrf=0.25, rrf_k=60)


def test_base_formula_and_normalization() -> None:
    cands = [
        Candidate("a", cos=0.8, lexical=12.0, vector_rank=1, fts_rank=1, age_days=10),
        Candidate("b", cos=0.5, lexical=6.0, vector_rank=2, fts_rank=2, age_days=100),
        Candidate("c", lexical=3.0, fts_rank=3, age_days=400),
    ]
    scored = by_id(score_candidates(cands, no_lookup, SEED, NOW))
    a, b, c = scored["a"].explain, scored["b"].explain, scored["c"].explain
    assert a["rrf"] == pytest.approx(1.0)  # rank 1 in both lists
    assert a["lexical"] == pytest.approx(1.0) and b["lexical"] == pytest.approx(0.5)
    assert a["base"] == pytest.approx(0.55 * 0.8 + 0.20 + 0.25)
    assert (a["tier_name"], b["tier_name"], c["tier_name"]) == ("hot", "warm", "cold")
    assert b["base"] == pytest.approx((0.55 * 0.5 + 0.20 * 0.5 + 0.25 * (61 / 62)) * 0.90)
    assert c["cos"] == 0.0 and c["base"] == pytest.approx((0.20 * 0.25 + 0.25 * (61 / 63) / 2) * 0.78)
    assert a["recency_prior"] == pytest.approx(0.05 * math.exp(-10 / 45))
    for s in scored.values():
        check_explain_adds_up(s)


def test_priors_are_small_and_access_is_capped() -> None:
    cands = [
        Candidate("relevant", cos=0.9, vector_rank=1, age_days=1),
        Candidate("popular", cos=0.6, vector_rank=2, age_days=0, importance=1.0, access=10_000),
    ]
    scored = score_candidates(cands, no_lookup, now=NOW)
    assert [s.id for s in scored] == ["relevant", "popular"]
    popular = by_id(scored)["popular"].explain
    assert popular["access_prior"] == pytest.approx(0.03)
    assert popular["importance_prior"] == pytest.approx(0.06)


def test_age_from_timestamp_and_now() -> None:
    c = Candidate("t", cos=0.5, vector_rank=1, timestamp=NOW - timedelta(days=45))
    e = score_candidates([c], no_lookup, now=NOW)[0].explain
    assert e["recency_prior"] == pytest.approx(0.05 / math.e)
    assert e["tier_name"] == "warm"
    undated = score_candidates([Candidate("u", cos=0.5, vector_rank=1)], no_lookup, now=NOW)[0].explain
    assert undated["tier_name"] == "unknown" and undated["recency_prior"] == 0.0


def test_propagation_lifts_parent_and_neighbour() -> None:
    hit = Candidate("/A/S#p1", parent="/A/S", cos=0.9, lexical=5.0, vector_rank=1, fts_rank=1, age_days=1,
                    similar=[("/B#p3", 0.8)])  # fmt: skip
    weak_parent_hit = Candidate("/A/S", parent="/A", cos=0.1, vector_rank=9, age_days=1)
    store = {"/B#p3": Candidate("/B#p3", parent="/B", age_days=1, importance=0.5, text="neighbour text")}
    asked: list[list[str]] = []

    def lookup(ids: list[str]) -> Mapping[str, Candidate]:
        asked.append(ids)
        return {i: store[i] for i in ids if i in store}

    scored = by_id(score_candidates([hit, weak_parent_hit], lookup, now=NOW))
    base = float(scored["/A/S#p1"].explain["base"])
    parent = scored["/A/S"]
    assert parent.source == "propagated"
    assert parent.explain["propagated_from"] == "/A/S#p1"
    assert parent.explain["propagation"] == pytest.approx(base * 0.55)
    assert parent.explain["relevance"] == pytest.approx(base * 0.55)  # max(own base, lifted)
    neighbour = scored["/B#p3"]
    assert neighbour.explain["propagation"] == pytest.approx(base * 0.55 * 0.8)
    assert neighbour.text == "neighbour text"
    # one batched lookup, only for lifted nodes that were not hits ("/A" is unknown: dropped)
    assert len(asked) == 1 and sorted(asked[0]) == ["/A", "/B#p3"]
    assert "/A" not in scored
    # one hop only: the neighbour lifts nothing further
    assert "/B" not in scored
    for s in scored.values():
        check_explain_adds_up(s)


def test_strong_own_score_beats_propagation() -> None:
    child = Candidate("c", parent="p", cos=0.3, vector_rank=2, age_days=1)
    parent = Candidate("p", cos=0.9, vector_rank=1, age_days=1)
    scored = by_id(score_candidates([child, parent], no_lookup, now=NOW))
    assert scored["p"].source == "hit"
    assert scored["p"].explain["relevance"] == scored["p"].explain["base"]


def scored_node(cid: str, score: float, text: str, vector: np.ndarray | None = None) -> Scored:
    cand = Candidate(cid, vector=vector, text=text, chars=len(text))
    return Scored(cand, score, {"total": score}, "hit", text, len(text))


def test_diversity_drops_a_paraphrase() -> None:
    nodes = [
        scored_node("orig", 0.9, "The index is rebuilt nightly.", unit(1, 0, 0)),
        scored_node("para", 0.8, "Every night the index gets rebuilt.", unit(1, 0.05, 0)),
        scored_node("other", 0.7, "Backups run weekly.", unit(0, 1, 0)),
    ]
    picked = select(nodes, max_nodes=5, max_chars=10_000, max_node_chars=500)
    assert [p.id for p in picked] == ["orig", "other"]
    loose = select(nodes, max_nodes=5, max_chars=10_000, max_node_chars=500, diversity=0.9999)
    assert [p.id for p in loose] == ["orig", "para", "other"]


def test_budgets_hold() -> None:
    sentence = "A sentence of recalled text. "
    nodes = [scored_node(f"n{i}", 1.0 - i / 100, sentence * 20, unit(1, i, i * i)) for i in range(10)]
    picked = select(nodes, max_nodes=4, max_chars=10_000, max_node_chars=200, diversity=1.01)
    assert len(picked) == 4
    assert all(len(p.text) <= 200 and p.chars == len(p.text) for p in picked)
    assert picked[0].text.endswith("text.")

    picked = select(nodes, max_nodes=10, max_chars=700, max_node_chars=300, diversity=1.01)
    assert sum(p.chars for p in picked) <= 700
    assert [p.chars <= 300 for p in picked] == [True] * len(picked)
    assert len(picked) == 3  # 300 + 300 + the last 100 chars cut to fit


def test_small_node_fills_the_remaining_room() -> None:
    nodes = [
        scored_node("big", 0.9, "x " * 200),
        scored_node("too-big", 0.8, "y " * 200),
        scored_node("small", 0.7, "short note"),
    ]
    picked = select(nodes, max_nodes=5, max_chars=420, max_node_chars=1000, min_chars=80)
    assert [p.id for p in picked] == ["big", "small"]
    assert sum(p.chars for p in picked) <= 420


def test_weights_are_settings() -> None:
    w = ScoringWeights(w_cos=1.0, w_lex=0.0, w_rrf=0.0, tier_cold=1.0)
    e = score_candidates([Candidate("a", cos=0.5, vector_rank=3, age_days=999)], no_lookup, w, NOW)[0].explain
    assert e["base"] == pytest.approx(0.5)
    assert all(f.description for f in ScoringWeights.model_fields.values())


def test_naive_and_aware_times_mix() -> None:
    from datetime import timezone

    c = Candidate("t", cos=0.5, vector_rank=1, timestamp=datetime(2024, 12, 2, tzinfo=timezone.utc))
    e = score_candidates([c], no_lookup, now=NOW)[0].explain
    assert e["recency_prior"] == pytest.approx(0.05 * math.exp(-30 / 45))


def test_a_guess_question_weighs_meaning_over_words() -> None:
    # "a" means what the question asks in other words (high cosine, few shared words); "b"
    # shares the words. A guess about a person ("Would Ann …") is answered by what Ann said of
    # herself, seldom in the question's words: guess_shift of the lexical weight moves to cosine.
    from memvault.cli.explain import explain_lines

    cands = [Candidate("a", cos=0.7, lexical=1.0, vector_rank=1, fts_rank=2, age_days=1, text="Ann: camping is my joy"),
             Candidate("b", cos=0.3, lexical=4.0, vector_rank=2, fts_rank=1, age_days=1, text="Ann: a quiet holiday by the sea")]
    guess = "Would Ann enjoy a quiet holiday?"
    scored = score_candidates(cands, no_lookup, ScoringWeights(), NOW, query=guess)
    assert [s.id for s in scored] == ["a", "b"]
    a = by_id(scored)["a"]
    assert a.explain["question_form"] == "guess"
    w = ScoringWeights()
    shift = min(w.guess_shift, w.w_lex)
    assert shift > 0
    assert a.explain["cos_term"] == pytest.approx((w.w_cos + shift) * 0.7)
    assert a.explain["lexical_term"] == pytest.approx((w.w_lex - shift) * 0.25)
    assert "question: asks for a guess" in "\n".join(explain_lines(a.explain))
    for s in scored:
        check_explain_adds_up(s)

    # The same words asked plainly, or the shift set to 0: the words decide, as before.
    plain = score_candidates(cands, no_lookup, ScoringWeights(), NOW, query="What quiet holiday did Ann enjoy?")
    assert [s.id for s in plain] == ["b", "a"] and plain[0].explain["question_form"] is None
    assert not any(line.startswith("question:") for line in explain_lines(plain[0].explain))
    off = score_candidates(cands, no_lookup, ScoringWeights(guess_shift=0.0), NOW, query=guess)
    assert [s.id for s in off] == ["b", "a"]


def test_no_text_is_shown_twice() -> None:
    # A turn and its exchange both match: the block shows the turn once. The exchange picked
    # first keeps the turn out; a turn picked first gives way to its exchange (in the exchange's
    # place), which shows it whole. A short text ("user: ok") held by others is no repeat.
    turn = "user: Today is release day for tidepool 0.3.0. Can you prepare the changelog entry?"
    exchange = turn + "\nassistant: Proposed entry: Added a SQLite cache of NOAA station data."
    other = "assistant: Tag with git tag -a v0.3.0 and push the tag; the workflow builds the binaries."
    picked = select([scored_node("e1", 0.9, exchange), scored_node("m1", 0.8, turn), scored_node("m5", 0.7, other)],
                    max_nodes=5, max_chars=10_000, max_node_chars=500, diversity=1.01)
    assert [p.id for p in picked] == ["e1", "m5"]
    picked = select([scored_node("m1", 0.9, turn), scored_node("m5", 0.8, other), scored_node("e1", 0.7, exchange)],
                    max_nodes=5, max_chars=10_000, max_node_chars=500, diversity=1.01)
    assert [p.id for p in picked] == ["m5", "e1"] and sum(p.chars for p in picked) == len(other) + len(exchange)
    # An exchange that would be cut keeps the turn beside it: the cut may fall before the turn.
    picked = select([scored_node("m1", 0.9, turn), scored_node("e1", 0.7, exchange)],
                    max_nodes=5, max_chars=10_000, max_node_chars=120, diversity=1.01)
    assert [p.id for p in picked] == ["m1", "e1"]
    picked = select([scored_node("a", 0.9, "user: ok"), scored_node("b", 0.8, "user: ok\nassistant: Done.")],
                    max_nodes=5, max_chars=10_000, max_node_chars=500, diversity=1.01)
    assert [p.id for p in picked] == ["a", "b"]

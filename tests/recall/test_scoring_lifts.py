"""Recall-quality additions to scoring: exchange → message and message → sibling lifts,
explain still adding up, and the turn-level ranking they produce."""

from collections.abc import Mapping
from datetime import datetime

import numpy as np
import pytest

from memvault.recall.scoring import Candidate, ScoringWeights, score_candidates, select
from tests.helpers import check_explain_adds_up

NOW = datetime(2025, 1, 1)


def store_lookup(store: dict[str, Candidate], asked: list[list[str]]):
    def lookup(ids: list[str]) -> Mapping[str, Candidate]:
        asked.append(sorted(ids))
        return {i: store[i] for i in ids if i in store}
    return lookup


def test_exchange_lifts_its_messages_and_a_message_its_sibling() -> None:
    exchange = Candidate("e1", parent="conv", cos=0.8, vector_rank=1, age_days=3, children=["e1/m1", "e1/m2"])
    question = Candidate("e2/m1", parent="e2", cos=0.7, lexical=4.0, vector_rank=2, fts_rank=1, age_days=3,
                         siblings=["e2/m2"])
    store = {i: Candidate(i, age_days=3, text=i) for i in ("e1/m1", "e1/m2", "e2/m2", "e2", "conv")}
    asked: list[list[str]] = []
    w = ScoringWeights()
    scored = {s.id: s for s in score_candidates([exchange, question], store_lookup(store, asked), w, NOW)}

    e_base = float(scored["e1"].explain["base"])
    for child in ("e1/m1", "e1/m2"):
        assert scored[child].source == "propagated"
        assert scored[child].explain["propagated_from"] == "e1"
        assert scored[child].explain["propagation"] == pytest.approx(e_base * w.child_damping)
    q_base = float(scored["e2/m1"].explain["base"])
    answer = scored["e2/m2"]
    assert answer.explain["propagated_from"] == "e2/m1"
    assert answer.explain["propagation"] == pytest.approx(q_base * w.sibling_damping)
    # one batched lookup of the lifted nodes that were not hits
    assert asked == [["conv", "e1/m1", "e1/m2", "e2", "e2/m2"]]
    for s in scored.values():
        check_explain_adds_up(s)


def test_lifts_are_one_hop_and_never_beat_a_strong_own_score() -> None:
    w = ScoringWeights()
    strong = Candidate("e1/m2", parent="e1", cos=0.95, vector_rank=1, age_days=1)
    weak_exchange = Candidate("e1", cos=0.2, vector_rank=5, age_days=1, children=["e1/m1", "e1/m2"])
    store = {"e1/m1": Candidate("e1/m1", age_days=1, siblings=["e1/m3"])}  # siblings of a lifted node: ignored
    scored = {s.id: s for s in score_candidates([strong, weak_exchange], store_lookup(store, []), w, NOW)}
    assert scored["e1/m2"].source == "hit"
    assert scored["e1/m2"].explain["relevance"] == scored["e1/m2"].explain["base"]
    assert "e1/m3" not in scored  # a lifted node lifts nothing further
    for s in scored.values():
        check_explain_adds_up(s)


def test_zero_damping_turns_the_lifts_off() -> None:
    w = ScoringWeights(child_damping=0.0, sibling_damping=0.0)
    exchange = Candidate("e1", cos=0.8, vector_rank=1, age_days=1, children=["e1/m1"])
    message = Candidate("e2/m1", cos=0.8, vector_rank=2, age_days=1, siblings=["e2/m2"])
    store = {i: Candidate(i, age_days=1) for i in ("e1/m1", "e2/m2")}
    scored = {s.id: s for s in score_candidates([exchange, message], store_lookup(store, []), w, NOW)}
    assert "e1/m1" not in scored and "e2/m2" not in scored


def test_diversity_and_budgets_hold_on_lifted_nodes() -> None:
    v = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    exchange = Candidate("e1", cos=0.9, vector_rank=1, age_days=1, vector=v, text="x" * 300, chars=300,
                         children=["e1/m1", "e1/m2"])
    store = {
        # a paraphrase of the exchange (cosine 1): dropped by diversity
        "e1/m1": Candidate("e1/m1", age_days=1, vector=v, text="y" * 300, chars=300),
        "e1/m2": Candidate("e1/m2", age_days=1, vector=np.array([0.0, 1.0, 0.0], dtype=np.float32),
                           text="z" * 300, chars=300),
    }
    scored = score_candidates([exchange], store_lookup(store, []), ScoringWeights(), NOW)
    picked = select(scored, max_nodes=5, max_chars=450, max_node_chars=250, diversity=0.88)
    assert [p.id for p in picked] == ["e1", "e1/m2"]
    assert sum(p.chars for p in picked) <= 450 and all(p.chars <= 250 for p in picked)


def test_a_message_lifts_the_turn_that_replies_to_it_across_exchanges() -> None:
    # "e2/m2" asks; the answer opens the next exchange, so it is no sibling: the reply lift finds it
    question = Candidate("e2/m2", parent="e2", cos=0.7, lexical=4.0, vector_rank=1, fts_rank=1, age_days=3,
                         siblings=["e2/m1"], reply="e3/m1", text="What's your best camping memory?")
    store = {i: Candidate(i, age_days=3, text=i) for i in ("e2/m1", "e3/m1", "e2")}
    w = ScoringWeights()
    scored = {s.id: s for s in score_candidates([question], store_lookup(store, []), w, NOW)}
    q_base = float(scored["e2/m2"].explain["base"])
    answer = scored["e3/m1"]
    assert answer.source == "propagated"
    assert answer.explain["propagated_from"] == "e2/m2" and answer.explain["propagated_via"] == "reply"
    assert answer.explain["propagation"] == pytest.approx(q_base * w.reply_damping)
    assert scored["e2/m1"].explain["propagated_via"] == "sibling"
    # the answer ranks with the question that found it, above the question's sibling
    ranked = sorted(scored.values(), key=lambda s: -s.score)
    assert [s.id for s in ranked][:2] == ["e2/m2", "e3/m1"]
    assert answer.score > scored["e2/m1"].score
    for s in scored.values():
        check_explain_adds_up(s)


def test_a_reply_that_is_also_a_sibling_takes_the_larger_lift_and_zero_turns_it_off() -> None:
    question = Candidate("e1/m1", parent="e1", cos=0.7, vector_rank=1, age_days=3, siblings=["e1/m2"], reply="e1/m2",
                         text="Did you go?")
    store = {i: Candidate(i, age_days=3) for i in ("e1/m2", "e1")}
    w = ScoringWeights()
    scored = {s.id: s for s in score_candidates([question], store_lookup(store, []), w, NOW)}
    assert scored["e1/m2"].explain["propagated_via"] == "reply"
    assert scored["e1/m2"].explain["propagation"] == pytest.approx(float(scored["e1/m1"].explain["base"]) * w.reply_damping)
    off = ScoringWeights(reply_damping=0.0)
    scored = {s.id: s for s in score_candidates([question], store_lookup(store, []), off, NOW)}
    assert scored["e1/m2"].explain["propagated_via"] == "sibling"


def test_a_question_lifts_its_answer_whole_and_a_statement_its_reaction_by_half() -> None:
    # Both turns match the query equally; after the question comes the answer asked for,
    # after the statement a reaction. A direct, weaker hit stays above the reaction.
    asks = Candidate("q", cos=0.6, lexical=5.0, vector_rank=1, fts_rank=1, age_days=400, reply="answer",
                     text="Caroline: What's your best camping memory?")
    tells = Candidate("s", cos=0.6, lexical=5.0, vector_rank=2, fts_rank=2, age_days=400, reply="reaction",
                      text="Melanie: We went camping at the lake last summer.")
    direct = Candidate("d", cos=0.5, lexical=3.0, vector_rank=3, fts_rank=3, age_days=400,
                       text="Caroline: The camping gear is in the garage.")
    store = {"answer": Candidate("answer", age_days=400, text="Melanie: Watching the meteor shower with my kids."),
             "reaction": Candidate("reaction", age_days=400, text="Caroline: Wow, sounds like fun!")}
    w = ScoringWeights()
    assert (w.reply_damping, w.reply_statement_damping) == (1.0, 0.5)
    scored = {s.id: s for s in score_candidates([asks, tells, direct], store_lookup(store, []), w, NOW)}
    assert scored["answer"].explain["propagation"] == pytest.approx(float(scored["q"].explain["base"]))
    assert scored["reaction"].explain["propagation"] == pytest.approx(0.5 * float(scored["s"].explain["base"]))
    ranked = [s.id for s in sorted(scored.values(), key=lambda s: (-s.score, s.id))]
    assert ranked.index("answer") < ranked.index("d") < ranked.index("reaction")
    # the same share for both (None), as before: the reaction climbs above the direct hit
    flat = ScoringWeights(reply_damping=0.9, reply_statement_damping=None)
    scored_flat = {s.id: s for s in score_candidates([asks, tells, direct], store_lookup(store, []), flat, NOW)}
    assert scored_flat["reaction"].score > scored_flat["d"].score
    for s in scored.values():
        check_explain_adds_up(s)


# Hits that hold their whole content prior, as most do: a lifted node may still gain it all,
# and the bound counts that (hits of thanks alone leave the bound looser, never wrong).
SAYS_SOMETHING = "Ann: we hiked the ridge trail near Denver with twelve friends, camped by the lake, cooked dinner and fished"


def test_scoring_only_the_head_is_exact_and_reads_fewer_lifted_nodes() -> None:
    from memvault.recall.scoring import score_head

    rng = np.random.default_rng(4)
    hits, store = [], {}
    for i in range(60):
        hits.append(Candidate(f"h{i}", parent=f"p{i % 7}", cos=float(rng.uniform(0.1, 0.9)), vector_rank=i + 1,
                              lexical=float(rng.uniform(0, 5)) if i % 2 else None, fts_rank=i + 1 if i % 2 else None,
                              age_days=float(rng.uniform(0, 400)), importance=float(rng.uniform(0, 1)),
                              access=int(rng.integers(0, 20)), reply=f"r{i}",
                              similar=[(f"s{i}", 0.8), (f"h{(i + 1) % 60}", 0.75)], siblings=[f"k{i}"],
                              text=SAYS_SOMETHING))
    for i in range(60):
        for name in (f"p{i % 7}", f"r{i}", f"s{i}", f"k{i}"):
            store[name] = Candidate(name, age_days=float(rng.uniform(0, 400)), importance=float(rng.uniform(0, 1)),
                                    access=int(rng.integers(0, 50)))
    full_asked: list[list[str]] = []
    full = score_candidates(hits, store_lookup(store, full_asked), ScoringWeights(), NOW)
    for keep in (1, 5, 24, 40):
        asked: list[list[str]] = []
        head, complete = score_head(hits, store_lookup(store, asked), ScoringWeights(), NOW, keep=keep)
        assert [(s.id, s.score) for s in head[:keep]] == [(s.id, s.score) for s in full[:keep]]
        assert not complete and len(asked[0] if asked else []) < len(full_asked[0])
    # fewer hits than asked for: nothing can be left out
    everything, complete = score_head(hits, store_lookup(store, []), ScoringWeights(), NOW, keep=61)
    assert complete and [s.id for s in everything] == [s.id for s in full]

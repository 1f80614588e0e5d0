"""bench/pool_variants.py: the fifth round's rankers add what they name and nothing else."""

from dataclasses import replace
from typing import Any

import numpy as np

from bench import recall_quality as rq
from bench.pool_variants import MessageNodes, conversation_rows, near_turns, speaker_pool
from bench.scoring_variants import BenchWeights
from memvault.recall.scoring import ScoringWeights

TURNS = [("Ann", "I adopted a puppy called Rex last week."), ("Bo", "Lovely! What breed is he?"),
         ("Ann", "A beagle, he is very loud."), ("Bo", "I play the clarinet in a band."),
         ("Ann", "I love classical music, Bach mostly."), ("Bo", "We should go to a concert.")]
DATA: list[dict[str, Any]] = [{"sample_id": "c1", "conversation": {
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [{"dia_id": f"D1:{i + 1}", "speaker": who, "text": text} for i, (who, text) in enumerate(TURNS)]}}]
BASE = BenchWeights(**ScoringWeights().model_dump(), hop_k=0)


def _setup() -> tuple[MessageNodes, dict[str, tuple[str, str | None]], dict[str, str]]:
    rows = [r for _, r in conversation_rows(DATA, 1)]
    nodes = {r["id"]: (r["kind"], r["ref"]) for r in rows}
    ids = {r["ref"]: r["id"] for r in rows if r["kind"] == "message"}
    return MessageNodes(DATA, {}, 1), nodes, ids


def _case(msgs: MessageNodes, ids: dict[str, str], question: str) -> rq.Case:
    # One hit, the first turn; what it lifts (its reply) read as the capture reads it.
    hit = replace(msgs.by_conv["c1"][ids["D1:1"]], lexical=3.0, fts_rank=1, cos=0.5, vector_rank=1)
    reply = msgs.by_conv["c1"][ids["D1:2"]]
    return rq.Case(question, 3, ["D1:5"], [hit], {reply.id: reply}, {})


def test_message_nodes_know_order_and_speaker() -> None:
    msgs, _, ids = _setup()
    order, i = msgs.place[ids["D1:3"]]
    assert i == 2 and order[0] == ids["D1:1"] and len(order) == len(TURNS)
    assert msgs.speaker[ids["D1:4"]] == "bo"


def test_near_turns_lift_the_turn_two_places_away() -> None:
    msgs, nodes, ids = _setup()
    case = _case(msgs, ids, "What is the name of Ann's puppy?")
    plain = near_turns(BASE, msgs, 0.0, (2,), False)(case, nodes)
    lifted = near_turns(BASE, msgs, 0.45, (2,), False)(case, nodes)
    assert "D1:3" not in plain and "D1:3" in lifted
    assert "D1:5" not in lifted  # four places away: only with steps (2, 4)
    assert "D1:5" in near_turns(BASE, msgs, 0.45, (2, 4), False)(case, nodes)
    # On guesses only: this question asks for none, so nothing moves.
    assert near_turns(BASE, msgs, 0.45, (2,), True)(case, nodes) == plain


def test_speaker_pool_adds_the_named_persons_nearest_turns() -> None:
    msgs, nodes, ids = _setup()
    question = "Would Ann enjoy a Vivaldi concert?"
    rng = np.random.default_rng(0)
    vec = {nid: v / np.linalg.norm(v) for nid in msgs.by_conv["c1"] for v in [rng.normal(size=8)]}
    qvec = {question: vec[ids["D1:5"]]}  # nearest: Ann's fifth turn, then whatever chance gives
    case = _case(msgs, ids, question)
    plain = speaker_pool(BASE, msgs, vec, qvec, 0, False)(case, nodes)
    ranked = speaker_pool(BASE, msgs, vec, qvec, 1, False)(case, nodes)
    assert set(ranked) - set(plain) == {"D1:5", "D1:6"}  # the pooled turn, and the reply it lifts
    assert ranked.index("D1:5") < ranked.index("D1:2")  # Ann's, nearest the query: above the reply lifted from the hit

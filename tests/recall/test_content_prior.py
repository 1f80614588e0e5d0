"""The content prior (bench/README.md, "Recall quality"): a node gains by what it says — its
content words past the speaker's label — so a turn of thanks that shares the query's name does
not outrank the turn that holds the evidence; the term is in ``explain`` and adds up."""

from collections.abc import Mapping
from datetime import datetime

import pytest

from memvault.recall.query import content_words
from memvault.recall.scoring import Candidate, ScoringWeights, score_candidates, score_head
from tests.helpers import check_explain_adds_up

NOW = datetime(2025, 1, 1)
QUERY = "What activities does Melanie do?"
THANKS = "Melanie: Wow, that's great, Caroline!"
EVIDENCE = "Melanie: I just signed up for a pottery class yesterday, it is like therapy and I paint landscapes with the kids"


def no_lookup(ids: list[str]) -> Mapping[str, Candidate]:
    return {}


def test_content_words_skip_the_speaker_function_words_and_filler() -> None:
    assert content_words(THANKS) == 1  # "caroline"; wow, that's, great are filler
    assert content_words("Melanie: great") == 0  # the label is who speaks, not what is said
    assert content_words(EVIDENCE) == 8
    assert content_words("pottery class on Tuesday") == 3  # no label: every word counts


def hits() -> list[Candidate]:
    # BM25 puts the short turn first on the name alone; cosine barely tells them apart.
    thanks = Candidate("thanks", cos=0.42, lexical=6.0, vector_rank=1, fts_rank=1, age_days=400, text=THANKS)
    evidence = Candidate("evidence", cos=0.40, lexical=4.5, vector_rank=2, fts_rank=2, age_days=400, text=EVIDENCE)
    fillers = [Candidate(f"f{i}", cos=0.2, lexical=1.0, vector_rank=3 + i, fts_rank=3 + i, age_days=400,
                         text=f"Caroline: an unrelated turn about lunch {i}") for i in range(4)]
    return [thanks, evidence, *fillers]


def test_the_turn_that_says_something_outranks_a_turn_of_thanks() -> None:
    scored = score_candidates(hits(), no_lookup, ScoringWeights(), NOW, query=QUERY)
    assert [s.id for s in scored[:2]] == ["evidence", "thanks"]
    by_id = {s.id: s.explain for s in scored}
    w = ScoringWeights()
    assert by_id["evidence"]["content_prior"] == pytest.approx(w.w_content * 8 / w.content_full)
    assert by_id["thanks"]["content_prior"] == pytest.approx(w.w_content * 1 / w.content_full)
    for s in scored:
        check_explain_adds_up(s)
    # `recall --explain` says the term by name, with its value
    from memvault.cli.explain import explain_lines

    said = "\n".join(explain_lines(scored[0].explain))
    assert f"content +{w.w_content * 8 / w.content_full:.4f}" in said.split("priors: ")[1]
    # the prior decides: without it the name match wins
    off = score_candidates(hits(), no_lookup, ScoringWeights(w_content=0.0), NOW, query=QUERY)
    assert off[0].id == "thanks" and all(s.explain["content_prior"] == 0.0 for s in off)


def test_the_prior_is_full_at_content_full_words() -> None:
    long = Candidate("long", cos=0.5, vector_rank=1, text=EVIDENCE)
    scored = score_candidates([long], no_lookup, ScoringWeights(content_full=5), NOW)
    assert scored[0].explain["content_prior"] == pytest.approx(ScoringWeights().w_content)


def test_the_head_stays_exact_with_the_content_prior() -> None:
    # A lifted reply that says something can climb over hits of thanks: the bound on what a
    # lifted node can reach counts the prior, so score_head's first places are the whole list's.
    thin = [Candidate(f"h{i}", cos=0.9 - i / 50, lexical=5.0 - i / 10, vector_rank=i + 1, fts_rank=i + 1,
                      age_days=400, reply=f"r{i}", text="Ann: thanks Bo?") for i in range(12)]
    store = {f"r{i}": Candidate(f"r{i}", age_days=400, text=EVIDENCE) for i in range(12)}
    lookup = lambda ids: {i: store[i] for i in ids if i in store}  # noqa: E731
    full = score_candidates(thin, lookup, ScoringWeights(), NOW, query=QUERY)
    head, _ = score_head(thin, lookup, ScoringWeights(), NOW, keep=5, query=QUERY)
    assert [(s.id, s.score) for s in head[:5]] == [(s.id, s.score) for s in full[:5]]
    assert any(s.id.startswith("r") for s in full[:5])  # a lifted reply made it to the head

"""Fusion chosen left one conversation out (bench/README.md): the full-text list weighs more than
cosine, RRF with k = 10, the exact-token term, the date and when priors — on hand-built cases,
with every explain term adding up to the score."""

from collections.abc import Mapping
from datetime import datetime

import pytest

from memvault.recall.scoring import Candidate, ScoringWeights, score_candidates, score_head
from memvault.config.settings import RecallSettings
from tests.helpers import check_explain_adds_up

NOW = datetime(2025, 1, 1)


def no_lookup(ids: list[str]) -> Mapping[str, Candidate]:
    return {}


def fillers(n: int, start: int = 3) -> list[Candidate]:
    return [Candidate(f"f{i}", cos=0.3, lexical=1.0, vector_rank=start + i, fts_rank=start + i, age_days=400,
                      text=f"an unrelated turn about lunch number {i}") for i in range(n)]


def test_an_exact_token_ranks_the_turn_that_contains_it_first() -> None:
    # The embedding puts the near miss first (numbers blur in vectors) and BM25 barely tells
    # them apart; the turn that holds "1432" is the one meant.
    near_miss = Candidate("near", cos=0.80, lexical=5.0, vector_rank=1, fts_rank=2, age_days=400,
                          text="PR-1433 changed the retry loop of the uploader")
    exact = Candidate("exact", cos=0.62, lexical=6.0, vector_rank=3, fts_rank=1, age_days=400,
                      text="PR-1432 moved the nightly backups to 3am")
    hits = [near_miss, exact, *fillers(4, start=4)]
    scored = score_candidates(hits, no_lookup, ScoringWeights(), NOW, query="What did PR-1432 change?")
    assert scored[0].id == "exact"
    e = scored[0].explain
    # "pr" is in two of six hits (more than a quarter): it tells nothing apart; "1432" does
    assert e["exact"] == 1.0 and e["exact_term"] == pytest.approx(0.1)
    assert {s.id: s for s in scored}["near"].explain["exact"] == 0.0
    # without the query, or with the term off, the near miss wins: the token decides
    assert score_candidates(hits, no_lookup, ScoringWeights(), NOW)[0].id == "near"
    assert score_candidates(hits, no_lookup, ScoringWeights(w_exact=0.0), NOW, query="What did PR-1432 change?")[0].id == "near"
    for s in scored:
        check_explain_adds_up(s)


def test_full_text_outweighs_cosine_and_rrf_rewards_agreement() -> None:
    # A lexical match that cosine ranks lower beats a paraphrase cosine prefers (seed weights
    # ranked them the other way round).
    paraphrase = Candidate("para", cos=0.90, lexical=1.0, vector_rank=1, fts_rank=5, age_days=400)
    lexical = Candidate("lex", cos=0.55, lexical=8.0, vector_rank=4, fts_rank=1, age_days=400)
    scored = score_candidates([paraphrase, lexical, *fillers(3, start=6)], no_lookup, ScoringWeights(), NOW)
    assert scored[0].id == "lex"
    seed = ScoringWeights(w_cos=0.55, w_lex=0.20, w_rrf=0.25, rrf_k=60)
    assert score_candidates([paraphrase, lexical, *fillers(3, start=6)], no_lookup, seed, NOW)[0].id == "para"
    # k = 10: first place in both lists is worth clearly more than second and third
    e = {s.id: s.explain for s in score_candidates(
        [Candidate("a", cos=0.5, vector_rank=1, fts_rank=1, lexical=1.0),
         Candidate("b", cos=0.5, vector_rank=2, fts_rank=3, lexical=1.0)], no_lookup, ScoringWeights(), NOW)}
    assert e["a"]["rrf"] == pytest.approx(1.0)
    assert e["b"]["rrf"] == pytest.approx((1 / 12 + 1 / 13) * 11 / 2)
    assert float(e["a"]["rrf"]) - float(e["b"]["rrf"]) > 0.1


def test_the_date_prior_goes_to_nodes_of_the_named_period() -> None:
    def turn(cid: str, when: datetime | None) -> Candidate:
        return Candidate(cid, cos=0.5, lexical=2.0, vector_rank=1, fts_rank=1, timestamp=when, text="we talked")

    hits = [turn("may", datetime(2023, 5, 20)), turn("june-early", datetime(2023, 6, 10)),
            turn("july", datetime(2023, 7, 1)), turn("april", datetime(2023, 4, 30)), turn("undated", None)]
    scored = {s.id: s for s in score_candidates(hits, no_lookup, ScoringWeights(), NOW,
                                                 query="What did Maria start in May 2023?")}
    priors = {cid: s.explain["date_prior"] for cid, s in scored.items()}
    assert priors == {"may": 0.2, "june-early": 0.2, "july": 0.0, "april": 0.0, "undated": 0.0}
    assert scored["may"].score > scored["july"].score
    plain = score_candidates(hits, no_lookup, ScoringWeights(), NOW, query="What did Maria start?")
    assert all(s.explain["date_prior"] == 0.0 for s in plain)
    for s in scored.values():
        check_explain_adds_up(s)


def test_a_when_question_prefers_the_turn_that_dates_it() -> None:
    dated = Candidate("dated", cos=0.5, lexical=3.0, vector_rank=2, fts_rank=2, age_days=400,
                      text="I went to the support group last Friday, it was great")
    undated = Candidate("undated", cos=0.55, lexical=3.5, vector_rank=1, fts_rank=1, age_days=400,
                        text="The support group really helps me")
    when = score_candidates([dated, undated], no_lookup, ScoringWeights(), NOW,
                            query="When did Caroline go to the support group?")
    assert when[0].id == "dated" and when[0].explain["when_prior"] == 0.15
    assert {s.id: s for s in when}["undated"].explain["when_prior"] == 0.0
    what = score_candidates([dated, undated], no_lookup, ScoringWeights(), NOW,
                            query="What does Caroline think of the support group?")
    assert what[0].id == "undated" and all(s.explain["when_prior"] == 0.0 for s in what)
    for s in when:
        check_explain_adds_up(s)


def test_every_term_adds_up_with_all_of_them_on() -> None:
    hit = Candidate("m1", parent="e1", cos=0.6, lexical=4.0, vector_rank=1, fts_rank=1, timestamp=datetime(2023, 5, 3),
                    importance=0.5, access=3, reply="m2", text="Yesterday I fixed PR-1432 with Aragorn")
    other = Candidate("m3", cos=0.4, lexical=2.0, vector_rank=2, fts_rank=2, timestamp=datetime(2023, 8, 3),
                      text="nothing here")
    store = {"m2": Candidate("m2", timestamp=datetime(2023, 5, 3), text="great, thanks"),
             "e1": Candidate("e1", timestamp=datetime(2023, 5, 3), text="")}
    scored = {s.id: s for s in score_candidates(
        [hit, other, *fillers(4, start=3)], lambda ids: {i: store[i] for i in ids if i in store}, ScoringWeights(),
        NOW, query="When did Aragorn fix PR-1432 in May 2023?")}
    e = scored["m1"].explain
    assert float(e["exact_term"]) > 0 and float(e["date_prior"]) > 0 and float(e["when_prior"]) > 0
    terms = sum(float(e[k]) for k in ("cos_term", "lexical_term", "rrf_term", "exact_term"))
    assert float(e["base"]) == pytest.approx(terms * float(e["tier"]))
    priors = sum(float(v) for k, v in e.items() if k.endswith("_prior"))
    assert scored["m1"].score == pytest.approx(float(e["relevance"]) + priors)
    # m1 asks no question: its reply gets half its base
    assert scored["m2"].source == "propagated" and scored["m2"].explain["propagation"] == pytest.approx(0.5 * float(e["base"]))
    for s in scored.values():
        check_explain_adds_up(s)


def test_the_head_stays_exact_with_the_query_priors() -> None:
    # A lifted node can gain the date prior: the bound on what it can reach counts it, so
    # the first places of score_head equal those of the whole list.
    hits = [Candidate(f"h{i}", cos=0.9 - i / 50, lexical=5.0 - i / 10, vector_rank=i + 1, fts_rank=i + 1,
                      timestamp=datetime(2023, 1, 1), reply=f"r{i}", text="plain") for i in range(12)]
    store = {f"r{i}": Candidate(f"r{i}", timestamp=datetime(2023, 5, 2), text="last week") for i in range(12)}
    lookup = lambda ids: {i: store[i] for i in ids if i in store}  # noqa: E731
    query = "When did it happen in May 2023?"
    full = score_candidates(hits, lookup, ScoringWeights(), NOW, query=query)
    head, _ = score_head(hits, lookup, ScoringWeights(), NOW, keep=5, query=query)
    assert [(s.id, s.score) for s in head[:5]] == [(s.id, s.score) for s in full[:5]]
    assert any(s.id.startswith("r") for s in full[:5])  # a lifted, dated reply made it to the head


def test_the_settings_defaults_are_the_scoring_defaults() -> None:
    settings, weights = RecallSettings(), ScoringWeights()
    for name in set(RecallSettings.model_fields) & set(ScoringWeights.model_fields):
        assert getattr(settings, name) == getattr(weights, name), name

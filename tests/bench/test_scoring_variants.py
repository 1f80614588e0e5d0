"""bench/scoring_variants.py: the variants the product did not adopt, built on its scoring."""

from datetime import datetime

import numpy as np
import pytest

from bench.scoring_variants import BenchWeights, score_variants
from memvault.recall.scoring import Candidate, ScoringWeights, score_candidates

NOW = datetime(2025, 1, 1)


def _lookup(ids: list[str]) -> dict[str, Candidate]:
    return {}


def _case(seed: int) -> list[Candidate]:
    rng = np.random.default_rng(seed)
    hits = []
    for i in range(30):
        hits.append(Candidate(f"h{i}", parent=f"p{i % 5}", cos=float(rng.uniform(0.1, 0.9)), vector_rank=i + 1,
                              lexical=float(rng.uniform(0, 5)) if i % 2 else None, fts_rank=i + 1 if i % 2 else None,
                              age_days=float(rng.uniform(0, 400)), reply=f"h{i + 1}" if i % 3 else None,
                              text=f"turn {i} about the lake" + ("?" if i % 4 else ".")))
    return hits


def test_with_every_knob_off_it_is_the_product() -> None:
    hits = _case(1)
    product = score_candidates(hits, _lookup, ScoringWeights(), NOW, query="the lake")
    bench = score_variants(hits, _lookup, BenchWeights(top_k=40), NOW, query="the lake")
    assert [(s.id, s.score, s.explain) for s in bench] == [(s.id, s.score, s.explain) for s in product]


@pytest.mark.parametrize("change", [{"cos_norm": "minmax"}, {"lex_norm": "minmax"}, {"peak_gain": 1.0},
                                    {"kin_share": 0.2}, {"prompt_damping": 0.5}])
def test_each_knob_moves_the_scores_and_its_terms_add_up(change: dict[str, object]) -> None:
    hits = _case(2)
    product = {s.id: s.score for s in score_candidates(hits, _lookup, ScoringWeights(), NOW, query="the lake")}
    scored = score_variants(hits, _lookup, BenchWeights(**change), NOW, query="the lake")
    assert {s.id: s.score for s in scored} != product
    for s in scored:
        e = s.explain
        relevance = max(float(e["base"] or 0), float(e["propagation"] or 0)) + float(e.get("kin_support") or 0)
        assert e["relevance"] == pytest.approx(relevance)
        terms = sum(float(v or 0) for k, v in e.items() if k.endswith(("_prior", "_bonus")))
        assert s.score == pytest.approx(relevance + terms)


def test_kin_support_and_the_prompt_lift_add_up_when_on() -> None:
    # Tried and not adopted (bench/README.md, sixth round).
    question = Candidate("q", cos=0.6, lexical=5.0, vector_rank=1, fts_rank=1, age_days=400, reply="a",
                         text="Which book did you read?")
    answer = Candidate("a", cos=0.5, lexical=4.0, vector_rank=2, fts_rank=2, age_days=400, text="Dune, twice.")
    default = {s.id: s for s in score_variants([question, answer], _lookup, BenchWeights(), NOW)}
    assert "kin_support" not in default["a"].explain and default["q"].explain["propagated_via"] is None
    w = BenchWeights(kin_share=0.2, prompt_damping=0.5)
    scored = {s.id: s for s in score_variants([question, answer], _lookup, w, NOW)}
    a, q = scored["a"].explain, scored["q"].explain
    base_a, base_q = float(a["base"] or 0), float(q["base"] or 0)
    # the answer is lifted by its question (whole) and keeps a fifth of its own base on top
    assert a["relevance"] == pytest.approx(max(base_a, base_q) + 0.2 * min(base_a, base_q))
    # the question is lifted by its answer (the prompt lift)
    assert q["propagated_via"] == "prompt" and q["propagation"] == pytest.approx(0.5 * base_a)

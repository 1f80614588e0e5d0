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


def _turns() -> list[Candidate]:
    # Ann's and Bo's turns over three sessions; session s0 holds the four best.
    out = []
    for i in range(12):
        who = "Ann" if i % 2 else "Bo"
        out.append(Candidate(f"t{i}", cos=0.9 - i * 0.02, lexical=5.0 - i * 0.2, vector_rank=i + 1, fts_rank=i + 1,
                             age_days=10, doc=f"s{0 if i < 4 else i % 3}", reply=f"t{i + 1}",
                             text=f"{who}: the lake trip number {i}"))
    return out


@pytest.mark.parametrize("query, change, term", [
    ("Would Ann like the lake?", {"w_guess": 0.2}, "guess_speaker_bonus"),
    ("What lakes has Ann visited?", {"w_list": 0.1}, "list_speaker_bonus"),
])
def test_a_question_form_adds_speaker_weight_to_the_named_persons_turns(query: str, change: dict[str, float],
                                                                        term: str) -> None:
    # Tried and not adopted (bench/README.md, third round): more speaker weight on a guess or a list.
    scored = {s.id: s for s in score_variants(_turns(), _lookup, BenchWeights(**change), NOW, query=query)}
    plain = {s.id: s for s in score_variants(_turns(), _lookup, BenchWeights(), NOW, query=query)}
    weight = next(iter(change.values()))
    for sid, s in scored.items():
        ann = s.candidate.text.startswith("Ann:")
        assert s.explain.get(term, 0.0) == (weight if ann else 0.0)
        assert s.score == pytest.approx(plain[sid].score + (weight if ann else 0.0))
    # Another form of question: no such term.
    other = score_variants(_turns(), _lookup, BenchWeights(**change), NOW, query="Where is the lake Ann saw?")
    assert all(term not in s.explain for s in other)


def test_the_diversity_penalties_spread_the_head_and_add_up() -> None:
    plain = [s.id for s in score_variants(_turns(), _lookup, BenchWeights(), NOW, query="the lake trip")]
    assert plain[:4] == ["t0", "t1", "t2", "t3"]  # session s0 fills the head
    spread = score_variants(_turns(), _lookup, BenchWeights(session_penalty=1.0), NOW, query="the lake trip")
    assert len({s.candidate.doc for s in spread[:3]}) == 3  # one per session first
    near = score_variants(_turns(), _lookup, BenchWeights(passage_penalty=1.0), NOW, query="the lake trip")
    assert [s.id for s in near][:2] == ["t0", "t2"]  # t1 replies to t0: it waits
    for s in [*spread, *near]:
        e = s.explain
        parts = max(float(e["base"] or 0), float(e["propagation"] or 0))
        parts += sum(float(v or 0) for k, v in e.items() if k.endswith(("_prior", "_bonus")))
        assert s.score == pytest.approx(parts) == pytest.approx(float(e["total"]))

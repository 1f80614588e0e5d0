"""Scoring variants tried and not adopted, kept so the fusion rounds still reproduce.

The product's score (``memvault.recall.scoring``) has none of these; ``BenchWeights`` adds
their knobs (and the candidate depths) to the product's weights and ``score_variants`` scores
with them, built from the
product's own pieces (the query view, the terms of a base, the lifts, one node's score), so
at every knob's off value it is the product's ``score_candidates`` itself:

- ``cos_norm`` / ``lex_norm`` "minmax": each list rescaled over the query's own hits, best 1,
  worst 0 (the product: cosine as is, BM25 over the query's best);
- ``peak_gain``: a share of the weaker list weight moved to the list whose best stands out;
- ``prompt_damping``: a message hit lifts the hit it replies to (the turn before it);
- ``kin_share``: a hit that is also lifted keeps a share of the weaker of its base and its
  lift on top of the stronger.
- ``w_guess`` / ``w_list``: more speaker weight on a question that asks for a guess about the
  named person ("Would Ann enjoy …") or for a list of their things ("What books has Ann
  read?"): the evidence of both is the person's own turns (``guess_speaker_bonus``,
  ``list_speaker_bonus``);
- ``session_penalty`` / ``passage_penalty``: diversity in the head (MMR-style, greedy): a node
  loses this much for each node of its session (document), or each turn next to it (its reply
  or the turn it replies to), already ranked above it, so one passage cannot fill the top 10.
"""

import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from typing import Literal

from pydantic import Field

from memvault.recall.gather import bonuses, explain_hop, gather
from memvault.recall.query import asks_guess, exact_tokens, speaker
from memvault.recall.scoring import (Candidate, Lookup, Scored, ScoringWeights, _age, _base, _lifts, _priors, _Query,
                                     _query_view, _score, _terms, score_candidates)


class BenchWeights(ScoringWeights):
    """Scoring weights, the candidate depth they are scored at, and the knobs of the variants
    the product did not adopt."""

    top_k: int | None = Field(default=None, description="Candidates per list (recall.top_k); None: as captured")
    hop_k: int | None = Field(default=None, description="Second-hop candidates (recall.hop_k); None: as captured")

    cos_norm: Literal["raw", "minmax"] = Field(
        default="raw", description="Cosine as is (raw) or rescaled over the query's vector hits, best 1, worst 0 (minmax)")
    lex_norm: Literal["max", "minmax"] = Field(
        default="max", description="BM25 over the query's best (max) or rescaled over its full-text hits, best 1, worst 0 (minmax)")
    peak_gain: float = Field(
        default=0.0, description="Query-dependent weights: share of min(w_cos, w_lex) moved towards the more peaked list")
    peak_depth: int = Field(default=10, description="How peaked a list is: its best against the mean of its first peak_depth")
    kin_share: float = Field(
        default=0.0, description="Share of the weaker of a hit's own base and its best lift added to the stronger (kin support)")
    prompt_damping: float = Field(
        default=0.0, description="Share of a message hit's base passed to the hit it replies to (the turn before it)")
    w_guess: float = Field(default=0.0, description="Added to the speaker term on a question that asks for a guess")
    w_list: float = Field(default=0.0, description="Added to the speaker term on a question that asks for a list")
    session_penalty: float = Field(default=0.0, description="Lost per node of the same session ranked above (diversity)")
    passage_penalty: float = Field(default=0.0, description="Lost per adjacent turn ranked above (diversity)")
    diversity_depth: int = Field(default=30, description="Places of the head the diversity penalties reorder")

    def is_product(self) -> bool:
        """Every variant knob at its off value: the product's scoring applies."""
        return ((self.cos_norm, self.lex_norm, self.peak_gain, self.kin_share, self.prompt_damping,
                 self.session_penalty, self.passage_penalty, self.w_guess, self.w_list) == ("raw", "max", 0, 0, 0, 0, 0, 0, 0))


def _peak(values: list[float], depth: int) -> float:
    """How far a list's best stands out: (best − mean of the first ``depth``) / best, in [0, 1]."""
    top = sorted(values, reverse=True)[: max(depth, 2)]
    if len(top) < 2 or top[0] <= 0:
        return 0.0
    return max(0.0, (top[0] - sum(top[1:]) / (len(top) - 1)) / top[0])


def _lists(hits: dict[str, Candidate]) -> tuple[list[float], list[float]]:
    lex = [c.lexical for c in hits.values() if c.lexical is not None and c.fts_rank is not None]
    cos = [c.cos for c in hits.values() if c.cos is not None and c.vector_rank is not None]
    return lex, cos


def _view(hits: dict[str, Candidate], query: str | None, w: BenchWeights) -> _Query:
    q = _query_view(hits, query, w)
    lex, cos = _lists(hits)
    if w.peak_gain and lex and cos:
        p_lex, p_cos = _peak(lex, w.peak_depth), _peak(cos, w.peak_depth)
        if p_lex + p_cos > 0:
            shift = w.peak_gain * (p_lex - p_cos) / (p_lex + p_cos) * min(w.w_cos, w.w_lex)
            q.w_cos, q.w_lex = w.w_cos - shift, w.w_lex + shift
    return q


def _variant_base(c: Candidate, hits: dict[str, Candidate], q: _Query, age: float | None,
                  w: BenchWeights) -> dict[str, float | str | None]:
    if w.cos_norm == "raw" and w.lex_norm == "max":
        return _base(c, q, age, w)
    lex_list, cos_list = _lists(hits)
    cos = min(max(c.cos or 0.0, 0.0), 1.0)
    if w.cos_norm == "minmax" and c.cos is not None:
        lo, hi = (min(cos_list), max(cos_list)) if cos_list else (0.0, 1.0)
        cos = min(max((c.cos - lo) / (hi - lo), 0.0), 1.0) if hi > lo else 1.0
    raw_lex, min_lex = c.lexical or 0.0, min(lex_list, default=0.0)
    if raw_lex <= 0 or q.max_lex <= 0:
        lex = 0.0
    elif w.lex_norm == "minmax":
        lex = (raw_lex - min_lex) / (q.max_lex - min_lex) if q.max_lex > min_lex else 1.0
    else:
        lex = raw_lex / q.max_lex
    return _terms(c, q, age, w, cos, lex)


def _kin(s: Scored, share: float) -> Scored:
    # A hit that its neighbour also lifts (a question matched together with its answer) keeps
    # a share of the weaker of the two on top of the stronger; summed in the product's order.
    e = s.explain
    base, propagation = float(e["base"] or 0.0), float(e["propagation"] or 0.0)
    support = share * min(base, propagation)
    relevance = max(base, propagation) + support
    extra = sum(float(v or 0.0) for k, v in e.items() if k.endswith("_bonus"))
    priors = sum(float(v or 0.0) for k, v in e.items() if k.endswith("_prior"))
    total = relevance + extra + priors
    return replace(s, score=total, explain={**e, "kin_support": support, "relevance": relevance, "total": total})


# A list of a person's things ("What books has Ann read?", "Which cities has Bo visited?"): a
# plural noun (or "kinds of" a noun) before the auxiliary; one item a turn, over sessions.
_ASKS_LIST = re.compile(
    r"^\s*(?:what|which)\s+(?:(?:kinds|types|sorts)\s+of\s+\w+|(?:\w+\s+)?(\w+s))\s+(?:has|have|does|do|did|are|were)\b",
    re.I)
_NOT_PLURAL = {"is", "was", "has", "does", "this", "as", "us", "yes", "its"}


def asks_list(query: str) -> bool:
    """A question that asks for several things of a person ("What books has Ann read?")."""
    m = _ASKS_LIST.search(query)
    return bool(m and (m.group(1) or "").lower() not in _NOT_PLURAL)


def _form_speaker(query: str | None, w: BenchWeights) -> tuple[str, float, frozenset[str]] | None:
    """(the bonus's name, its weight, the names the query gives) when a question form applies."""
    if not query:
        return None
    if w.w_guess and asks_guess(query):
        form = ("guess_speaker_bonus", w.w_guess)
    elif w.w_list and asks_list(query):
        form = ("list_speaker_bonus", w.w_list)
    else:
        return None
    return (*form, frozenset(t for t in exact_tokens(query) if t.isalpha()))


def _with_form(s: Scored, form: tuple[str, float, frozenset[str]] | None) -> Scored:
    said_by = speaker(s.candidate.text)
    if form is None or said_by is None or said_by not in form[2]:
        return s
    total = s.score + form[1]
    return replace(s, score=total, explain={**s.explain, form[0]: form[1], "total": total})


def _diversify(ranked: list[Scored], w: BenchWeights) -> list[Scored]:
    """The first ``diversity_depth`` places picked greedily by score less the penalties of what
    is already above (one term, ``diversity_bonus``, negative, so the explain still adds up)."""
    pool, rest = ranked[: 2 * w.diversity_depth], ranked[2 * w.diversity_depth:]
    out: list[Scored] = []
    per_doc: dict[str, int] = {}
    near: dict[str, int] = {}  # id -> turns next to it already placed
    while pool and len(out) < w.diversity_depth:
        def adjusted(s: Scored) -> float:
            doc = s.candidate.doc
            return (s.score - w.session_penalty * per_doc.get(doc or "", 0) * bool(doc)
                    - w.passage_penalty * near.get(s.id, 0))
        best = max(pool, key=adjusted)  # the first of equals: the pool is in rank order
        penalty = best.score - adjusted(best)
        pool.remove(best)
        total = best.score - penalty
        out.append(replace(best, score=total, explain={**best.explain, "diversity_bonus": -penalty, "total": total}))
        if best.candidate.doc:
            per_doc[best.candidate.doc] = per_doc.get(best.candidate.doc, 0) + 1
        # The turns next to it: the one it replies to (whose reply it is) and its own reply.
        for s in pool:
            if s.candidate.reply == best.id or best.candidate.reply == s.id:
                near[s.id] = near.get(s.id, 0) + 1
    return out + pool + rest


def score_variants(cands: Iterable[Candidate], by_id_lookup: Lookup, weights: ScoringWeights,
                   now: datetime | None = None, query: str | None = None) -> list[Scored]:
    """``score_candidates`` with the variant knobs of ``weights`` (when it is ``BenchWeights``)."""
    if not isinstance(weights, BenchWeights) or weights.is_product():
        return score_candidates(cands, by_id_lookup, weights, now, query=query)
    w = weights
    hits: dict[str, Candidate] = {}
    for c in cands:
        hits.setdefault(c.id, c)
    q = _view(hits, query, w)
    form = _form_speaker(query, w)
    ages = {cid: _age(c, now) for cid, c in hits.items()}
    bases = {cid: _variant_base(c, hits, q, ages[cid], w) for cid, c in hits.items()}
    lifted = _lifts(hits, bases, w)
    if w.prompt_damping:
        for cid, c in hits.items():
            # The turn before a hit, when it is a hit too: the question its answer was asked by.
            if c.reply in hits and c.reply != cid:
                value = float(bases[c.reply]["base"] or 0.0) * w.prompt_damping
                if value > lifted.get(cid, (0.0, "", ""))[0]:
                    lifted[cid] = (value, c.reply, "prompt")
    gathered = gather(hits, {cid: float(b["base"] or 0.0) for cid, b in bases.items()}, query, w)
    missing = [nid for nid in lifted if nid not in hits]
    found = by_id_lookup(missing) if missing else {}
    out: list[Scored] = []
    for c in list(hits.values()) + [found[nid] for nid in missing if nid in found]:
        age = ages[c.id] if c.id in hits else _age(c, now)
        terms = bases[c.id] if c.id in hits else _base(Candidate(c.id), _Query(), age, w)
        lift: tuple[float, str | None, str | None] = lifted.get(c.id, (0.0, None, None))
        s = _score(c, terms, lift, _priors(c, age, w, q), bonuses(c, gathered, w), explain_hop(gathered))
        out.append(_with_form(_kin(s, w.kin_share) if w.kin_share else s, form))
    out.sort(key=lambda s: (-s.score, s.id))
    return _diversify(out, w) if w.session_penalty or w.passage_penalty else out

"""Score recall candidates and fill the budgets (pure; the node store supplies candidates).

Seed 000 §4's formula, with the weights and the query terms chosen left one conversation out
on LoCoMo dev (bench/README.md, "Fusion variants"):

    base       = (0.45·cos + 0.30·lexical + 0.25·RRF(k=10) + 0.10·exact) × tier
                 (0.75·cos on a question that asks for a guess: "Would Ann …", no lexical)
    cos        = 0.5·(the turn in its context) + 0.5·(its best sentence) for a turn of
                 several sentences (``index.sentence_vectors``), else the node's cosine
    propagated = base × 0.55 to the hit's parent, base × 0.55·sim to each similar neighbour,
                 base × 0.55 from an exchange to each of its messages,
                 base × 0.5 from a message to the other messages of its exchange,
                 base × 1.0 from a message that asks a question to the turn that replies to it,
                 base × 0.5 from a message that asks none
    prior      = 0.06·importance + 0.05·exp(-age/45d) + 0.03·log1p(access)/log 8
                 + 0.20 if the node is dated in the day/month/year the query names (+14 days)
                 + 0.15 if the query asks when and the node dates something ("last week")
                 + 0.20·min(1, content words / 12)
    gathered   = w_hop·(rare terms of the best hits shared) + w_session·(session support)
                 + w_cover·(query words the best hits lack) + w_speaker·(spoken by whom it names)
    score      = max(base, propagated) + gathered + prior

``lexical`` is BM25 over the query's best and ``exact`` the share of the query's exact tokens
(numbers, ids, names: ``memvault.recall.query``) that the hit contains, among those that tell
hits apart. The full-text list carries more weight than cosine because on conversations it is
the stronger list at every depth (cosine alone ranks the evidence turn in the top 5 four times
in ten, BM25 six); cosine still decides among lexical ties and finds paraphrases. RRF with
k = 10 rewards a node that both lists put near the top (k = 60 separated ranks only in the
third decimal). One hop only, since two hops decay into noise. Every term lands in
``explain`` and they add up to the score.

The reply lift is the one structural term that moves rankings: when the query matches a
question asked in a conversation ("what's your best camping memory?"), the answer is the turn
after it, which often shares few of the query's words — it is what was asked for, so it
carries the question's whole base. After a statement the next turn is mostly a reaction
("wow, that's great!"), so a statement lifts its reply by half: at 0.9 for every turn, a
third of the first ten places went to such replies (bench/README.md, "Sixth round").

The content prior weighs what a node says, not what it matches: a turn of thanks or surprise
("Wow, that's great, Ann!") holds one content word, and BM25's length normalisation puts such
short turns high on a name alone. Evidence turns say something (bench/README.md, "Recall
quality": multi-hop R@10 0.488 → 0.50–0.51 left one conversation out).

The gathered terms (``memvault.recall.gather``) look at the hits together: an answer that
spans turns shares names with the best hits, or sits in the session most hits come from. Each
is in ``explain`` as a ``*_bonus`` (with ``hop_terms``, what the hop looked for)."""

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Literal

import numpy as np

from memvault.markdown.tree import truncate
from memvault.recall.candidate import Candidate as Candidate  # re-exported: callers import it from here
from memvault.recall.gather import bonuses, explain_hop, gather, max_bonus
from memvault.recall.query import (Period, asks_guess, asks_when, content_words, exact_tokens, has_temporal_cue,
                                   named_period, words)
from memvault.recall.weights import ScoringWeights as ScoringWeights  # re-exported: callers import it from here


@dataclass
class Scored:
    """A candidate with its score and the terms that make it up."""

    candidate: Candidate
    score: float
    explain: dict[str, float | str | None]
    source: Literal["hit", "propagated"]
    text: str = ""
    chars: int = 0

    @property
    def id(self) -> str:
        return self.candidate.id


Lookup = Callable[[list[str]], Mapping[str, Candidate]]


def _utc(t: datetime) -> datetime:
    # A naive time is taken as UTC; a few hours do not matter on a 45-day scale.
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def _age(c: Candidate, now: datetime | None) -> float | None:
    if c.age_days is not None:
        return max(c.age_days, 0.0)
    if c.timestamp is not None and now is not None:
        return max((_utc(now) - _utc(c.timestamp)).total_seconds() / 86400, 0.0)
    return None


def _tier(age: float | None, w: ScoringWeights) -> tuple[str, float]:
    if age is None:
        return "unknown", w.tier_unknown
    if age < w.hot_days:
        return "hot", w.tier_hot
    if age < w.warm_days:
        return "warm", w.tier_warm
    return "cold", w.tier_cold


@dataclass
class _Query:
    """What the base and the priors of one query share: each list's scale and weight, the
    query's exact tokens that tell hits apart, the period it names, whether it asks when."""

    max_lex: float = 0.0
    w_cos: float = 0.0
    w_lex: float = 0.0
    exact: tuple[str, ...] = ()
    period: Period | None = None
    when: bool = False
    guess: bool = False  # a guess question: part of the lexical weight moved to cosine


def _query_view(hits: Mapping[str, Candidate], query: str | None, w: ScoringWeights) -> _Query:
    lex = [c.lexical for c in hits.values() if c.lexical is not None and c.fts_rank is not None]
    q = _Query(max_lex=max(lex, default=0.0), w_cos=w.w_cos, w_lex=w.w_lex)
    if query and w.guess_shift and asks_guess(query):
        # A guess about a person ("Would Ann enjoy …") is answered by what they said of
        # themselves in other words: meaning counts more than the question's words.
        shift = min(w.guess_shift, w.w_lex)
        q.w_cos, q.w_lex, q.guess = w.w_cos + shift, w.w_lex - shift, True
    if query and w.w_exact:
        texts = [words(c.text) for c in hits.values()]
        limit = max(1.0, w.exact_max_share * len(texts))  # a token in one hit always tells it apart
        q.exact = tuple(t for t in exact_tokens(query) if 0 < sum(t in ws for ws in texts) <= limit)
    if query and w.w_date:
        q.period = named_period(query)
    q.when = bool(query and w.w_when and asks_when(query))
    return q


def _base(c: Candidate, q: _Query, age: float | None, w: ScoringWeights) -> dict[str, float | str | None]:
    cos = min(max(c.cos or 0.0, 0.0), 1.0)
    sentence = None
    if c.sentence_cos is not None and c.cos is not None:
        # The turn in its context says what it is about; its best sentence, what it says that
        # matches (one of four sentences about a painting is about the lake sunrise).
        sentence = min(max(c.sentence_cos, 0.0), 1.0)
        cos = (1 - w.w_sentence) * cos + w.w_sentence * sentence
    raw_lex = c.lexical or 0.0
    lex = raw_lex / q.max_lex if raw_lex > 0 and q.max_lex > 0 else 0.0
    terms = _terms(c, q, age, w, cos, lex)
    if sentence is not None:
        terms |= {"sentence_cos": sentence, "context_cos": min(max(c.cos or 0.0, 0.0), 1.0)}
    return terms


def _terms(c: Candidate, q: _Query, age: float | None, w: ScoringWeights,
           cos: float, lex: float) -> dict[str, float | str | None]:
    """The base of a hit and its terms, from its cosine and lexical score on the scale they are weighed at."""
    rrf = sum(1 / (w.rrf_k + r) for r in (c.vector_rank, c.fts_rank) if r is not None) * (w.rrf_k + 1) / 2
    exact = 0.0
    if q.exact:
        have = words(c.text)
        exact = sum(t in have for t in q.exact) / len(q.exact)
    tier_name, tier = _tier(age, w)
    cos_term, lex_term, rrf_term, exact_term = q.w_cos * cos, q.w_lex * lex, w.w_rrf * rrf, w.w_exact * exact
    return {
        "cos": cos, "lexical": lex, "rrf": rrf, "exact": exact,
        "cos_term": cos_term, "lexical_term": lex_term, "rrf_term": rrf_term, "exact_term": exact_term,
        "tier_name": tier_name, "tier": tier, "base": (cos_term + lex_term + rrf_term + exact_term) * tier,
        "question_form": "guess" if q.guess else None,
    }  # fmt: skip


def _priors(c: Candidate, age: float | None, w: ScoringWeights, q: _Query) -> dict[str, float]:
    importance = w.w_importance * min(max(c.importance, 0.0), 1.0)
    recency = w.w_recency * math.exp(-age / w.recency_days) if age is not None else 0.0
    access_ratio = math.log1p(max(c.access, 0)) / math.log(w.access_base)
    dated = q.period is not None and c.timestamp is not None and q.period.holds(c.timestamp, w.date_slack_days)
    return {
        "importance_prior": importance,
        "recency_prior": recency,
        "access_prior": w.w_access * min(access_ratio, w.access_cap),
        "project_prior": w.w_project if c.in_project else 0.0,
        "date_prior": w.w_date if dated else 0.0,
        "when_prior": w.w_when if q.when and has_temporal_cue(c.text) else 0.0,
        "content_prior": w.w_content * min(content_words(c.text) / w.content_full, 1.0) if w.w_content else 0.0,
    }


def _reply_share(c: Candidate, w: ScoringWeights) -> float:
    # The answer is what a matched question is asked for; after a statement, the next turn is
    # only a reaction to it, so a statement lifts its reply less (when the setting says so).
    if w.reply_statement_damping is None or "?" in c.text:
        return w.reply_damping
    return w.reply_statement_damping


def score_candidates(
    cands: Iterable[Candidate],
    by_id_lookup: Lookup,
    weights: ScoringWeights | None = None,
    now: datetime | None = None,
    query: str | None = None,
) -> list[Scored]:
    """Score hits, lift parents, neighbours and turns one hop, add priors; best first.

    ``by_id_lookup`` receives, in one call, the ids of lifted nodes that are not hits and
    returns those it knows (deleted nodes are simply absent). ``query``, the recall's text,
    turns on the exact-token term and the date and when priors (without it they are 0).
    """
    return score_head(cands, by_id_lookup, weights, now, query=query)[0]


def _max_prior(w: ScoringWeights, q: _Query) -> float:
    # The date and when priors only count when this query can give them (it names a period, it asks when).
    return (w.w_importance + w.w_recency + w.w_access * w.access_cap + max(w.w_project, 0.0) + max(w.w_content, 0.0)
            + (max(w.w_date, 0.0) if q.period else 0.0) + (max(w.w_when, 0.0) if q.when else 0.0))


Lifts = dict[str, tuple[float, str, str]]  # id -> (best propagation, from which hit, how)


def _lifts(hits: dict[str, Candidate], bases: Mapping[str, dict[str, float | str | None]],
           w: ScoringWeights) -> Lifts:
    """What each hit passes one hop on: to its parent, similar nodes, children, siblings and reply."""
    lifted: Lifts = {}

    def offer(target: str | None, value: float, source: str, via: str) -> None:
        if target and target != source and value > lifted.get(target, (0.0, "", ""))[0]:
            lifted[target] = (value, source, via)

    for cid, c in hits.items():
        base = float(bases[cid]["base"] or 0.0)
        offer(c.parent, base * w.parent_damping, cid, "parent")
        for neighbour, sim in c.similar:
            offer(neighbour, base * w.neighbour_damping * max(sim, 0.0), cid, "similar")
        for child in c.children:
            offer(child, base * w.child_damping, cid, "child")
        for sibling in c.siblings:
            offer(sibling, base * w.sibling_damping, cid, "sibling")
        offer(c.reply, base * _reply_share(c, w), cid, "reply")
    return lifted


def _reachable(missing: list[str], lifted: Lifts, floors: list[float], keep: int,
               prior: float, bonus: float) -> list[str]:
    """The lifted nodes that may still enter the first ``keep``: their propagation plus the
    largest possible ``prior`` and ``bonus`` reaches the ``keep``-th best hit's floor."""
    bar = sorted(floors, reverse=True)[keep - 1] - prior - bonus
    return [nid for nid in missing if lifted[nid][0] >= bar]


def _score(c: Candidate, terms: dict[str, float | str | None], lift: tuple[float, str | None, str | None],
           priors: dict[str, float], extra: dict[str, float], hop: dict[str, str | None]) -> Scored:
    """One node's total and the terms that make it up."""
    propagation, source, via = lift
    base = float(terms["base"] or 0.0)
    relevance = max(base, propagation)
    total = relevance + sum(extra.values()) + sum(priors.values())
    explain = {
        **terms,
        "propagated_from": source,
        "propagated_via": via,
        "propagation": propagation,
        "relevance": relevance,
        **extra,
        **hop,
        **priors,
        "total": total,
    }
    kind: Literal["hit", "propagated"] = "propagated" if propagation > base else "hit"
    return Scored(c, total, explain, kind, c.text, c.chars or len(c.text))


def score_head(
    cands: Iterable[Candidate],
    by_id_lookup: Lookup,
    weights: ScoringWeights | None = None,
    now: datetime | None = None,
    keep: int | None = None,
    query: str | None = None,
) -> tuple[list[Scored], bool]:
    """``score_candidates`` whose first ``keep`` nodes are exact, reading fewer lifted nodes.

    A lifted node that is not a hit scores at most its propagation plus the largest possible
    prior. When that bound is below the ``keep``-th best hit's own score (base plus priors,
    a floor on its total), the node cannot enter the first ``keep`` and is neither looked up
    nor listed. Returns the scored list and whether it is complete (nothing left out).
    """
    w = weights or ScoringWeights()
    hits: dict[str, Candidate] = {}
    for c in cands:
        hits.setdefault(c.id, c)
    q = _query_view(hits, query, w)
    ages = {cid: _age(c, now) for cid, c in hits.items()}
    bases = {cid: _base(c, q, ages[cid], w) for cid, c in hits.items()}
    lifted = _lifts(hits, bases, w)

    gathered = gather(hits, {cid: float(b["base"] or 0.0) for cid, b in bases.items()}, query, w)
    missing = [nid for nid in lifted if nid not in hits]
    complete = True
    if keep is not None and len(hits) >= keep > 0:
        floors = [float(bases[cid]["base"] or 0.0) + sum(_priors(c, ages[cid], w, q).values())
                  for cid, c in hits.items()]
        reachable = _reachable(missing, lifted, floors, keep, _max_prior(w, q), max_bonus(gathered, w))
        complete = len(reachable) == len(missing)
        missing = reachable
    found = by_id_lookup(missing) if missing else {}
    nodes = list(hits.values()) + [found[nid] for nid in missing if nid in found]

    out: list[Scored] = []
    for c in nodes:
        age = ages[c.id] if c.id in hits else _age(c, now)
        terms = bases[c.id] if c.id in hits else _base(Candidate(c.id), _Query(), age, w)  # base 0: not a hit
        lift: tuple[float, str | None, str | None] = lifted.get(c.id, (0.0, None, None))
        out.append(_score(c, terms, lift, _priors(c, age, w, q), bonuses(c, gathered, w), explain_hop(gathered)))
    out.sort(key=lambda s: (-s.score, s.id))
    return out, complete


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm else 0.0


_HELD = 40  # a text this long held whole by another is a repeat ("user: ok" is in many texts)


def select(
    scored: Iterable[Scored],
    *,
    max_nodes: int,
    max_chars: int,
    max_node_chars: int,
    diversity: float = ScoringWeights.model_fields["diversity"].default,  # `[recall] diversity`'s
    min_chars: int = 80,
) -> list[Scored]:
    """Greedy fill, best first: drop near-duplicates of picked nodes, cut each text to
    ``max_node_chars`` and to the room left, stop at ``max_nodes`` or ``max_chars``.

    A node that does not fit whole is cut to the room left if that is at least
    ``min_chars``, else skipped in favour of shorter ones further down. No text is shown
    twice: a node whose text a picked node shows whole (a turn of an exchange already picked)
    is skipped, and a node that shows a picked one's text whole, uncut (the exchange of a turn
    already picked), takes its place in the order of scores, the turn dropped.
    """
    picked: list[Scored] = []
    vectors: list[np.ndarray] = []
    shown: list[str] = []  # picked texts as shown, spaces folded
    used = 0
    for s in sorted(scored, key=lambda s: (-s.score, s.id)):
        room = max_chars - used
        if len(picked) >= max_nodes or room <= 0:
            break
        vector = s.candidate.vector
        if vector is not None and any(_cosine(vector, v) >= diversity for v in vectors):
            continue
        folded = " ".join(s.text.split())
        if len(folded) >= _HELD and any(folded in t for t in shown):
            continue
        held = [i for i, t in enumerate(shown) if len(t) >= _HELD and t in folded]
        freed = sum(picked[i].chars for i in held)
        if len(s.text) <= min(max_node_chars, room + freed):
            room += freed
        else:
            held = []  # it would be cut, maybe before the turn it holds: both stay
        length = len(s.text) if s.text else s.chars
        limit = min(max_node_chars, room)
        if length > room and room < min_chars:
            continue
        for i in held[::-1]:
            used -= picked[i].chars
            del picked[i], shown[i]
        text = truncate(s.text, limit) if s.text else ""
        picked.append(replace(s, text=text, chars=len(text) if s.text else min(length, limit)))
        used += picked[-1].chars
        shown.append(" ".join(text.split()))  # as shown: a turn past a cut is not held
        if vector is not None:
            vectors.append(vector)
    return picked

"""Evidence gathered across hits (pure): the terms of the recall score that look at the query's
hits together rather than at each alone, for answers that span turns and sessions.

- **hop**: the first hop's best hits (by base) name things the query does not — a place, a
  person, a pet's name. A node that shares those rare terms is probably about the same event
  (the second turn of a multi-hop answer). The recall service also searches for them (the
  second hop, ``MemoryService._candidates``), so such turns become candidates at all.
- **session**: a session (a document) whose hits each match a little is likelier to hold the
  answer than one lucky turn elsewhere: the sum of its best few bases, over the best session's.
- **cover**: a hit that holds the query words the best few hits lack completes them (the other
  half of a two-part question).
- **speaker**: a turn spoken by the person the query names.

Each term is a share in [0, 1] times its weight, so a lifted node can gain at most the sum of
the weights (what ``score_head``'s bound counts).
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from memvault.recall.candidate import Candidate
from memvault.recall.query import content_terms, exact_tokens, hop_terms, speaker
from memvault.recall.weights import ScoringWeights


BONUSES = ("hop_bonus", "session_bonus", "cover_bonus", "speaker_bonus")


@dataclass
class Gathering:
    """What the hits of one query say together: the hop's seeds and terms, each session's
    support, the query terms the best hits cover, the people the query names."""

    seeds: frozenset[str] = frozenset()
    hop: tuple[str, ...] = ()
    session: dict[str, float] = field(default_factory=dict)
    query_idf: dict[str, float] = field(default_factory=dict)
    covered: dict[str, set[str]] = field(default_factory=dict)  # seed id -> query terms it holds
    cover_seeds: tuple[str, ...] = ()
    names: frozenset[str] = frozenset()


def max_bonus(g: Gathering, w: ScoringWeights) -> float:
    """The most the gathered terms can add to one node of this query (a term the query cannot
    give — no rare terms, no person named — counts 0, so the bound stays tight)."""
    return (max(w.w_hop, 0.0) * bool(g.hop) + max(w.w_session, 0.0) * bool(g.session)
            + max(w.w_cover, 0.0) * bool(g.query_idf) + max(w.w_speaker, 0.0) * bool(g.names))


def gather(hits: Mapping[str, Candidate], bases: Mapping[str, float], query: str | None,
           w: ScoringWeights) -> Gathering:
    """The cross-hit view of one query's hits, ``bases`` their base scores."""
    g = Gathering()
    if not hits or not query:
        return g
    best = sorted(hits, key=lambda cid: (-bases[cid], cid))
    texts = {cid: content_terms(hits[cid].text) for cid in hits}
    if w.w_hop:
        # The first hop alone, as the second hop's search saw it: its own hits would make
        # the very terms they were found by look common.
        first = [cid for cid in best if hits[cid].vector_rank is not None or hits[cid].fts_rank is not None]
        seeds = [cid for cid in first[: w.hop_seeds] if bases[cid] > 0]
        g.seeds = frozenset(seeds)
        g.hop = tuple(hop_terms([hits[s].text for s in seeds], [hits[cid].text for cid in first], query,
                                w.hop_terms, w.hop_max_share))
    if w.w_session:
        per_doc: dict[str, list[float]] = {}
        for cid, c in hits.items():
            if c.doc:
                per_doc.setdefault(c.doc, []).append(bases[cid])
        support = {doc: sum(sorted(v, reverse=True)[: w.session_top]) for doc, v in per_doc.items()}
        top = max(support.values(), default=0.0)
        g.session = {doc: s / top for doc, s in support.items()} if top > 0 else {}
    if w.w_cover:
        asked = content_terms(query)
        n = len(texts)
        g.query_idf = {t: math.log(1 + n / df) for t in asked if (df := sum(t in ts for ts in texts.values()))}
        g.cover_seeds = tuple(cid for cid in best[: w.cover_seeds] if bases[cid] > 0)
        g.covered = {cid: texts[cid] & set(g.query_idf) for cid in g.cover_seeds}
    if w.w_speaker:
        g.names = frozenset(t for t in exact_tokens(query) if t.isalpha())  # never the question's first word
    return g


def bonuses(c: Candidate, g: Gathering, w: ScoringWeights) -> dict[str, float]:
    """The gathered terms of one node (a hit or a lifted node), each weight × a share in [0, 1]."""
    terms = content_terms(c.text) if (g.hop or g.query_idf) else set()
    hop = 0.0
    if g.hop and c.id not in g.seeds:
        hop = w.w_hop * min(1.0, len(terms & set(g.hop)) / max(w.hop_full, 1))
    session = w.w_session * g.session.get(c.doc or "", 0.0)
    cover = 0.0
    if g.query_idf:
        # The query words this node holds that the best hits (other than itself) lack.
        covered = set().union(*(t for cid, t in g.covered.items() if cid != c.id))
        total = sum(g.query_idf.values())
        cover = w.w_cover * sum(g.query_idf[t] for t in terms & set(g.query_idf) - covered) / total
    said_by = speaker(c.text)
    spoken = w.w_speaker if g.names and said_by is not None and said_by in g.names else 0.0
    return {"hop_bonus": hop, "session_bonus": session, "cover_bonus": cover, "speaker_bonus": spoken}


def explain_hop(g: Gathering) -> dict[str, str | None]:
    """What the gathered terms were computed from, for ``explain``."""
    return {"hop_terms": " ".join(g.hop) or None}

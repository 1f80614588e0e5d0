"""The weights of the recall score (``memvault.recall.scoring``), each with its description.

The weights that are also `[recall]` settings take their defaults from ``RecallSettings``, so
the two never disagree; the others (tiers, priors' scales) live here. Variants tried and not adopted live in
the bench (bench/scoring_variants.py).
"""

from typing import Any

from pydantic import BaseModel, Field

from memvault.config.settings import RecallSettings


def _default(name: str) -> Any:
    # The weights that are settings take their defaults from `[recall]` (one place for both).
    return RecallSettings.model_fields[name].default


class ScoringWeights(BaseModel):
    """Every weight of the recall score; defaults chosen left one conversation out on LoCoMo dev (bench/README.md)."""

    w_cos: float = Field(default=_default("w_cos"), description="Weight of the cosine similarity to the query")
    w_lex: float = Field(default=_default("w_lex"), description="Weight of the lexical (BM25) score, normalized per query by its max")
    w_sentence: float = Field(
        default=_default("w_sentence"), description="Share of a turn's cosine taken from its best sentence's, the rest from the turn in its context")
    w_rrf: float = Field(default=_default("w_rrf"), description="Weight of reciprocal rank fusion, normalized so rank 1 in both lists is 1")
    rrf_k: int = Field(default=_default("rrf_k"), description="RRF constant k in 1/(k + rank)")
    hot_days: float = Field(default=30, description="Nodes younger than this many days are in the hot tier")
    warm_days: float = Field(default=180, description="Nodes younger than this many days (and not hot) are warm")
    tier_hot: float = Field(default=1.00, description="Tier multiplier of hot nodes")
    tier_warm: float = Field(default=0.90, description="Tier multiplier of warm nodes")
    tier_cold: float = Field(default=0.78, description="Tier multiplier of cold nodes")
    tier_unknown: float = Field(default=1.00, description="Tier multiplier of nodes without a date")
    parent_damping: float = Field(default=_default("parent_damping"), description="Share of a hit's base passed to its parent")
    neighbour_damping: float = Field(default=_default("neighbour_damping"), description="Share of a hit's base × similarity passed to a similar node")
    child_damping: float = Field(default=_default("child_damping"), description="Share of an exchange hit's base passed to each of its messages")
    sibling_damping: float = Field(default=_default("sibling_damping"), description="Share of a message hit's base passed to the other messages of its exchange")
    reply_damping: float = Field(
        default=_default("reply_damping"), description="Share of a message hit's base passed to the next turn of its conversation (its reply)")
    w_importance: float = Field(default=0.06, description="Weight of the importance prior (importance in [0, 1])")
    w_recency: float = Field(default=0.05, description="Weight of the recency prior exp(-age / recency_days)")
    recency_days: float = Field(default=45, description="Scale in days of the recency prior")
    w_access: float = Field(default=0.03, description="Weight of the access prior log1p(access) / log(access_base)")
    access_base: float = Field(default=8, description="Access count at which the access prior reaches its full weight")
    access_cap: float = Field(default=1.0, description="Cap on log1p(access)/log(access_base), so access never outweighs relevance")
    diversity: float = Field(default=_default("diversity"), description="A candidate this cosine-similar to a picked node is dropped")
    w_project: float = Field(default=0.0, description="Prior of a node of the project the recall is made from (0: no project known)")
    w_exact: float = Field(
        default=_default("w_exact"), description="Weight of the share of the query's exact tokens (numbers, ids, names) a hit contains")
    exact_max_share: float = Field(
        default=_default("exact_max_share"), description="An exact token in more than this share of the hits tells them apart from nothing: ignored")
    w_date: float = Field(default=_default("w_date"), description="Prior of a node dated inside the period the query names (a day, month, year)")
    date_slack_days: float = Field(default=_default("date_slack_days"), description="A node dated up to this many days after the named period still counts")
    w_when: float = Field(default=_default("w_when"), description="Prior of a hit that dates something (yesterday, last week, a month) on a when-question")
    reply_statement_damping: float | None = Field(
        default=_default("reply_statement_damping"), description="Share passed to the reply of a message hit that asks no question (no '?'); None: reply_damping")
    w_hop: float = Field(
        default=_default("w_hop"), description="Weight of the share of the first hop's rare terms (names, places, numbers) a node shares")
    hop_seeds: int = Field(default=_default("hop_seeds"), description="The first hop's best hits (by base) whose rare terms the second hop seeks")
    hop_terms: int = Field(default=_default("hop_terms"), description="Rare terms taken from the seeds, at most")
    hop_max_share: float = Field(
        default=_default("hop_max_share"), description="A seed's term found in more than this share of the hits is not rare: not taken")
    hop_full: int = Field(default=_default("hop_full"), description="Rare terms a node must share to get the whole hop weight")
    w_session: float = Field(
        default=_default("w_session"), description="Weight of a node's session (document) support: its best hits' bases summed, over the best session's")
    session_top: int = Field(default=_default("session_top"), description="Hits of a session whose bases its support sums")
    w_cover: float = Field(
        default=_default("w_cover"), description="Weight of the idf share of the query's words a node holds that the best few hits lack")
    cover_seeds: int = Field(default=_default("cover_seeds"), description="The best hits (by base) whose query words a node completes")
    w_speaker: float = Field(default=_default("w_speaker"), description="Weight of a turn spoken by a person the query names")
    w_content: float = Field(
        default=_default("w_content"), description="Prior of a node by its content words, a share min(1, words / content_full)")
    content_full: int = Field(default=_default("content_full"), description="Content words a node needs for the whole content prior")
    guess_shift: float = Field(
        default=_default("guess_shift"), description="Moved from the lexical weight to the cosine weight when the query asks for a guess")

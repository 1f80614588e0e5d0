"""cluster: unassigned chunks → buckets (article topics); new buckets proposed and recorded.

No-model path: a chunk joins the nearest bucket centroid above a threshold; leftovers are
grouped by average-link agglomeration, and a group with enough support becomes a new bucket,
named by its most distinctive terms and appended to Meta/Buckets.md (memvault.stages.cluster_centroid).

Projects stay apart: a conversation's project (the folder a coding agent ran in) is evidence
too. A chunk joins a bucket whose chunks all come from other projects, and two chunks of
different projects group together, only when their similarity clears the threshold by
`project_margin` as well. Chunks of conversations without a project (chat exports) are
judged on text alone. Low-content chunks (an image placeholder, a greeting, a bare command,
git or build output without discussion) never found or co-found a bucket; they may still
join one, and the report counts them. Buckets a person adds
to Meta/Buckets.md by hand are honoured (their centroid comes from their name and text).

Model path (below; the reply's shape in memvault.stages.cluster_model): batches of chunks go to the
model with the bucket list; a proposed bucket is recorded and created once `min_support`
chunks propose it; a chunk whose answer is unusable goes through the centroid path above,
with the reason recorded. A chunk already asked under the current prompt hash is never
asked again.

Crash safety: every batch of assignments is one ledger transaction; buckets to append to
Meta/Buckets.md are journaled in the same transaction and written right after, so a kill at
any point resumes to the same buckets. Failpoint `cluster:<n>` fires after the n-th batch.
"""

import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from memvault.engines import structured
from memvault.naming.phrase_similarity import unit_mean
from memvault.prompts import Prompt, load_prompt
from stores.meta import BucketsPage, bucket_key
# The centroid path's names stay importable from here (tests and benches use them).
from memvault.stages.cluster_centroid import (ClusterPass, Pending, agglomerate, assign_by_centroid, flush_bucket_pages,
                                    name_group)
from memvault.stages.cluster_waiting import write_waiting_page
from memvault.stages.cluster_model import ClusterReply, decide, reply_tokens, show_buckets, show_chunks
from memvault.stages.context import StageContext
from memvault.stages.result import ModelStageResult

__all__ = ["ClusterPass", "ClusterResult", "ModelAnswers", "Pending", "adopt_proposals", "agglomerate",
           "assign_by_centroid", "assign_by_model", "flush_bucket_pages", "name_group", "run_cluster"]

log = logging.getLogger(__name__)


class ClusterResult(ModelStageResult):
    """What cluster did: chunks seen, assigned and left waiting, buckets made."""

    omit_when_none: ClassVar[frozenset[str]] = frozenset(
        {"model", "proposed", "fallbacks", "fallback", "unasked", "prompt_hash", "fallback_assigned", "stopped",
         "kept_apart", "low_content", "waiting_reasons", "reembedded"})
    chunks: int = 0
    assigned: int = 0
    waiting: int = 0
    # Chunks in no topic after this pass, per reason (also listed on Meta/Waiting.md).
    waiting_reasons: dict[str, int] | None = None
    buckets_new: int = 0
    # The model path only: chunks the model placed (or proposed a bucket for), proposals,
    # chunks that fell back to centroids (and why, and how many of them then found a bucket),
    # chunks the budget left unasked, and the prompt's hash.
    model: int | None = None
    proposed: int | None = None
    fallbacks: list[dict[str, str]] | None = None
    fallback: int | None = None
    unasked: int | None = None
    prompt_hash: str | None = None
    fallback_assigned: int | None = None
    stopped: str | None = None  # why the budget stopped the stage early
    # Chunks that would have joined another project's bucket but were held to the margin, and
    # leftovers too low in content to found a bucket (both only when there are any).
    kept_apart: int | None = None
    low_content: int | None = None
    # Chunks of another width re-embedded by the topic stages' model first (refit_widths; only when any).
    reembedded: int | None = None


@dataclass
class ModelAnswers:
    """What asking the model batch by batch gave: counts, and the chunks left to the centroids."""

    placed: int = 0
    proposed: int = 0
    fallbacks: list[dict[str, str]] = field(default_factory=list)
    fallback_chunks: Pending = field(default_factory=list)
    unasked: int = 0
    stopped: str | None = None


def assign_by_model(run: ClusterPass, pending: Pending, prompt: Prompt) -> ModelAnswers:
    """Ask the model batch by batch; returns counts, with the chunks that fall back to centroids.

    Long because each batch is one unit: ask, then apply every decision, record each unit
    result and adopt supported proposals in one transaction, then the failpoint.
    """
    ctx, ledger, settings = run.ctx, run.ledger, run.ctx.settings.cluster
    vectors = dict(pending)
    asked = ledger.unit_results("cluster")
    waiting = {c for rows in ledger.bucket_proposals().values() for c, _ in rows}
    fresh = [c for c, _ in pending if c not in waiting and (c not in asked or asked[c].prompt_hash != prompt.hash)]
    # Asked before under this very prompt: its answer stands, so no new call (cache key hit).
    fallback = [(c, v) for c, v in pending if c not in waiting and c not in set(fresh)]
    out = ModelAnswers(fallback_chunks=fallback)
    for start in range(0, len(fresh), max(1, settings.batch_size)):
        out.stopped = ctx.out_of_budget()
        if out.stopped:
            break
        batch = fresh[start:start + settings.batch_size]
        chunks = ledger.chunks(batch)
        bucket_descriptions = {b.name: b.description for b in ledger.buckets()}
        text = prompt.render(buckets=show_buckets(bucket_descriptions), chunks=show_chunks(chunks, settings.chunk_prompt_chars))
        reply = structured(ctx.engine, prompt.system, text, ClusterReply, reply_tokens(len(batch), settings.max_output_tokens),
                           cache_prefix=prompt.system)
        ctx.charge("cluster", reply.completions)
        decisions = decide(reply.value, len(batch), {bucket_key(n): n for n in bucket_descriptions}) if reply.value else \
            [None] * len(batch)
        with ledger.transaction():
            for chunk_id, decision in zip(batch, decisions):
                why = (reply.reason or "invalid reply") if decision is None else (decision.fallback or "")
                if why or decision is None:
                    fallback.append((chunk_id, vectors[chunk_id]))
                    out.fallbacks.append({"chunk": chunk_id[:12], "reason": why})
                    ledger.record_unit_result("cluster", chunk_id, prompt.hash, "fallback", why, ctx.run_id)
                    continue
                for bucket in decision.buckets:
                    run.join(chunk_id, bucket, vectors[chunk_id], float(run.centroids[bucket] @ vectors[chunk_id])
                             if bucket in run.centroids else 1.0)
                if decision.proposal and not decision.buckets:
                    ledger.propose_bucket(decision.proposal[0], chunk_id, decision.proposal[1], ctx.run_id)
                    out.proposed += 1
                ledger.record_unit_result("cluster", chunk_id, prompt.hash,
                                          "model" if decision.buckets else "proposal", None, ctx.run_id)
                out.placed += 1
            adopt_proposals(run, vectors)
        run.committed()
    out.unasked = len(fresh) - out.placed - len(out.fallbacks)
    return out


def adopt_proposals(run: ClusterPass, vectors: dict[str, np.ndarray]) -> None:
    """Create each proposed bucket that `min_support` waiting chunks now support (same transaction)."""
    grouped: dict[str, list[tuple[str, str, str]]] = {}
    # A name the user forgot stays forgotten: such a proposal is dropped, never created.
    forgotten = run.ledger.taken_bucket_names() - {n.casefold() for n in run.centroids}
    for name, proposals in run.ledger.bucket_proposals().items():
        if name.casefold() in forgotten:
            run.ledger.drop_bucket_proposal(name)
            continue
        grouped.setdefault(bucket_key(name), []).extend((name, c, d) for c, d in proposals)
    for rows in grouped.values():
        members = [(c, vectors[c]) for _, c, _ in rows if c in vectors]
        if len({c for c, _ in members}) < run.ctx.settings.cluster.min_support:
            continue
        name, _, desc = rows[0]
        run.create(name, desc, np.stack([v for _, v in members]))
        for c, v in members:
            run.join(c, name, v, float(run.centroids[name] @ v))
        for original, _, _ in rows:
            run.ledger.drop_bucket_proposal(original)
        log.info("proposed bucket %s created from %d chunks", name, len(members))


def refit_widths(ctx: StageContext) -> int:
    """Re-embed, with the topic stages' model, the chunks a model of another width embedded
    (a home whose topics an earlier memvault embedded with its index's model: the static
    table, a server), and recompute the centroids of their buckets from them — so a centroid
    and a chunk are never of two widths. One transaction; returns the chunks re-embedded."""
    ledger, topics = ctx.ledger, ctx.topics
    stale = ledger.chunks_of_other_width(topics.dim)
    buckets = [b for b in ledger.buckets(include_forgotten=True) if b.centroid and len(b.centroid) != topics.dim]
    if not stale and not buckets:
        return 0
    vectors = topics.embed([text for _, text in stale]) if stale else np.zeros((0, topics.dim), dtype=np.float32)
    with ledger.transaction():
        ledger.set_chunk_vectors({cid: v.astype(float).tolist() for (cid, _), v in zip(stale, vectors)})
        members = ledger.bucket_member_vectors([b.name for b in buckets])
        words = [b for b in buckets if b.name not in members]  # no chunk yet (added by hand): its own words
        own = dict(zip([b.name for b in words], topics.embed([f"{b.name}. {b.description}" for b in words]))) if words else {}
        for b in buckets:
            centroid = unit_mean(np.asarray(members[b.name], dtype=np.float32)) if b.name in members else own[b.name]
            ledger.upsert_bucket(b.name, b.description, centroid.astype(float).tolist(), b.size)
    log.info("cluster: %d chunks and %d bucket centroids re-embedded with %s (%d wide)",
             len(stale), len(buckets), topics.name, topics.dim)
    return len(stale)


def run_cluster(ctx: StageContext) -> ClusterResult:
    """Assign unassigned chunks to buckets (article topics), creating buckets with enough support.

    Reads the unassigned chunks and their vectors, the recorded buckets and Meta/Buckets.md
    (hand-added buckets get a centroid from their own words); writes assignments, bucket rows,
    proposals, unit results and the new buckets' sections of Meta/Buckets.md (journaled first).
    Unit of work: a batch (a model call's chunks, or one chunk on the centroid path), one
    transaction each; failpoint `cluster:<n>` fires after the n-th committed batch.
    """
    ledger = ctx.ledger
    flush_bucket_pages(ctx)  # finish an interrupted run's Buckets.md write first
    reembedded = refit_widths(ctx)
    # Forgotten buckets count as recorded: one a person re-adds to Buckets.md is not re-embedded.
    recorded = {b.name for b in ledger.buckets(include_forgotten=True)}
    # Buckets written into Meta/Buckets.md by hand get a centroid from their own words.
    hand = {n: d for n, d in BucketsPage(ctx.vault).read().items() if n not in recorded}
    if hand:
        vecs = ctx.topics.embed([f"{n}. {d}" for n, d in hand.items()])
        for (name, desc), vec in zip(hand.items(), vecs):
            ledger.upsert_bucket(name, desc, vec.astype(float).tolist(), 0)
    pending = [(cid, np.array(v, dtype=np.float32)) for cid, v in ledger.unassigned_chunks(since=ctx.since)]
    run = ClusterPass(ctx)
    result = ClusterResult(chunks=len(pending))
    if ctx.uses_model and pending:
        prompt = load_prompt("cluster", ctx.vault.meta_dir)
        answers = assign_by_model(run, pending, prompt)
        stopped = answers.stopped
        if stopped:
            assigned = 0
        else:
            assigned, _, stopped = assign_by_centroid(run, answers.fallback_chunks, singles=False)
        left = len(ledger.unassigned_chunks())
        result = ClusterResult(chunks=len(pending), model=answers.placed, proposed=answers.proposed,
                               fallbacks=answers.fallbacks, fallback=len(answers.fallbacks), unasked=answers.unasked,
                               prompt_hash=prompt.hash, fallback_assigned=assigned, waiting=left,
                               assigned=len(pending) - min(left, len(pending)))
    else:
        assigned, waiting, stopped = assign_by_centroid(run, pending)
        result = ClusterResult(chunks=len(pending), assigned=assigned, waiting=waiting)
    result.buckets_new = len(run.created)
    result.waiting_reasons = write_waiting_page(ctx, run) if not stopped else None
    result.stopped = stopped or None
    result.kept_apart, result.low_content = len(run.kept_apart) or None, run.low_content or None
    result.reembedded = reembedded or None
    for name, value in ctx.stage_cost("cluster").items():
        setattr(result, name, value)
    ctx.units_done["cluster"] = result.assigned
    return result

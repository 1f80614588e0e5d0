"""cluster: unassigned chunks → buckets (article topics); new buckets proposed and recorded.

No-model path: a chunk joins the nearest bucket centroid above a threshold; leftovers are
grouped by average-link agglomeration, and a group with enough support becomes a new bucket,
named by its most distinctive terms and appended to Meta/Buckets.md.

Projects stay apart: a conversation's project (the folder a coding agent ran in) is evidence
too. A chunk joins a bucket whose chunks all come from other projects, and two chunks of
different projects group together, only when their similarity clears the threshold by
`project_margin` as well. Chunks of conversations without a project (chat exports) are
judged on text alone. Low-content chunks (an image placeholder, a greeting, a bare command,
git or build output without discussion) never found or co-found a bucket; they may still
join one, and the report counts them. Buckets a person adds
to Meta/Buckets.md by hand are honoured (their centroid comes from their name and text).

Model path (tasks.cluster_model): batches of chunks go to the model with the bucket list; a
proposed bucket is recorded and created once `min_support` chunks propose it; a chunk whose
answer is unusable goes through the centroid path above, with the reason recorded. A chunk
already asked under the current prompt hash is never asked again.

Crash safety: every batch of assignments is one ledger transaction; buckets to append to
Meta/Buckets.md are journaled in the same transaction and written right after, so a kill at
any point resumes to the same buckets. Failpoint `cluster:<n>` fires after the n-th batch.
"""

import logging
from dataclasses import dataclass, field
from collections import Counter
from typing import Any, ClassVar

import numpy as np
from prefect import task
from prefect.cache_policies import NONE

from memvault.engines import structured
from memvault.failpoints import failpoint
from memvault.logs import conv_label
from memvault.noise import is_low_content
from memvault.prompts import Prompt, load_prompt
from stores.meta import BucketsPage, bucket_key
from tasks.cluster_model import ClusterReply, decide, reply_tokens, show_buckets, show_chunks
from tasks.cluster_projects import apart_matrix, other_project
from tasks.context import ModelStageResult, StageContext
from memvault.phrase_similarity import Similarity, similarity_to, unit_mean
from memvault.titles import topic_title
from tasks.text import keywords, surface_form

log = logging.getLogger(__name__)

Pending = list[tuple[str, np.ndarray]]  # (chunk id, its centroid vector), chunks waiting for a bucket


class ClusterResult(ModelStageResult):
    """What cluster did: chunks seen, assigned and left waiting, buckets made."""

    omit_when_none: ClassVar[frozenset[str]] = frozenset(
        {"model", "proposed", "fallbacks", "fallback", "unasked", "prompt_hash", "fallback_assigned", "stopped",
         "kept_apart", "low_content"})
    chunks: int = 0
    assigned: int = 0
    waiting: int = 0
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


@dataclass
class ModelAnswers:
    """What asking the model batch by batch gave: counts, and the chunks left to the centroids."""

    placed: int = 0
    proposed: int = 0
    fallbacks: list[dict[str, str]] = field(default_factory=list)
    fallback_chunks: Pending = field(default_factory=list)
    unasked: int = 0
    stopped: str | None = None


def agglomerate(vectors: np.ndarray, threshold: float, penalty: np.ndarray | None = None) -> list[list[int]]:
    """Average-link agglomerative clustering on unit vectors; stop below ``threshold``.

    ``penalty`` (n × n) is subtracted from the pairwise similarities first: the project margin.
    """
    groups = [[i] for i in range(len(vectors))]
    sims = vectors @ vectors.T if len(vectors) else np.zeros((0, 0))
    if penalty is not None and len(vectors):
        sims = sims - penalty
    while len(groups) > 1:
        best, pair = threshold, None
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                s = float(sims[np.ix_(groups[a], groups[b])].mean())
                if s >= best:
                    best, pair = s, (a, b)
        if pair is None:
            break
        a, b = pair
        groups[a] = groups[a] + groups[b]
        del groups[b]
    return groups


def name_group(texts: list[str], background: list[str], taken: set[str], titles: list[str],
               similarity: Similarity | None = None, projects: list[str | None] | None = None) -> str:
    """A new bucket's name: the group's best key phrase not ``taken`` (memvault.titles), each
    phrase weighed by its ``similarity`` to the group's centroid when given, the name of the
    project most chunks come from favoured."""
    return topic_title(texts, background, taken, titles, similarity, projects or ())


def _unit(v: np.ndarray) -> np.ndarray:
    return v / (np.linalg.norm(v) or 1.0)


class ClusterPass:
    """State of one cluster pass: the buckets' centroids and the batch counter for failpoints."""

    def __init__(self, ctx: StageContext) -> None:
        self.ctx, self.ledger = ctx, ctx.ledger
        rows = {b.name: b for b in self.ledger.buckets()}
        self.centroids = {n: np.array(b.centroid, dtype=np.float32) for n, b in rows.items() if b.centroid}
        self.sizes: dict[str, int] = {n: b.size for n, b in rows.items()}
        self.descriptions: dict[str, str] = {n: b.description for n, b in rows.items()}
        self.batches = 0
        self.created: dict[str, str] = {}
        self.projects: dict[str, Counter[str]] = {n: Counter(d) for n, d in self.ledger.bucket_projects().items()}
        self._conversation_projects: dict[str, str | None] = {}
        self.kept_apart: set[str] = set()  # chunk ids (a chunk may be matched twice in one pass)
        self.low_content = 0

    def project(self, chunk_id: str) -> str | None:
        """The project of the chunk's conversation (None for chat exports and unknown folders)."""
        cid = self.ledger.chunk(chunk_id).conversation_id
        if cid not in self._conversation_projects:
            conv = self.ledger.conversation(cid)
            self._conversation_projects[cid] = (conv.project or None) if conv else None
        return self._conversation_projects[cid]

    def committed(self) -> None:
        """A batch is in the ledger: write journaled Buckets.md additions, then the failpoint."""
        flush_bucket_pages(self.ctx)
        self.batches += 1
        failpoint("cluster", self.batches)

    def join(self, chunk_id: str, bucket: str, v: np.ndarray, score: float) -> None:
        """Assign a chunk to ``bucket`` and move the bucket's centroid towards it."""
        self.ledger.assign(chunk_id, bucket, score, self.ctx.run_id)
        self.count_project(chunk_id, bucket)
        if bucket in self.centroids:
            self.centroids[bucket] = _unit(self.centroids[bucket] * self.sizes[bucket] + v)
        else:
            self.centroids[bucket] = _unit(v)
        self.sizes[bucket] = self.sizes.get(bucket, 0) + 1
        self.ledger.upsert_bucket(bucket, self.descriptions.get(bucket, ""),
                                  self.centroids[bucket].astype(float).tolist(), self.sizes[bucket])

    def create(self, name: str, desc: str, vecs: np.ndarray) -> np.ndarray:
        """Record a new bucket centred on ``vecs`` and journal its Buckets.md section."""
        centroid = _unit(vecs.mean(axis=0))
        self.ledger.upsert_bucket(name, desc, centroid.astype(float).tolist(), 0)
        self.ledger.add_pending_bucket_page(name, desc, self.ctx.run_id)
        self.centroids[name], self.sizes[name], self.descriptions[name] = centroid, 0, desc
        self.created[name] = desc
        return centroid

    def count_project(self, chunk_id: str, bucket: str) -> None:
        project = self.project(chunk_id)
        if project:
            self.projects.setdefault(bucket, Counter())[project] += 1

    def nearest(self, chunk_id: str, v: np.ndarray) -> bool:
        """Join the nearest bucket when it is similar enough; False leaves the chunk waiting.

        A bucket holding only other projects' chunks must clear the threshold by the project margin.
        """
        settings = self.ctx.settings.cluster
        project = self.project(chunk_id)
        raw = {n: float(c @ v) for n, c in self.centroids.items()}
        scores = {n: s - (settings.project_margin if other_project(project, self.projects.get(n, ())) else 0.0)
                  for n, s in raw.items()}
        best = max(scores, key=lambda n: scores[n], default=None)
        if best is not None and scores[best] < settings.assign_similarity:
            best = None
        closest = max(raw, key=lambda n: raw[n], default=None)
        if closest is not None and closest != best and raw[closest] >= settings.assign_similarity:
            self.kept_apart.add(chunk_id)
            log.info("chunk %s kept out of %s, another project's bucket (%.2f, margin %.2f)", chunk_id[:8],
                     closest, raw[closest], settings.project_margin)
        if best is None:
            return False
        self.join(chunk_id, best, v, scores[best])
        if log.isEnabledFor(logging.INFO):  # the conversation's title costs a ledger read
            row = self.ledger.chunk(chunk_id)
            log.info("chunk %s of %s → %s (%.2f)", chunk_id[:8],
                     conv_label(row.conversation_id[:8], row.conversation_title), best, scores[best])
        return True


def flush_bucket_pages(ctx: StageContext) -> int:
    """Append buckets journaled in the ledger but missing from Meta/Buckets.md; clear the journal."""
    pending = ctx.ledger.pending_bucket_pages()
    if not pending:
        return 0
    added = BucketsPage(ctx.vault).add(pending)
    ctx.ledger.clear_pending_bucket_pages()
    return added


def assign_by_centroid(run: ClusterPass, pending: Pending) -> tuple[int, int, str | None]:
    """The no-model path over `pending`; returns (assigned, still waiting, why it stopped).

    Long because it is one crash-safe sequence: nearest bucket per chunk (a transaction each),
    then the leftovers grouped into new buckets and re-matched in one more transaction.
    Low-content leftovers take no part in grouping (counted in ``run.low_content``) but may
    join a bucket afterwards.
    """
    ctx, ledger, settings = run.ctx, run.ledger, run.ctx.settings.cluster
    leftovers: Pending = []
    stopped = None
    for n, (chunk_id, v) in enumerate(pending):
        stopped = ctx.out_of_budget()
        if stopped:
            leftovers += pending[n:]
            return len(pending) - len(leftovers), len(leftovers), stopped
        with ledger.transaction():
            joined = run.nearest(chunk_id, v)
        if joined:
            run.committed()
        else:
            leftovers.append((chunk_id, v))
    infos_all = {cid: ledger.chunk(cid) for cid, _ in leftovers}
    thin = [c for c in leftovers if is_low_content(infos_all[c[0]].text)]
    run.low_content += len(thin)
    founders = [c for c in leftovers if not is_low_content(infos_all[c[0]].text)]
    if len(founders) < settings.min_support:  # (the thin ones already tried every bucket above)
        return len(pending) - len(leftovers), len(leftovers), None
    leftovers = founders + thin  # founders first: group indices below refer to them
    vecs = np.stack([v for _, v in founders])
    infos = [infos_all[cid] for cid, _ in founders]
    texts = [c.text for c in infos]
    penalty = apart_matrix([run.project(cid) for cid, _ in founders]) * settings.project_margin
    background = texts + [ledger.chunk(c).text for c in ledger.assigned_chunk_ids(200)]
    taken = {n.casefold() for n in run.centroids} | {n.casefold() for n in run.descriptions} | \
        {p.stem.replace("_", " ").casefold() for p in ctx.vault.list_articles()} | ledger.taken_bucket_names()
    grouped: set[int] = set()
    # New buckets, their members and the chunks that then fit them: one batch, one transaction.
    with ledger.transaction():
        for group in agglomerate(vecs, settings.group_similarity, penalty):
            if len(group) < settings.min_support:
                continue
            group_texts = [texts[i] for i in group]
            titles = [infos[i].conversation_title or "" for i in group]
            name = name_group(group_texts, background, taken, titles,
                              similarity_to(ctx.embedder, unit_mean(vecs[group])),
                              [run.project(founders[i][0]) for i in group])
            taken.add(name.casefold())
            terms = keywords(group_texts, background, n=5, titles=titles)
            desc = "Conversations about " + ", ".join(surface_form(t, group_texts) for t in terms) + "."
            centroid = run.create(name, desc, vecs[group])
            for i in group:
                cid, v = leftovers[i]
                ledger.assign(cid, name, float(v @ centroid), ctx.run_id)
                run.count_project(cid, name)
            run.sizes[name] = len(group)
            ledger.upsert_bucket(name, desc, centroid.astype(float).tolist(), len(group))
            grouped |= set(group)
            log.info("new bucket %s from %d chunks", name, len(group))
        # Chunks left alone may belong to a bucket born in this very pass.
        rest = [c for i, c in enumerate(leftovers) if i not in grouped]
        waiting = [c for c in rest if not run.nearest(*c)]
    if grouped or len(waiting) < len(rest):
        run.committed()
    return len(pending) - len(waiting), len(waiting), None


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
        chunks = [ledger.chunk(c) for c in batch]
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
    # Forgotten buckets count as recorded: one a person re-adds to Buckets.md is not re-embedded.
    recorded = {b.name for b in ledger.buckets(include_forgotten=True)}
    # Buckets written into Meta/Buckets.md by hand get a centroid from their own words.
    hand = {n: d for n, d in BucketsPage(ctx.vault).read().items() if n not in recorded}
    if hand:
        vecs = ctx.embedder.embed([f"{n}. {d}" for n, d in hand.items()])
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
            assigned, _, stopped = assign_by_centroid(run, answers.fallback_chunks)
        left = len(ledger.unassigned_chunks())
        result = ClusterResult(chunks=len(pending), model=answers.placed, proposed=answers.proposed,
                               fallbacks=answers.fallbacks, fallback=len(answers.fallbacks), unasked=answers.unasked,
                               prompt_hash=prompt.hash, fallback_assigned=assigned, waiting=left,
                               assigned=len(pending) - min(left, len(pending)))
    else:
        assigned, waiting, stopped = assign_by_centroid(run, pending)
        result = ClusterResult(chunks=len(pending), assigned=assigned, waiting=waiting)
    result.buckets_new = len(run.created)
    result.stopped = stopped or None
    result.kept_apart, result.low_content = len(run.kept_apart) or None, run.low_content or None
    for name, value in ctx.stage_cost("cluster").items():
        setattr(result, name, value)
    ctx.units_done["cluster"] = result.assigned
    return result


@task(name="cluster", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def cluster(ctx: StageContext) -> dict[str, Any]:
    """Prefect task: assign chunks to buckets, propose new ones."""
    return run_cluster(ctx).report()

"""cluster, no-model path: the state of one pass, and chunks → buckets by centroid.

`ClusterPass` holds the buckets' centroids, sizes and projects for one run of the stage and
applies each assignment (both paths use it). `assign_by_centroid` places each chunk in the
nearest bucket above `cluster.assign_similarity` (a bucket of other projects only must clear it
by `project_margin` too), then groups the leftovers by average-link agglomeration; a group
with `min_support` chunks becomes a new bucket, named by memvault.naming.titles and journaled for
Meta/Buckets.md in the same transaction (`flush_bucket_pages` writes it right after).
"""

import logging
from collections import Counter

import numpy as np

from memvault.failpoints import failpoint
from memvault.logs import conv_label
from memvault.hygiene.noise import discussion_words, is_low_content
from memvault.naming.scripts import mixed, script_of
from memvault.naming.phrase_similarity import Similarity, similarity_to, unit_mean
from memvault.naming.titles import topic_title
from stores.meta import BucketsPage
from stores.rows import ChunkRow
from memvault.stages.cluster_projects import apart_matrix, other_project, script_apart
from memvault.stages.context import StageContext
from memvault.stages.text import keywords, surface_form

log = logging.getLogger(__name__)

Pending = list[tuple[str, np.ndarray]]  # (chunk id, its centroid vector), chunks waiting for a bucket


def agglomerate(vectors: np.ndarray, threshold: float, penalty: np.ndarray | None = None) -> list[list[int]]:
    """Average-link agglomerative clustering on unit vectors; stop below ``threshold``.

    ``penalty`` (n × n) is subtracted from the pairwise similarities first: the project margin.
    Each step merges the pair of groups whose mean pairwise similarity is highest (the last such
    pair in row order on a tie). The sums of similarity between groups are kept and updated on
    a merge (the sum to a merged group is the sum of its parts'), so a step costs one pass over
    the group pairs, not a mean over every member pair: O(n²) a step, where the textbook loop
    was O(n²) pairs of means, which made the cluster stage the cost of a run on a corpus of
    thousands of turns.
    """
    n = len(vectors)
    if n == 0:
        return []
    sums = np.asarray(vectors @ vectors.T, dtype=np.float64)
    if penalty is not None:
        sums = sums - penalty
    groups = [[i] for i in range(n)]
    sizes = np.ones(n)
    while len(groups) > 1:
        k = len(groups)
        means = sums / np.outer(sizes, sizes)
        means[np.tril_indices(k)] = -np.inf  # each pair once, a < b
        flat = means.ravel()
        best = float(flat.max())
        if best < threshold:
            break
        a, b = divmod(int(np.flatnonzero(flat == best)[-1]), k)
        merged = sums[a] + sums[b]
        sums[a], sums[:, a] = merged, merged
        sums[a, a] = 0.0  # within a group: never read
        sums = np.delete(np.delete(sums, b, axis=0), b, axis=1)
        sizes[a] += sizes[b]
        sizes = np.delete(sizes, b)
        groups[a] = groups[a] + groups[b]
        del groups[b]
    return groups


def split_oversized(vectors: np.ndarray, groups: list[list[int]], threshold: float, cap: int,
                    penalty: np.ndarray | None = None, step: float = 0.05) -> list[list[int]]:
    """``groups`` with each one of more than ``cap`` members agglomerated again at a stricter
    ``threshold`` (by ``step``) until its parts fit, in order; 0 leaves them as they are.

    Everyday chat is alike in its greetings and asides, and average-link grouping made one topic
    of 97 LoCoMo chunks (170 from 86 conversations a night later): an article of 6,000 words that
    memvault's own lint called oversize. Its parts at a stricter threshold are its closer-knit
    topics; parts left alone wait for partners like any leftover chunk. Past a cosine of 1 the
    group is cut in runs of ``cap``."""
    if cap <= 0:
        return groups
    out: list[list[int]] = []
    for group in groups:
        if len(group) <= cap:
            out.append(group)
        elif threshold + step > 1.0:
            out += [group[i:i + cap] for i in range(0, len(group), cap)]
        else:
            sub = penalty[np.ix_(group, group)] if penalty is not None else None
            parts = [[group[i] for i in part] for part in agglomerate(vectors[group], threshold + step, sub)]
            out += split_oversized(vectors, parts, threshold + step, cap, penalty, step)
    return out


def name_group(texts: list[str], background: list[str], taken: set[str], titles: list[str],
               similarity: Similarity | None = None, projects: list[str | None] | None = None) -> str:
    """A new bucket's name: the group's best key phrase not ``taken`` (memvault.naming.titles), each
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
        # One language per article: a bucket's script is its chunks' main script.
        self.scripts: dict[str, str] = {n: script_of("\n".join(t)) for n, t in self.ledger.bucket_texts().items()}
        self._chunk_scripts: dict[str, str] = {}
        self._rows: dict[str, ChunkRow] = {}  # a chunk's row does not change during a pass
        self.low_content = 0

    def rows(self, chunk_ids: list[str]) -> list[ChunkRow]:
        """The ledger rows of ``chunk_ids``, read once a pass, the unread ones in one query."""
        unread = [c for c in dict.fromkeys(chunk_ids) if c not in self._rows]
        self._rows.update(zip(unread, self.ledger.chunks(unread)))
        return [self._rows[c] for c in chunk_ids]

    def project(self, chunk_id: str) -> str | None:
        """The project of the chunk's conversation (None for chat exports and unknown folders)."""
        cid = self.rows([chunk_id])[0].conversation_id
        if cid not in self._conversation_projects:
            conv = self.ledger.conversation(cid)
            self._conversation_projects[cid] = (conv.project or None) if conv else None
        return self._conversation_projects[cid]

    def script(self, chunk_id: str) -> str:
        """The main script of a chunk's text (memvault.naming.scripts)."""
        if chunk_id not in self._chunk_scripts:
            self._chunk_scripts[chunk_id] = script_of(self.rows([chunk_id])[0].text)
        return self._chunk_scripts[chunk_id]

    def committed(self) -> None:
        """A batch is in the ledger: write journaled Buckets.md additions, then the failpoint."""
        flush_bucket_pages(self.ctx)
        self.batches += 1
        failpoint("cluster", self.batches)

    def join(self, chunk_id: str, bucket: str, v: np.ndarray, score: float) -> None:
        """Assign a chunk to ``bucket`` and move the bucket's centroid towards it."""
        self.ledger.assign(chunk_id, bucket, score, self.ctx.run_id)
        self.count_project(chunk_id, bucket)
        if self.scripts.get(bucket, "none") == "none":
            self.scripts[bucket] = self.script(chunk_id)
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

    def choice(self, chunk_id: str, v: np.ndarray) -> tuple[str | None, float, str | None]:
        """The bucket a chunk fits (None: none clears `cluster.assign_similarity`), its score,
        and the closer bucket it was kept out of for the project margin (None: none).

        A bucket of another script is no candidate at all: its article is in another language.
        A bucket holding only other projects' chunks must clear the threshold by the project margin.
        """
        settings = self.ctx.settings.cluster
        project = self.project(chunk_id)
        script = self.script(chunk_id)
        raw = {n: float(c @ v) for n, c in self.centroids.items()
               if not mixed([script, self.scripts.get(n, "none")])}
        scores = {n: s - (settings.project_margin if other_project(project, self.projects.get(n, ())) else 0.0)
                  for n, s in raw.items()}
        best = max(scores, key=lambda n: scores[n], default=None)
        if best is not None and scores[best] < settings.assign_similarity:
            best = None
        closest = max(raw, key=lambda n: raw[n], default=None)
        apart = closest if closest is not None and closest != best and raw[closest] >= settings.assign_similarity \
            else None
        return best, scores[best] if best is not None else 0.0, apart

    def full(self, bucket: str) -> bool:
        """Whether ``bucket`` holds `cluster.max_bucket_chunks` chunks (0: no limit)."""
        return 0 < self.ctx.settings.cluster.max_bucket_chunks <= self.sizes.get(bucket, 0)

    def nearest(self, chunk_id: str, v: np.ndarray) -> bool:
        """Join the bucket the chunk fits (``choice``); False leaves the chunk waiting, as does a
        bucket that is ``full``."""
        best, score, apart = self.choice(chunk_id, v)
        if apart is not None:
            self.kept_apart.add(chunk_id)
            log.info("chunk %s kept out of %s, another project's bucket (margin %.2f)", chunk_id[:8], apart,
                     self.ctx.settings.cluster.project_margin)
        if best is None:
            return False
        if self.full(best):
            # The chunk waits to found a closer-knit topic beside it, never the next-best
            # bucket (that mixed a dance studio's chunks into an article on pottery).
            log.info("chunk %s kept out of %s, full (%d chunks)", chunk_id[:8], best, self.sizes[best])
            return False
        self.join(chunk_id, best, v, score)
        if log.isEnabledFor(logging.INFO):  # the conversation's title costs a ledger read
            row = self.rows([chunk_id])[0]
            log.info("chunk %s of %s → %s (%.2f)", chunk_id[:8],
                     conv_label(row.conversation_id[:8], row.conversation_title), best, score)
        return True


def flush_bucket_pages(ctx: StageContext) -> int:
    """Append buckets journaled in the ledger but missing from Meta/Buckets.md; clear the journal."""
    pending = ctx.ledger.pending_bucket_pages()
    if not pending:
        return 0
    added = BucketsPage(ctx.vault).add(pending)
    ctx.ledger.clear_pending_bucket_pages()
    return added


def _join_buckets(run: ClusterPass, pending: Pending) -> tuple[Pending, str | None]:
    """Each chunk into its nearest bucket, a transaction each; the chunks that fit none, and
    why it stopped early (out of budget: the rest are left over untried)."""
    leftovers: Pending = []
    for n, (chunk_id, v) in enumerate(pending):
        stopped = run.ctx.out_of_budget()
        if stopped:
            return leftovers + pending[n:], stopped
        with run.ledger.transaction():
            joined = run.nearest(chunk_id, v)
        if joined:
            run.committed()
        else:
            leftovers.append((chunk_id, v))
    return leftovers, None


def _found_bucket(run: ClusterPass, members: Pending, vecs: np.ndarray, texts: list[str], titles: list[str],
                  background: list[str], taken: set[str]) -> None:
    """A new bucket for a group of chunks (``vecs`` their vectors, in order): named, described,
    stored with its members; its name joins ``taken``."""
    ctx, ledger = run.ctx, run.ledger
    name = name_group(texts, background, taken, titles, similarity_to(ctx.topics, unit_mean(vecs)),
                      [run.project(cid) for cid, _ in members])
    taken.add(name.casefold())
    terms = keywords(texts, background, n=5, titles=titles)
    desc = "Conversations about " + ", ".join(surface_form(t, texts) for t in terms) + "."
    centroid = run.create(name, desc, vecs)
    run.scripts[name] = run.script(members[0][0])
    for cid, v in members:
        ledger.assign(cid, name, float(v @ centroid), ctx.run_id)
        run.count_project(cid, name)
    run.sizes[name] = len(members)
    ledger.upsert_bucket(name, desc, centroid.astype(float).tolist(), len(members))
    log.info("new bucket %s from %d chunks", name, len(members))


def assign_by_centroid(run: ClusterPass, pending: Pending, singles: bool = True) -> tuple[int, int, str | None]:
    """The no-model path over `pending`; returns (assigned, still waiting, why it stopped).

    One crash-safe sequence: nearest bucket per chunk (a transaction each), then the
    leftovers grouped into new buckets and re-matched in one more transaction.
    Low-content leftovers take no part in grouping (counted in ``run.low_content``) but may
    join a bucket afterwards. With ``singles`` (the no-model path; the model path proposes its
    own buckets), a leftover with no partner and `cluster.single_chunk_words` words founds one.
    """
    ctx, ledger, settings = run.ctx, run.ledger, run.ctx.settings.cluster
    run.rows([cid for cid, _ in pending])
    leftovers, stopped = _join_buckets(run, pending)
    if stopped:
        return len(pending) - len(leftovers), len(leftovers), stopped
    infos_all = dict(zip((cid for cid, _ in leftovers), run.rows([cid for cid, _ in leftovers])))
    thin = [c for c in leftovers if is_low_content(infos_all[c[0]].text)]
    run.low_content += len(thin)
    founders = [c for c in leftovers if not is_low_content(infos_all[c[0]].text)]
    if not founders or (not singles and len(founders) < settings.min_support):  # (thin ones tried every bucket)
        return len(pending) - len(leftovers), len(leftovers), None
    leftovers = founders + thin  # founders first: group indices below refer to them
    vecs = np.stack([v for _, v in founders])
    infos = [infos_all[cid] for cid, _ in founders]
    texts = [c.text for c in infos]
    penalty = apart_matrix([run.project(cid) for cid, _ in founders]) * settings.project_margin
    # Chunks in different scripts never group: no similarity clears a penalty of 10.
    penalty = penalty + 10.0 * script_apart([run.script(cid) for cid, _ in founders])
    background = texts + ledger.assigned_chunk_texts(200)
    taken = {n.casefold() for n in run.centroids} | {n.casefold() for n in run.descriptions} | \
        {p.stem.replace("_", " ").casefold() for p in ctx.vault.list_articles()} | ledger.taken_bucket_names()
    grouped: set[int] = set()
    # New buckets, their members and the chunks that then fit them: one batch, one transaction.
    with ledger.transaction():
        groups = agglomerate(vecs, settings.group_similarity, penalty) if len(founders) > 1 else [[0]]
        groups = split_oversized(vecs, groups, settings.group_similarity, settings.max_bucket_chunks, penalty)
        for group in groups:
            # A chunk with no partner founds a topic alone when it says enough (#25 item 9).
            alone = singles and len(group) == 1 and settings.single_chunk_words > 0 and \
                discussion_words(texts[group[0]]) >= settings.single_chunk_words
            if len(group) < settings.min_support and not alone:
                continue
            _found_bucket(run, [founders[i] for i in group], vecs[group], [texts[i] for i in group],
                          [infos[i].conversation_title or "" for i in group], background, taken)
            grouped |= set(group)
        # Chunks left alone may belong to a bucket born in this very pass.
        rest = [c for i, c in enumerate(leftovers) if i not in grouped]
        waiting = [c for c in rest if not run.nearest(*c)]
    if grouped or len(waiting) < len(rest):
        run.committed()
    return len(pending) - len(waiting), len(waiting), None

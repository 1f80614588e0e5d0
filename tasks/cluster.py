"""cluster: unassigned chunks → buckets (article topics); new buckets proposed and recorded.

No-model path: a chunk joins the nearest bucket centroid above a threshold; leftovers are
grouped by average-link agglomeration, and a group with enough support becomes a new bucket,
named by its most distinctive terms and appended to Meta/Buckets.md. Buckets a person adds
to Meta/Buckets.md by hand are honoured (their centroid comes from their name and text).
"""

import re
from typing import Any

import numpy as np
from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from tasks.text import keywords, surface_form

_HEADING = re.compile(r"^##\s+(.+?)\s*$")


def parse_buckets(text: str) -> dict[str, str]:
    """`## Name` headings with the paragraph under each → {name: description}."""
    out: dict[str, str] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            current = m.group(1)
            out[current] = ""
        elif current is not None and line.strip() and not line.startswith("#"):
            out[current] = (out[current] + " " + line.strip()).strip()
    return out


def append_buckets(text: str, new: dict[str, str]) -> str:
    body = text.rstrip("\n")
    for name, description in new.items():
        body += f"\n\n## {name}\n\n{description}"
    return body + "\n"


def agglomerate(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    """Average-link agglomerative clustering on unit vectors; stop below ``threshold``."""
    groups = [[i] for i in range(len(vectors))]
    sims = vectors @ vectors.T if len(vectors) else np.zeros((0, 0))
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


def name_group(texts: list[str], background: list[str], taken: set[str], titles: list[str]) -> str:
    terms = keywords(texts, background, n=2, titles=titles) or ["Topic"]
    name = " ".join(surface_form(t, texts) for t in terms)
    base, n = name, 2
    while name.casefold() in taken:
        name, n = f"{base} {n}", n + 1
    return name


def _unit(v: np.ndarray) -> np.ndarray:
    return v / (np.linalg.norm(v) or 1.0)


def run_cluster(ctx: Any, log: Any = None) -> dict[str, Any]:
    ledger, settings = ctx.ledger, ctx.settings.cluster
    buckets_path = ctx.vault.meta_dir / "Buckets.md"
    buckets_md = ctx.vault.read(buckets_path) or "# Buckets\n"
    known = {b["name"]: b for b in ledger.buckets()}
    # Buckets written into Meta/Buckets.md by hand get a centroid from their own words.
    hand = {n: d for n, d in parse_buckets(buckets_md).items() if n not in known}
    if hand:
        vecs = ctx.embedder.embed([f"{n}. {d}" for n, d in hand.items()])
        for (name, desc), vec in zip(hand.items(), vecs):
            ledger.upsert_bucket(name, desc, vec.astype(float).tolist(), 0)
        known = {b["name"]: b for b in ledger.buckets()}
    pending = ledger.unassigned_chunks()
    centroids = {n: np.array(b["centroid"], dtype=np.float32) for n, b in known.items() if b["centroid"]}
    sizes = {n: b["size"] for n, b in known.items()}
    descriptions = {n: b["description"] for n, b in known.items()}

    def assign_nearest(chunks: list[tuple[str, np.ndarray]]) -> list[tuple[str, np.ndarray]]:
        """Join each chunk to its nearest bucket above the threshold; return the rest."""
        rest = []
        for chunk_id, v in chunks:
            scores = {n: float(c @ v) for n, c in centroids.items()}
            best = max(scores, key=scores.get, default=None)
            if best is None or scores[best] < settings.assign_similarity:
                rest.append((chunk_id, v))
                continue
            ledger.assign(chunk_id, best, scores[best], ctx.run_id)
            centroids[best] = _unit(centroids[best] * sizes[best] + v)
            sizes[best] += 1
            ledger.upsert_bucket(best, descriptions[best], centroids[best].astype(float).tolist(), sizes[best])
            if log:
                log.info("chunk %s → %s (%.2f)", chunk_id[:8], best, scores[best])
        return rest

    leftovers = assign_nearest([(cid, np.array(v, dtype=np.float32)) for cid, v in pending])
    created: dict[str, str] = {}
    if len(leftovers) >= settings.min_support:
        vecs = np.stack([v for _, v in leftovers])
        infos = [ledger.chunk(cid) for cid, _ in leftovers]
        texts = [c["text"] for c in infos]
        background = texts + [ledger.chunk(c)["text"] for c in ledger.assigned_chunk_ids(200)]
        taken = {n.casefold() for n in known} | {p.stem.replace("_", " ").casefold() for p in ctx.vault.list_articles()}
        grouped: set[int] = set()
        for group in agglomerate(vecs, settings.group_similarity):
            if len(group) < settings.min_support:
                continue
            group_texts = [texts[i] for i in group]
            titles = [infos[i]["conversation_title"] or "" for i in group]
            name = name_group(group_texts, background, taken, titles)
            taken.add(name.casefold())
            terms = keywords(group_texts, background, n=5, titles=titles)
            desc = "Conversations about " + ", ".join(surface_form(t, group_texts) for t in terms) + "."
            centroid = _unit(vecs[group].mean(axis=0))
            ledger.upsert_bucket(name, desc, centroid.astype(float).tolist(), len(group))
            for i in group:
                cid, v = leftovers[i]
                ledger.assign(cid, name, float(v @ centroid), ctx.run_id)
            centroids[name], sizes[name], descriptions[name] = centroid, len(group), desc
            grouped |= set(group)
            created[name] = desc
            if log:
                log.info("new bucket %s from %d chunks", name, len(group))
        # Chunks left alone may belong to a bucket born in this very pass.
        leftovers = assign_nearest([c for i, c in enumerate(leftovers) if i not in grouped])
    if created:
        ctx.vault.write(buckets_path, append_buckets(buckets_md, created))
    return {"chunks": len(pending), "assigned": len(pending) - len(leftovers), "buckets_new": len(created),
            "waiting": len(leftovers)}


@task(name="cluster", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def cluster(ctx: Any) -> dict[str, Any]:
    """Prefect task: assign chunks to buckets, propose new ones."""
    return run_cluster(ctx, get_run_logger())

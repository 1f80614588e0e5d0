"""A no-model bucket holds at most `cluster.max_bucket_chunks` chunks: everyday chat alike in its
asides once made one topic of 170 chunks, an article the vault's own lint called oversize."""

from typing import Any

import numpy as np

from memvault.engines.none import NoneEngine
from memvault.stages.cluster import run_cluster
from memvault.stages.cluster_centroid import agglomerate, split_oversized

# One subject in many turns: close enough for any bucket, with two strands (dough, oven).
DOUGH = [f"user: My sourdough starter doubled in {h} hours, is the dough ready for shaping and the bulk rise?\n"
         f"assistant: At {h} hours the sourdough starter is active; shape the dough after the bulk rise." for h in range(3, 9)]
OVEN = [f"user: Should the dutch oven preheat for {m} minutes before the sourdough loaf goes in?\n"
        f"assistant: Preheat the dutch oven {m} minutes, then bake the sourdough loaf covered." for m in range(20, 26)]


def _vectors(rng: np.random.Generator, n: int, centres: int, spread: float) -> np.ndarray:
    base = rng.normal(size=(centres, 24))
    v = base[np.arange(n) % centres] + spread * rng.normal(size=(n, 24))
    unit: np.ndarray = v / np.linalg.norm(v, axis=1, keepdims=True)
    return unit


def test_an_oversized_group_is_split_into_its_closer_knit_parts() -> None:
    vectors = _vectors(np.random.default_rng(7), 30, 3, 0.9)
    groups = agglomerate(vectors, 0.0)
    assert max(len(g) for g in groups) > 10  # the lump the cap is for
    split = split_oversized(vectors, groups, 0.0, 10)
    assert max(len(g) for g in split) <= 10 and len(split) > len(groups)
    assert sorted(i for g in split for i in g) == list(range(30))  # nothing lost, nothing twice
    assert split_oversized(vectors, groups, 0.0, 0) == groups  # 0: no limit
    same = np.ones((7, 4)) / 2.0  # identical vectors: no threshold parts them, runs of the cap do
    assert [len(g) for g in split_oversized(same, [list(range(7))], 0.4, 3)] == [3, 3, 1]


def test_a_bucket_never_holds_more_than_the_cap(make_ctx: Any, embedder: Any) -> None:
    ctx = make_ctx(NoneEngine(), cluster={"max_bucket_chunks": 4})
    cid = ctx.ledger.conversations_to_chunk()[0]
    texts = DOUGH + OVEN
    for i, (text, vector) in enumerate(zip(texts, embedder.embed(texts))):
        ctx.ledger.add_chunk(f"c{i:02d}", cid, [f"m{i}"], text[:40], text, vector.astype(float).tolist(), "r1")
    run_cluster(ctx)
    first = {b.name: b.size for b in ctx.ledger.buckets()}
    assert len(first) >= 3 and max(first.values()) <= 4, first
    # The same subject the next night: full buckets take none of it.
    more = [t.replace("sourdough", "rye sourdough") for t in texts]
    for i, (text, vector) in enumerate(zip(more, embedder.embed(more))):
        ctx.ledger.add_chunk(f"d{i:02d}", cid, [f"n{i}"], text[:40], text, vector.astype(float).tolist(), "r2")
    run_cluster(ctx)
    sizes = {b.name: b.size for b in ctx.ledger.buckets()}
    assert max(sizes.values()) <= 4, sizes
    assert all(sizes[n] >= first[n] for n in first)

    uncapped = make_ctx(NoneEngine())
    assert uncapped.settings.cluster.max_bucket_chunks == 60


def test_a_chunk_whose_nearest_bucket_is_full_waits_rather_than_join_the_next(make_ctx: Any, embedder: Any) -> None:
    from memvault.stages.cluster_centroid import ClusterPass

    ctx = make_ctx(NoneEngine(), cluster={"max_bucket_chunks": 4})
    cid = ctx.ledger.conversations_to_chunk()[0]
    dough, oven = embedder.embed(DOUGH), embedder.embed(OVEN)
    for name, vecs, size in (("Sourdough Starter", dough[:4], 4), ("Dutch Oven", oven, 1)):
        centroid = vecs.mean(axis=0) / np.linalg.norm(vecs.mean(axis=0))
        ctx.ledger.upsert_bucket(name, "", centroid.astype(float).tolist(), size)
    ctx.ledger.add_chunk("late", cid, ["m-late"], DOUGH[5][:40], DOUGH[5], dough[5].astype(float).tolist(), "r2")
    run = ClusterPass(ctx)
    fits = {n: float(c @ dough[5]) for n, c in run.centroids.items()}
    assert fits["Sourdough Starter"] > fits["Dutch Oven"] >= ctx.settings.cluster.assign_similarity, fits
    assert not run.nearest("late", dough[5])  # waits: the oven article is no home for a starter's chunk
    assert run.sizes == {"Sourdough Starter": 4, "Dutch Oven": 1}
    # Meta/Waiting.md says why it waits (nothing dropped silently).
    from memvault.stages.cluster_waiting import write_waiting_page

    assert write_waiting_page(ctx, run) == {"nearest topic full": 1}
    page = (ctx.vault.meta_dir / "Waiting.md").read_text(encoding="utf-8")
    assert "## Nearest topic full (1)" in page and "holds 4 chunks already" in page

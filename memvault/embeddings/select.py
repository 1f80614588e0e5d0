"""The embedder a home's settings name: index and query both come here, so a home's
vectors always come from one embedder."""

from typing import Any

from memvault.embeddings.base import INT8_NAME, MODEL_NAME, STATIC_NAME, Embedder
from memvault.embeddings.http import HttpEmbedder
from memvault.embeddings.minilm import MiniLMEmbedder
from memvault.embeddings.static import StaticEmbedder

QUERY_THREADS = 1
MINILM_NAMES = (INT8_NAME, MODEL_NAME)  # the model every cosine threshold of memvault was chosen on


def embedder_for(settings: Any, threads: int | None = None, keep_session: bool = True) -> Embedder:
    """The embedder ``settings.embeddings`` names, batched as it says. ``threads`` and
    ``keep_session`` tune the ONNX model's session (the static table has neither)."""
    if settings.embeddings.url:
        e = settings.embeddings
        return HttpEmbedder(e.url, e.model, e.api_key_env, e.batch_size, e.timeout_s, e.retries)
    if settings.embeddings.model == STATIC_NAME:
        return StaticEmbedder(settings.embeddings.batch_size)
    return MiniLMEmbedder(settings.embeddings.batch_size, threads=threads, keep_session=keep_session,
                          quantized=settings.embeddings.model == INT8_NAME)


def query_embedder(settings: Any) -> Embedder:
    """The embedder of a process that embeds a query or two and exits (a CLI recall, a hook).

    One intra-op thread: on one short text a second thread's start-up and spinning cost more
    CPU (~0.05 s of a cold recall here) than it saves, and the vectors are the same bit for
    bit (each output is computed whole by one thread; tests/engines/test_embeddings.py checks).
    And the session is let go once the query is embedded: the model's ~50 MB are then free for
    the index search that follows, so a cold recall peaks at the larger of the two, not their
    sum (100k nodes: 287 → 238 MB). Batch work (indexing, `memvault serve`) keeps one thread
    per core and its session.
    """
    return embedder_for(settings, threads=QUERY_THREADS, keep_session=False)


def topic_embedder_for(settings: Any) -> Embedder | None:
    """The embedder of the topic stages (chunk, cluster, synthesize) when it is not the home's
    own (None: the home's embedder serves them too).

    Their tables and thresholds were chosen on MiniLM's cosines: chunk_segment.py's learned
    boundaries, `cluster.assign_similarity` and `group_similarity`. Another model's cosines fall
    elsewhere: through them the no-model segmentation cut far worse (TIAGE test boundary F1
    0.667 with the int8 MiniLM; 0.306 with the static table, 0.632 with all-mpnet-base-v2;
    bench/README.md, "Topic segmentation"). And the ledger's chunk vectors and bucket centroids
    outlive an embedder change, which would mix widths. So a home that embeds with anything but
    MiniLM (int8 or fp32) keeps the bundled int8 MiniLM for its topics; the index and recall use
    the configured embedder."""
    if not topics_apart(settings):
        return None
    return _bundled_minilm(settings.embeddings.batch_size)


def topics_apart(settings: Any) -> bool:
    """Whether the home's topics are embedded by the bundled int8 MiniLM apart from its index
    (the home embeds with another model than MiniLM: ``topic_embedder_for``)."""
    e = settings.embeddings
    return bool(e.url) or e.model not in MINILM_NAMES


def gate_embedder_for(embedder: Embedder | None, batch_size: int = 64) -> Embedder | None:
    """The embedder whose cosines the prompt hook's decision reads when they cannot be the
    index's: None when ``embedder`` (the home's query embedder; None: recall has no vectors,
    full text only) is MiniLM, else the bundled int8 MiniLM, in front of a cache in memory.

    The decision's weights and threshold were chosen on MiniLM's cosines. The static table's
    run high and do not tell prompts apart (best unit, median: 0.593 for answerable prompts,
    0.601 for unrelated ones; MiniLM 0.563 / 0.201): at the shipped threshold a static home's
    hook injected on 68 % of unrelated prompts. Measured by MiniLM on the same recalled units,
    the same rule injects on 96.0 % of answerable and 1.0 % of unrelated prompts of the report
    split (bench/README.md, "The live path's hooks"), whatever model ranked them."""
    from memvault.embeddings.cache import CachedEmbedder, MemoryStore

    if embedder is not None and embedder.name in MINILM_NAMES:
        return None
    return CachedEmbedder(_bundled_minilm(batch_size), MemoryStore())


def _bundled_minilm(batch_size: int) -> MiniLMEmbedder:
    """The bundled int8 MiniLM, for cosines read against thresholds chosen on MiniLM's."""
    return MiniLMEmbedder(batch_size, quantized=True)

"""chunk: conversations changed since `chunked_at` → topic chunks (message ranges with a label).

No-model path: TextTiling-like segmentation — embed each exchange (a user turn and the
replies after it) and cut where consecutive exchanges stop being similar. Only messages of
the active thread not yet in a chunk are chunked, so an appended session adds new chunks
and never re-chunks what was already synthesized.
"""

import hashlib
from typing import Any

import numpy as np
from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from tasks.text import label

SKIP_KINDS = {"meta"}


def exchanges(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Group messages into exchanges; low-value and meta messages are left out."""
    groups: list[list[dict[str, Any]]] = []
    for m in messages:
        if m["low_value"] or m["kind"] in SKIP_KINDS or not m["text"].strip():
            continue
        if m["role"] == "user" or not groups:
            groups.append([m])
        else:
            groups[-1].append(m)
    return groups


def render(messages: list[dict[str, Any]]) -> str:
    return "\n".join(f"{m['role']}: {m['text'].strip()}" for m in messages)


def segment(vectors: np.ndarray, sizes: list[int], threshold: float, max_chars: int) -> list[tuple[int, int]]:
    """Cut a sequence of exchange vectors into [start, end) ranges.

    A cut goes where the cosine between neighbours drops below ``threshold`` and is a local
    minimum (a "valley" as in TextTiling), or where a chunk would exceed ``max_chars``.
    """
    n = len(vectors)
    if n == 0:
        return []
    sims = [float(vectors[i] @ vectors[i + 1]) for i in range(n - 1)]
    cuts = set()
    for i, s in enumerate(sims):
        left = sims[i - 1] if i > 0 else 1.0
        right = sims[i + 1] if i + 1 < len(sims) else 1.0
        if s < threshold and s <= left and s <= right:
            cuts.add(i + 1)
    ranges, start, size = [], 0, 0
    for i in range(n):
        if i > start and (i in cuts or size + sizes[i] > max_chars):
            ranges.append((start, i))
            start, size = i, 0
        size += sizes[i]
    ranges.append((start, n))
    return ranges


def chunk_id(cid: str, message_ids: list[str]) -> str:
    return hashlib.sha256(f"{cid}\x1f{message_ids[0]}\x1f{message_ids[-1]}".encode()).hexdigest()[:32]


def chunk_conversation(ctx: Any, cid: str) -> int:
    """Chunk the not-yet-chunked tail of one conversation; returns the number of chunks."""
    done = ctx.ledger.chunked_message_ids(cid)
    fresh = [m for m in ctx.ledger.active_thread(cid) if m["native_id"] not in done]
    groups = exchanges(fresh)
    if not groups:
        return 0
    texts = [render(g)[:2000] for g in groups]
    vectors = ctx.embedder.embed(texts)
    ranges = segment(vectors, [len(render(g)) for g in groups], ctx.settings.chunk.boundary_similarity,
                     ctx.settings.chunk.max_chunk_chars)
    for start, end in ranges:
        msgs = [m for g in groups[start:end] for m in g]
        ids = [m["native_id"] for m in msgs]
        centroid = vectors[start:end].mean(axis=0)
        centroid = centroid / (np.linalg.norm(centroid) or 1.0)
        first_user = next((m["text"] for m in msgs if m["role"] == "user"), msgs[0]["text"])
        ctx.ledger.add_chunk(chunk_id(cid, ids), cid, ids, label(first_user), render(msgs),
                             centroid.astype(float).tolist(), ctx.run_id)
    return len(ranges)


def run_chunk(ctx: Any, log: Any = None) -> dict[str, Any]:
    todo = ctx.ledger.conversations_to_chunk()
    made = 0
    for cid in todo:
        with ctx.ledger.transaction():
            n = chunk_conversation(ctx, cid)
            ctx.ledger.mark_chunked(cid)
        made += n
        if log:
            log.info("chunked %s into %d chunk(s)", cid[:8], n)
    return {"conversations": len(todo), "chunks_new": made}


@task(name="chunk", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def chunk(ctx: Any) -> dict[str, Any]:
    """Prefect task: segment changed conversations into topic chunks."""
    return run_chunk(ctx, get_run_logger())

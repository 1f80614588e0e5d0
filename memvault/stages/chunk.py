"""chunk: conversations changed since `chunked_at` → topic chunks (message ranges with a label).

No-model path (memvault.stages.chunk_segment): embed each exchange (a user turn and the replies
after it), score each gap between exchanges with a small learned model over explainable
features (cosines either side, word overlap, opening and closing phrases) and cut the most
probable gaps; `boundary_method = "valleys"` keeps the older TextTiling hand rule. Only messages of
the active thread not yet in a chunk are chunked, so an appended session adds new chunks
and never re-chunks what was already synthesized.

Model path: the model names (start id, end id, label) per window of messages (memvault.stages.chunk_model);
near-misses are repaired deterministically; a reply that cannot be used makes that one
conversation fall back to the no-model segmentation, and the reason is recorded. Each
conversation is one unit: budget-checked before, committed in one transaction, failpoint
`chunk:<n>` after.
"""

import hashlib
import logging
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from memvault.embeddings import Embedder
from memvault.engines import structured
from memvault.engines.base import Completion, Engine
from memvault.failpoints import failpoint
from memvault.logs import conv_label
from memvault.hygiene.noise import strip_noise
from memvault.prompts import Prompt, load_prompt
from memvault.config.settings import ChunkSettings
from stores.rows import ConversationRow, MessageRow
from memvault.stages.chunk_model import ChunkReply, RepairError, repair, reply_tokens, show, windows
from memvault.stages.chunk_segment import learned_boundaries, segment, valley_boundaries
from memvault.stages.context import StageContext
from memvault.stages.result import ModelStageResult
from memvault.stages.text import EMBED_CHARS, label

log = logging.getLogger(__name__)

SKIP_KINDS = {"meta"}


class ChunkResult(ModelStageResult):
    """What chunk did: conversations chunked, chunks made, conversations left for the next run."""

    omit_when_none: ClassVar[frozenset[str]] = frozenset({"prompt_hash", "model", "fallback", "fallbacks", "stopped"})
    conversations: int = 0
    chunks_new: int = 0
    waiting: int = 0
    # The model path only: its prompt's hash, conversations chunked by the model and by the fallback.
    prompt_hash: str | None = None
    model: int | None = None
    fallback: int | None = None
    fallbacks: list[dict[str, str]] | None = None
    stopped: str | None = None  # why the budget stopped the stage early


def exchanges(messages: list[MessageRow]) -> list[list[MessageRow]]:
    """Group messages into exchanges; low-value and meta messages are left out."""
    groups: list[list[MessageRow]] = []
    for m in messages:
        if m.low_value or m.kind in SKIP_KINDS or not strip_noise(m.text).strip():
            continue
        if m.role == "user" or not groups:
            groups.append([m])
        else:
            groups[-1].append(m)
    return groups


def render(messages: list[MessageRow]) -> str:
    # Agent-noise blocks (a reminder prepended to a prompt) stay in the ledger, not in chunks.
    return "\n".join(f"{m.role}: {strip_noise(m.text).strip()}" for m in messages)


def turns(group: list[MessageRow]) -> list[str]:
    """One exchange's message texts as the segmentation reads them: its user turn first ("" when it opens with a reply)."""
    texts = [strip_noise(m.text).strip() for m in group]
    return texts if group[0].role == "user" else ["", *texts]


def chunk_id(cid: str, message_ids: list[str]) -> str:
    return hashlib.sha256(f"{cid}\x1f{message_ids[0]}\x1f{message_ids[-1]}".encode()).hexdigest()[:32]


def plan_chunks(messages: list[MessageRow], embedder: Embedder, settings: ChunkSettings) -> list[tuple[list[MessageRow], np.ndarray]]:
    """The no-model segmentation of ``messages``: each chunk's messages and its unit centroid.

    Pure apart from the embedder; the stage and bench/chunk_quality.py both call it, so the
    benchmark scores exactly what the nightly run writes.
    """
    groups = exchanges(messages)
    if not groups:
        return []
    vectors = embedder.embed([render(g)[:EMBED_CHARS] for g in groups])
    if settings.boundary_method == "learned":
        cuts = learned_boundaries(vectors, [turns(g) for g in groups], settings.boundary_threshold)
    else:
        cuts = valley_boundaries(vectors, [g[0].text if g[0].role == "user" else "" for g in groups],
                                 settings.boundary_similarity, settings.boundary_depth)
    ranges = segment(vectors, [len(render(g)) for g in groups], cuts, settings.max_chunk_chars)
    out = []
    for start, end in ranges:
        centroid = vectors[start:end].mean(axis=0)
        out.append(([m for g in groups[start:end] for m in g], centroid / (np.linalg.norm(centroid) or 1.0)))
    return out


def chunk_conversation(ctx: StageContext, cid: str) -> int:
    """Chunk the not-yet-chunked tail of one conversation; returns the number of chunks."""
    done = ctx.ledger.chunked_message_ids(cid)
    fresh = [m for m in ctx.ledger.active_thread(cid) if m.native_id not in done]
    planned = plan_chunks(fresh, ctx.topics, ctx.settings.chunk)
    for msgs, centroid in planned:
        first_user = next((m.text for m in msgs if m.role == "user"), msgs[0].text)
        _save(ctx, cid, msgs, label(strip_noise(first_user)), centroid)
    return len(planned)


def _save(ctx: StageContext, cid: str, msgs: list[MessageRow], name: str, vector: np.ndarray) -> None:
    ids = [m.native_id for m in msgs]
    ctx.ledger.add_chunk(chunk_id(cid, ids), cid, ids, name, render(msgs), vector.astype(float).tolist(), ctx.run_id)


ModelChunks = tuple[list[tuple[list[MessageRow], str]] | None, str | None, list[str]]


def model_segments(engine: Engine, prompt: Prompt, settings: ChunkSettings, conv: ConversationRow,
                   fresh: list[MessageRow], charge: Callable[[list[Completion]], None]) -> ModelChunks:
    """Ask the model to segment ``fresh`` window by window; returns (chunks, why it failed, repair notes).

    ``charge`` is told each call's completions (the stage's budget). Ledger-free, so
    bench/chunk_quality.py scores the very parsing and repair the nightly run uses.
    """
    date = conv.date
    out: list[tuple[list[MessageRow], str]] = []
    notes: list[str] = []
    for window in windows(fresh, settings.prompt_chars):
        text = prompt.render(title=conv.title or "untitled", source=conv.source,
                             date=date.strftime("%Y-%m-%d") if date else "undated",
                             first_id="m1", last_id=f"m{len(window)}", messages=show(window))
        reply = structured(engine, prompt.system, text, ChunkReply, reply_tokens(len(window), settings.max_output_tokens),
                           cache_prefix=prompt.system)
        charge(reply.completions)
        if reply.value is None:
            return None, reply.reason, notes
        try:
            ranges, fixes = repair(reply.value.chunks, len(window), settings.repair_gap)
        except RepairError as exc:
            return None, f"unusable chunk ids: {exc}", notes
        notes += fixes
        out += [(window[a:b + 1], name) for a, b, name in ranges]
    return out, None, notes


def _label(ctx: StageContext, cid: str) -> str:
    """The conversation as log lines name it: short id and title."""
    row = ctx.ledger.conversation(cid)
    return conv_label(cid[:8], row.title if row else None)


def model_chunks(ctx: StageContext, cid: str, prompt: Prompt) -> ModelChunks:
    """Ask the model to segment the unchunked tail; returns (chunks, why it failed, repair notes)."""
    done = ctx.ledger.chunked_message_ids(cid)
    fresh = [m for g in exchanges([m for m in ctx.ledger.active_thread(cid) if m.native_id not in done]) for m in g]
    if not fresh:
        return [], None, []
    conv = ctx.ledger.conversation(cid)
    if conv is None:
        raise LookupError(f"conversation {cid} has messages but no row in the ledger")
    return model_segments(ctx.engine, prompt, ctx.settings.chunk, conv, fresh,
                          lambda completions: ctx.charge("chunk", completions))


def chunk_with_model(ctx: StageContext, cid: str, prompt: Prompt) -> tuple[int, str, str | None]:
    """Model path for one conversation; falls back to `chunk_conversation`. Returns (chunks, method, why)."""
    chunks, why, notes = model_chunks(ctx, cid, prompt)
    if chunks is None:
        log.warning("chunk %s: model output unusable (%s); no-model segmentation instead", _label(ctx, cid), why)
        n = chunk_conversation(ctx, cid)
        ctx.ledger.record_unit_result("chunk", cid, prompt.hash, "fallback", why, ctx.run_id)
        return n, "fallback", why
    if chunks:
        vectors = ctx.topics.embed([render(msgs)[:EMBED_CHARS] for msgs, _ in chunks])
        for (msgs, name), vector in zip(chunks, vectors):
            _save(ctx, cid, msgs, name or label(msgs[0].text), vector)
    ctx.ledger.record_unit_result("chunk", cid, prompt.hash, "model", "; ".join(notes) or None, ctx.run_id)
    return len(chunks), "model", None


def run_chunk(ctx: StageContext) -> ChunkResult:
    """Segment the conversations changed since `chunked_at` into topic chunks.

    Reads each conversation's active thread and the message ids already in a chunk; writes
    new chunks (message range, label, centroid), the per-conversation unit result (model path)
    and `chunked_at`. Unit of work: one conversation, budget-checked before and committed in
    one transaction; failpoint `chunk:<n>` fires after the n-th conversation.
    """
    todo = ctx.ledger.conversations_to_chunk(since=ctx.since)
    prompt = load_prompt("chunk", ctx.vault.meta_dir) if ctx.uses_model and todo else None
    made = done = 0
    methods = {"model": 0, "fallback": 0, "none": 0}
    fallbacks: list[dict[str, str]] = []
    stopped = None
    for cid in todo:
        stopped = ctx.out_of_budget()
        if stopped:
            break
        with ctx.ledger.transaction():
            if prompt is None:
                n, method, why = chunk_conversation(ctx, cid), "none", None
            else:
                n, method, why = chunk_with_model(ctx, cid, prompt)
            ctx.ledger.mark_chunked(cid)
        done += 1
        failpoint("chunk", done)
        made += n
        methods[method] += 1
        if method == "fallback":
            fallbacks.append({"conversation": cid[:12], "reason": why or ""})
        log.info("chunked %s into %d chunk(s) (%s)", _label(ctx, cid), n, method)
    ctx.units_done["chunk"] = done
    result = ChunkResult(conversations=done, chunks_new=made, waiting=len(todo) - done, stopped=stopped,
                         **ctx.stage_cost("chunk"))
    if prompt is not None:
        result.prompt_hash, result.fallbacks = prompt.hash, fallbacks
        result.model, result.fallback = methods["model"], methods["fallback"]
    return result

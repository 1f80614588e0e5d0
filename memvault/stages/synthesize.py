"""synthesize: per bucket, chunks not yet in `synthesized_bucket_chunks` → create or update
`articles/<Bucket>.md`, through the gate.

No-model path: extractive synthesis — the most informative sentences of each new chunk,
quoted verbatim (escaped so they render back unchanged, memvault.markdown.verbatim), become a
section headed by what the chunk is about and its date (memvault.naming.titles), citing its
conversation. Existing text (including a person's edits) is kept as is; new sections are
woven in before See also / References.

Model path (memvault.stages.synthesize_model): per bucket, batches of new chunks go to the model with
the article (or, for a large one, its outline and most relevant sections); its section-level
edits are applied deterministically, conflicts become dated notes on `Talk/<Bucket>.md`.
Both paths read the current file, so a person's edit is what new material is woven into.

The gate runs before any write. A rejected batch leaves the article untouched, its reasons go
to the run report and the Talk page. On the model path its chunks are retried next run — at
most `synthesize.max_attempts` times, then parked with the reason (unparked when the prompt
changes). On the no-model path the same input always gives the same article, so they are
parked at once with a hash of that input and unparked only when it changes.

Crash safety: the intent (bucket, chunks, hash of the new article) is journaled in the
ledger before the file is written; the next run turns an intent whose file matches into
`synthesized_bucket_chunks` rows and drops one whose file was never written, so no chunk is
synthesized twice and none is lost. Articles written but not committed by an interrupted run
are handed to wikify again, so the resumed run ends like an uninterrupted one.
Failpoint `synthesize:<n>` fires after the n-th article write.
"""

import hashlib
import logging
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from memvault.engines import structured
from memvault.failpoints import failpoint
from memvault.ids import short_ids
from memvault.prompts import Prompt, load_prompt
from memvault.markdown.gate import gate
from memvault.stages.context import StageContext
from memvault.stages.result import ModelStageResult
from memvault.stages.synthesize_model import SynthesisReply, apply_reply, article_view, material, talk_entry
from memvault.stages.synthesize_pages import write_conversation_pages
from memvault.stages.synthesize_extractive import citation, compose_article, date_of, extractive_input, no_model_reasons

log = logging.getLogger(__name__)


def synthesize_bucket(ctx: StageContext, bucket: str, chunk_ids: list[str], shorts: dict[str, str]) -> tuple[str, str | None, str]:
    """Build the new article text; returns (path key, previous text, new text)."""
    vault, ledger = ctx.vault, ctx.ledger
    path = vault.article_path(ledger.bucket_stem(bucket))
    previous = vault.read(path)
    chunks = ledger.chunks(chunk_ids)
    background = [c.text for c in chunks] + ledger.assigned_chunk_texts(200)
    anchors = write_conversation_pages(ctx, chunks, shorts)
    new = compose_article(previous, bucket, chunks, background, shorts, ctx.settings.synthesize.sentences_per_chunk,
                          ctx.topics, anchors, _stored_vectors(ctx, chunk_ids))
    return str(path), previous, new


def _stored_vectors(ctx: StageContext, chunk_ids: list[str]) -> np.ndarray | None:
    """The chunk stage's vectors of ``chunk_ids`` (unit length, one row each), when every chunk
    has one of the embedder's width: synthesis weighs phrases by them instead of embedding the
    chunks' texts again (a ninth of a no-model run's model tokens, bench/index_rate.py)."""
    stored = ctx.ledger.chunk_vectors(chunk_ids)
    rows = [stored.get(c) for c in chunk_ids]
    if not rows or any(r is None or len(r) != ctx.topics.dim for r in rows):
        return None
    matrix = np.asarray(rows, dtype=np.float32)
    unit: np.ndarray = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return unit


def resolve_intents(ctx: StageContext) -> int:
    """Finish the journal of an interrupted run (see the module docstring)."""
    done = 0
    for intent in ctx.ledger.intents():
        path = ctx.vault.article_path(ctx.ledger.bucket_stem(intent.bucket))
        current = ctx.vault.read(path)
        written = current is not None and hashlib.sha256(current.encode()).hexdigest() == intent.article_hash
        ctx.ledger.complete_intent(intent.bucket, written)
        done += written
    return done


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def article_states(ctx: StageContext, stems: list[str]) -> tuple[dict[str, str], list[str]]:
    """Articles an interrupted run wrote but never committed (stem → created/updated), and
    articles edited by hand since memvault last wrote them.

    Through git: a file that differs from HEAD is memvault's own when its hash is the one
    memvault last recorded for its bucket, else a person's edit; a clean file is a person's
    edit when the last commit touching it was not made by memvault's author.
    """
    vault = ctx.vault
    dirty = [p for p in vault.dirty_paths() if p.startswith("articles/") and p.endswith(".md")]
    untracked = vault.untracked_paths()
    ours = set(ctx.ledger.last_article_hashes().values())
    resumed: dict[str, str] = {}
    hand: list[str] = []
    for rel in dirty:
        path = vault.home / rel
        if not path.is_file():
            continue
        if _sha(path.read_text(encoding="utf-8")) in ours:
            resumed[path.stem] = "created" if rel in untracked else "updated"
        else:
            hand.append(path.stem)
    for stem in stems:
        rel = f"articles/{stem}.md"
        if stem in hand or stem in resumed or not (vault.home / rel).is_file():
            continue
        if vault.edited_by_hand(rel):
            hand.append(stem)
    return resumed, sorted(hand)


class SynthesizeResult(ModelStageResult):
    """What synthesize did: articles created, updated and rejected, chunks woven in."""

    omit_when_none: ClassVar[frozenset[str]] = frozenset({"prompt_hash", "unparked", "stopped"})
    buckets: int = 0
    created: int = 0
    updated: int = 0
    rejected: int = 0
    parked: int = 0  # chunks parked this run: at `synthesize.max_attempts`, or at once on the no-model path
    still_parked: int = 0  # no-model path: chunks parked before whose input has not changed (not retried)
    resumed: int = 0  # intents of an interrupted run completed
    chunks_synthesized: int = 0
    hand_edited: list[str] = []  # articles among this run's buckets a person edited since memvault wrote them
    # The prompt's hash (model path only), and the chunks unparked because the prompt (model
    # path) or their input (no-model path) changed.
    prompt_hash: str | None = None
    unparked: int | None = None
    stopped: str | None = None  # why the budget stopped the stage early


class Tally:
    """Counts of one synthesize pass; `written` drives the failpoint."""

    def __init__(self) -> None:
        self.created = self.updated = self.rejected = self.written = self.parked = 0
        self.stopped: str | None = None
        self.chunks_done = 0


def _wrote(ctx: StageContext, tally: Tally, stem: str, previous: str | None) -> None:
    tally.written += 1
    if previous is None:
        tally.created += 1
        ctx.touched_articles[stem] = "created"
    else:
        tally.updated += 1
        ctx.touched_articles.setdefault(stem, "updated")
    failpoint("synthesize", tally.written)


def reject(ctx: StageContext, tally: Tally, bucket: str, chunk_ids: list[str], reasons: list[str],
           prompt_hash: str | None, input_hash: str | None = None) -> None:
    """Leave the article as it is; reasons to the report and the Talk page; count the attempt.

    With ``input_hash`` (the no-model path, where the same input always gives the same
    article) the chunks are parked at once until that input changes; otherwise they are
    retried next run, at most `synthesize.max_attempts` times.
    """
    stem = ctx.ledger.bucket_stem(bucket)
    tally.rejected += 1
    ctx.rejected.setdefault(stem, []).extend(r for r in reasons if r not in ctx.rejected.get(stem, []))
    limit = ctx.settings.synthesize.max_attempts
    with ctx.ledger.transaction():
        for c in chunk_ids:
            unit = f"{bucket}/{c}"
            if input_hash is not None:
                ctx.ledger.park("synthesize", unit, "; ".join(reasons), input_hash)
                tally.parked += 1
            elif ctx.ledger.note_attempt("synthesize", unit, "; ".join(reasons), limit):
                tally.parked += 1
            ctx.ledger.record_unit_result("synthesize", unit, prompt_hash, "rejected", "; ".join(reasons), ctx.run_id)
    talk = ctx.vault.talk_path(ctx.ledger.bucket_stem(bucket))
    today = datetime.now().strftime("%Y-%m-%d")
    then = (f"parked: not retried until the article or this topic's material changes" if input_hash is not None
            else f"retried next run, at most {limit} times")
    lines = [f"New material from {len(chunk_ids)} chunk(s) was not integrated (the article is unchanged; {then}):",
             *reasons]
    ctx.vault.write(talk, talk_entry(ctx.vault.read(talk), bucket, ctx.run_id, today, "synthesis rejected", lines))
    ctx.talk_notes += 1
    log.warning("rejected %s: %s", stem, "; ".join(reasons))


def synthesize_with_model(ctx: StageContext, bucket: str, chunk_ids: list[str], shorts: dict[str, str],
                          cited_ids: set[str], prompt: Prompt, tally: Tally) -> None:
    """Integrate a bucket's new chunks, one batch (one model call, one article write) at a time.

    Long because a batch is one crash-safe sequence: ask, apply, gate, Talk notes, journal the
    intent, write, complete the intent, record the unit results, failpoint.
    """
    settings = ctx.settings.synthesize
    vault, ledger = ctx.vault, ctx.ledger
    stem = ledger.bucket_stem(bucket)
    path = vault.article_path(stem)
    description = next((b.description for b in ledger.buckets() if b.name == bucket), "") or "none"
    today = datetime.now().strftime("%Y-%m-%d")
    step = max(1, settings.chunks_per_call)
    for start in range(0, len(chunk_ids), step):
        tally.stopped = ctx.out_of_budget()
        if tally.stopped:
            return
        batch = chunk_ids[start:start + step]
        chunks = ledger.chunks(batch)
        previous = vault.read(path)
        anchors = write_conversation_pages(ctx, chunks, shorts)
        definitions: dict[str, str] = {}
        for row in chunks:
            definitions.setdefault(shorts[row.conversation_id], citation(row, shorts[row.conversation_id], anchors.get(row.id)))
        shown = material(chunks, shorts, settings.chunk_prompt_chars, {c.id: date_of(c.date) for c in chunks})
        view, state = article_view(previous, shown, settings.section_edit_words)
        lead_rule = ("- This is a new article: also write \"lead\", one or two paragraphs saying what the topic "
                     "is, with citations." if previous is None else
                     "- Leave \"lead\" empty: the article already has one.")
        text = prompt.render(title=bucket, description=description, article_state=state, article=view,
                             material=shown, ids=", ".join(sorted(definitions)), lead_rule=lead_rule)
        reply = structured(ctx.engine, prompt.system, text, SynthesisReply, settings.max_output_tokens,
                           cache_prefix=prompt.system)
        ctx.charge("synthesize", reply.completions)
        if reply.value is None:
            reject(ctx, tally, bucket, batch, [reply.reason or "invalid reply"], prompt.hash)
            continue
        new, problems, conflicts = apply_reply(previous, bucket, reply.value, definitions, today)
        reasons = problems + gate(new, previous, cited_ids)
        if reasons:
            reject(ctx, tally, bucket, batch, reasons, prompt.hash)
            continue
        if conflicts:
            talk = vault.talk_path(stem)
            vault.write(talk, talk_entry(vault.read(talk), bucket, ctx.run_id, today, "conflicts", conflicts))
            ctx.talk_notes += 1
        ledger.record_intent(bucket, batch, _sha(new), ctx.run_id)
        vault.write(path, new)
        ledger.complete_intent(bucket, True)
        with ledger.transaction():
            for c in batch:
                ledger.record_unit_result("synthesize", f"{bucket}/{c}", prompt.hash, "model", None, ctx.run_id)
        tally.chunks_done += len(batch)
        log.info("%s %s from %d chunk(s)", "created" if previous is None else "updated", stem, len(batch))
        _wrote(ctx, tally, stem, previous)


def synthesize_extractive(ctx: StageContext, bucket: str, chunk_ids: list[str], shorts: dict[str, str],
                          cited_ids: set[str], tally: Tally) -> None:
    """The no-model path for one bucket: one article write with every new chunk.

    A rejection here is deterministic, so the chunks are parked with a hash of their input
    and not retried until it changes (see `unpark_changed`).
    """
    path_key, previous, new = synthesize_bucket(ctx, bucket, chunk_ids, shorts)
    stem = ctx.ledger.bucket_stem(bucket)
    if new == (previous or ""):
        # Nothing extractable in these chunks: record them as done so they are not retried.
        ctx.ledger.record_intent(bucket, chunk_ids, _sha(new), ctx.run_id)
        ctx.ledger.complete_intent(bucket, True)
        return
    reasons = no_model_reasons(gate(new, previous, cited_ids))
    if reasons:
        reject(ctx, tally, bucket, chunk_ids, reasons, None, input_hash=extractive_input(previous, chunk_ids))
        return
    ctx.ledger.record_intent(bucket, chunk_ids, _sha(new), ctx.run_id)
    ctx.vault.write(Path(path_key), new)
    ctx.ledger.complete_intent(bucket, True)
    tally.chunks_done += len(chunk_ids)
    log.info("%s %s from %d chunk(s)", "created" if previous is None else "updated", stem, len(chunk_ids))
    _wrote(ctx, tally, stem, previous)


def unpark_changed(ctx: StageContext, pending: dict[str, list[str]]) -> tuple[int, int]:
    """No-model path: unpark a bucket's parked chunks whose input changed (new chunks in the
    bucket, an edit of its article, a newer composer) and add them to ``pending``.

    Returns (chunks unparked, chunks that stay parked).
    """
    unparked = kept = 0
    for bucket, parked in ctx.ledger.parked_by_bucket().items():
        ids = sorted(set(pending.get(bucket, [])) | set(parked))
        previous = ctx.vault.read(ctx.vault.article_path(ctx.ledger.bucket_stem(bucket)))
        current = extractive_input(previous, ids)
        changed = [c for c, (stored, _) in parked.items() if stored != current]
        if not changed:
            kept += len(parked)
            continue
        with ctx.ledger.transaction():
            ctx.ledger.unpark("synthesize", [f"{bucket}/{c}" for c in changed])
        # The parked chunks came first; the bucket's new ones (already in order) follow them.
        pending[bucket] = [c for c in changed if c not in pending.get(bucket, [])] + pending.get(bucket, [])
        unparked += len(changed)
        kept += len(parked) - len(changed)
        log.info("unparked %d chunk(s) of %s: their input changed", len(changed), bucket)
    return unparked, kept


def run_synthesize(ctx: StageContext) -> SynthesizeResult:
    """Weave each bucket's new chunks into `articles/<Bucket>.md`, through the gate.

    Reads the chunks per bucket not yet in `synthesized_bucket_chunks`, the current article
    (a person's edits included) and the intent journal; writes articles, Talk pages, intents,
    unit results and attempts. Unit of work: one article write (a model batch, or a bucket's
    extractive pass), journaled before the write; failpoint `synthesize:<n>` fires after the
    n-th write.
    """
    resumed = resolve_intents(ctx)
    prompt = load_prompt("synthesize", ctx.vault.meta_dir) if ctx.uses_model else None
    unparked = ctx.ledger.unpark_for_new_prompt("synthesize", prompt.hash) if prompt else None
    pending = ctx.ledger.pending_by_bucket(since=ctx.since)
    unparked_none, still_parked = unpark_changed(ctx, pending) if prompt is None else (0, 0)
    uncommitted, hand = article_states(ctx, [ctx.ledger.bucket_stem(b) for b in pending])
    for stem, kind in uncommitted.items():
        # An interrupted run wrote these and never committed them: wikify and commit them now.
        ctx.touched_articles.setdefault(stem, kind)
    shorts = short_ids(ctx.ledger.conversation_ids())
    cited_ids = set(shorts)  # what a citation may name: every conversation's short id
    tally = Tally()
    for bucket, chunk_ids in pending.items():
        if prompt is not None:
            synthesize_with_model(ctx, bucket, chunk_ids, shorts, cited_ids, prompt, tally)
        else:
            tally.stopped = ctx.out_of_budget()
            if not tally.stopped:
                synthesize_extractive(ctx, bucket, chunk_ids, shorts, cited_ids, tally)
        if tally.stopped:
            break
    ctx.units_done["synthesize"] = tally.chunks_done
    stems = {ctx.ledger.bucket_stem(b) for b in pending}
    return SynthesizeResult(buckets=len(pending), created=tally.created, updated=tally.updated,
                            rejected=tally.rejected, parked=tally.parked, resumed=resumed,
                            chunks_synthesized=tally.chunks_done, hand_edited=[s for s in hand if s in stems],
                            prompt_hash=prompt.hash if prompt else None,
                            unparked=unparked if prompt else unparked_none, still_parked=still_parked,
                            stopped=tally.stopped or None, **ctx.stage_cost("synthesize"))

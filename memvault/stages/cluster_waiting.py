"""cluster: nothing dropped silently — the chunks in no topic, each with its reason, on
`Meta/Waiting.md`, and counted in the run report (#25 item 9).

A chunk stays out of every article for one of these reasons:

* "too short": fewer than `LOW_CONTENT_WORDS` words of discussion (a greeting, a bare
  command, tool output) — it founds no topic and joins none it is not close to;
* "waiting for more": it says something, but no other chunk is like it yet and it is under
  `cluster.single_chunk_words` words on its own: a later conversation on the same topic
  places it. Another run without new material does not, so these chunks are not counted as
  backlog in `estimated_runs_to_finish` (memvault.ops.plan);
* "nearest topic full": the bucket it is closest to (above `cluster.assign_similarity`) holds
  `cluster.max_bucket_chunks` already; with the next chunk like it, it founds a closer-knit
  topic beside that one.

The page is derived: rewritten whole at the end of every cluster pass.
"""

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from memvault.ids import short_ids
from memvault.hygiene.noise import LOW_CONTENT_WORDS, discussion_words
from memvault.markdown.verbatim import escape
from memvault.stages.context import StageContext

if TYPE_CHECKING:
    from memvault.stages.cluster_centroid import ClusterPass

PAGE = "Waiting.md"
TOO_SHORT = "too short"
WAITING = "waiting for more"
TOPIC_FULL = "nearest topic full"


def waiting_reason(text: str, nearest_full: bool = False) -> str:
    """Why a chunk in no topic is there (see the module docstring)."""
    if discussion_words(text) < LOW_CONTENT_WORDS:
        return TOO_SHORT
    return TOPIC_FULL if nearest_full else WAITING


def write_waiting_page(ctx: StageContext, run: "ClusterPass | None" = None) -> dict[str, int]:
    """Rewrite Meta/Waiting.md from the ledger's unassigned chunks; returns counts per reason.
    ``run`` (the pass just made) tells which of them fit a bucket that is full, by its own rules."""
    ledger = ctx.ledger
    vectors = dict(ledger.unassigned_chunks())
    ids = list(vectors)
    full = set()
    if run is not None and ctx.settings.cluster.max_bucket_chunks > 0:
        for cid, v in vectors.items():
            best = run.choice(cid, np.asarray(v, dtype=np.float32))[0] if v is not None else None
            if best is not None and run.full(best):
                full.add(cid)
    shorts = short_ids(ledger.conversation_ids()) if ids else {}
    rows: dict[str, list[str]] = {TOO_SHORT: [], WAITING: [], TOPIC_FULL: []}
    for chunk in ledger.chunks(ids):
        reason = waiting_reason(chunk.text, chunk.id in full)
        label = " ".join((chunk.label or chunk.conversation_title or "untitled").split())[:80]
        when = chunk.date.strftime("%Y-%m-%d") if chunk.date else "undated"
        rows[reason].append(f"- `conv:{shorts.get(chunk.conversation_id, chunk.conversation_id[:8])}` "
                            f"({when}, {escape(chunk.source)}) — {escape(label)} "
                            f"({discussion_words(chunk.text)} words)")
    counts = Counter({reason: len(lines) for reason, lines in rows.items() if lines})
    words = ctx.settings.cluster.single_chunk_words
    text = ("# Waiting\n\nChunks of conversations that are in no article yet, and why. Written by memvault "
            "at every run: edits are overwritten.\n")
    explain = {TOO_SHORT: f"Fewer than {LOW_CONTENT_WORDS} words of discussion: nothing to found a topic on.",
               WAITING: f"No other chunk is like it yet, and under {words} words alone: a later conversation "
                        "on the same topic places it (another run without new material does not).",
               TOPIC_FULL: f"The topic it is closest to holds {ctx.settings.cluster.max_bucket_chunks} chunks already "
                           "(`cluster.max_bucket_chunks`): with the next chunk like it, it founds a closer-knit topic "
                           "beside that one."}
    for reason, lines in rows.items():
        if lines:
            text += f"\n## {reason[:1].upper() + reason[1:]} ({len(lines)})\n\n{explain[reason]}\n\n" + "\n".join(lines) + "\n"
    if not ids:
        text += "\nNone: every chunk is in an article.\n"
    ctx.vault.write(ctx.vault.meta_dir / PAGE, text)
    return dict(counts)

"""ingest stage: the Prefect task over `tasks/ingest_files.py` (the pure part, which see).

Discovery, watermarks, slices and batches live there so the live drainer and `memvault watch`
can use them without importing Prefect; the names below are re-exported for callers of the stage.
"""

from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from memvault.ids import conv_ref
from tasks.context import StageContext
from tasks.ingest_batches import IngestResult
from tasks.ingest_files import SUFFIXES, apply_topics, configured_roots, discover, ingest_file, prefix_hash, run_ingest

__all__ = ["SUFFIXES", "IngestResult", "apply_topics", "configured_roots", "discover", "drop_ignored_from_index",
           "ingest", "ingest_file", "prefix_hash", "run_ingest"]

def drop_ignored_from_index(ctx: StageContext, cids: list[str]) -> int:
    """Remove the index nodes of conversations that just became ignored (so recall skips them)."""
    nodes = ctx.nodes_for_deletes()
    indexed = [c for c in cids if nodes.doc_hashes(conv_ref(c))]
    ids = [i for c in indexed for i in nodes.doc_hashes(conv_ref(c))]
    if ids:
        nodes.delete(ids)
    ctx.ledger.clear_indexed(indexed)
    return len(ids)


@task(name="ingest", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def ingest(ctx: StageContext) -> dict[str, Any]:
    """Prefect task: ingest configured sources plus any ad hoc paths of this run."""
    from memvault.progress import current

    log = get_run_logger()
    roots = configured_roots(ctx.settings) + [("auto", p) for p in ctx.extra_paths]
    result = run_ingest(ctx.ledger, ctx.settings, roots, progress=current())
    ctx.conversations_ingested = result.conversations_new + result.conversations_updated
    for err in result.errors:
        log.warning("%s:%s: %s", err.file, err.line or "-", err.error)
    if result.newly_ignored:
        dropped = drop_ignored_from_index(ctx, result.newly_ignored)
        log.info("%d conversation(s) now ignored (Meta/Topics_to_Ignore.md); %d index node(s) removed",
                 len(result.newly_ignored), dropped)
    log.info("ingested %d file(s), %d changed, %d new message(s)", result.files_seen, result.files_changed,
             result.messages_new)
    return result.model_dump(mode="json")

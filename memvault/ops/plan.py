"""Run planning: what a run would process (the dry run) and what is left after one (the backlog).

Reads the ledger only; the dry run opens it read-only, which DuckDB allows only while no
writer holds it.
"""

from datetime import datetime
from pathlib import Path
from typing import Any

from memvault.runs.budget import estimate_calls, progress
from memvault.ops.admin_results import Backlog, DryRunPlan
from memvault.config.settings import Settings
from memvault.stages.ingest import configured_roots, discover
from stores.ledger import Ledger


def _scoped(ledger: Ledger, since: datetime | None) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """Conversations to chunk, unassigned chunk ids and pending chunks by bucket, within `since`."""
    todo = ledger.conversations_to_chunk(since=since)
    unassigned = [c for c, _ in ledger.unassigned_chunks(since=since)]
    pending = ledger.pending_by_bucket(since=since)
    return todo, unassigned, pending


def backlog(ledger: Ledger, since: datetime | None, units_done: dict[str, int],
            results: dict[str, dict[str, Any]]) -> Backlog:
    """What is left after this run, the rate this run achieved, and the runs still needed."""
    todo, unassigned, pending = _scoped(ledger, since)
    # Chunks a finished cluster pass left in no topic wait for new material, not for another
    # run (Meta/Waiting.md): counting them would promise runs that place nothing.
    cluster = results.get("cluster", {})
    settled = bool(cluster) and not cluster.get("stopped") and cluster.get("waiting_reasons") is not None
    left = {"chunk": len(todo), "cluster": 0 if settled else len(unassigned),
            "synthesize": sum(len(v) for v in pending.values())}
    seconds = {k: float(results.get(k, {}).get("seconds", 0.0)) for k in left}
    done = progress(left, {k: units_done.get(k, 0) for k in left}, seconds)
    return {"stages": done["stages"], "estimated_runs_to_finish": done["estimated_runs_to_finish"],
            "conversations_left": len(todo), "chunks_unassigned": len(unassigned),
            "chunks_waiting_for_material": len(unassigned) if settled else 0,
            "buckets_pending": len(pending), "chunks_pending": left["synthesize"]}


def dry_run_plan(settings: Settings, since: datetime | None, paths: list[Path], stages: list[str]) -> DryRunPlan:
    """What a run would process (the configured sources and ``paths``) and the model calls it
    would make; reads, never writes.

    Opens the ledger read-only, which DuckDB allows only while no writer holds it: while a
    run writes, :class:`~memvault.errors.LedgerBusy` names it.
    """
    files = discover(configured_roots(settings) + [("auto", p) for p in paths])[0]
    plan: DryRunPlan = {"dry_run": True, "stages": stages, "engine": settings.engine,
                        "since": since.isoformat() if since else None, "transcript_files_changed": len(files),
                        "conversations_to_chunk": 0, "chunks_to_cluster": 0, "buckets_to_synthesize": {},
                        "estimated_model_calls": estimate_calls(
                            engine=settings.engine, conversations=0, chunks_per_conversation=1.0, unassigned=0,
                            pending_by_bucket={}, cluster_batch=1, synth_batch=1)}
    if not settings.ledger_path.exists():
        return plan
    with Ledger.open(settings, read_only=True) as ledger:
        changed = 0
        for _, path in files:
            mark = ledger.watermark(str(path.resolve()))
            st = path.stat()
            changed += mark is None or mark.size != st.st_size or mark.mtime != st.st_mtime
        todo, unassigned, pending = _scoped(ledger, since)
        per_conv = ledger.chunks_per_conversation()
    sizes = {b: len(ids) for b, ids in pending.items()}
    calls = estimate_calls(engine=settings.engine, conversations=len(todo) if "chunk" in stages else 0,
                           chunks_per_conversation=per_conv if "cluster" in stages else 0.0,
                           unassigned=len(unassigned) if "cluster" in stages else 0,
                           pending_by_bucket=sizes if "synthesize" in stages else {},
                           cluster_batch=settings.cluster.batch_size, synth_batch=settings.synthesize.chunks_per_call)
    plan.update({"transcript_files_changed": changed, "transcript_files_seen": len(files),
                 "conversations_to_chunk": len(todo), "chunks_to_cluster": len(unassigned),
                 "buckets_to_synthesize": sizes, "estimated_model_calls": calls,
                 "note": "conversations in changed transcript files are not counted until ingested; "
                         "an invalid reply adds one retry call; `auto` counts as a model engine"})
    return plan

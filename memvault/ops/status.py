"""`memvault status`: counts and the last run, without waiting on a writer.

DuckDB refuses every other process while a run holds the ledger, so when the ledger stays
busy past a short retry (``Ledger.open``), status answers from the last run report and says
who is writing.
"""

from memvault.errors import LedgerBusy
from memvault.ops.admin_results import LastRun, NextRun, ScheduleState, Status
from memvault.ops.home import permission_warnings, require_home
from memvault.config.settings import Settings, default_embeddings


def gather_status(settings: Settings) -> Status:
    """What `memvault status` shows; counts from the last run report while a writer holds the ledger."""
    from memvault.live import hookd_client
    from memvault.runs.reports import latest_report
    from stores.ledger import Ledger
    from stores.nodes import NodeIndex, embedding_model
    from memvault.embeddings.base import INT8_NAME
    from memvault.embeddings.select import topics_apart
    from stores.rows import LedgerCounts
    from stores.vault import Vault

    require_home(settings.home)
    articles = len(Vault(settings.home).list_articles())
    counts, last_run, note = LedgerCounts(0, 0, 0, 0), None, None
    busy: LedgerBusy | None = None
    indexed: list[str] | None = None
    if settings.ledger_path.exists():
        try:
            with Ledger.open(settings, read_only=True) as ledger:
                counts = ledger.counts()
                last = ledger.last_run()
                last_run = LastRun(run_id=last.run_id, status=last.status, finished_at=last.finished_at) if last else None
                indexed = ledger.indexed_conversation_ids()
        except LedgerBusy as exc:
            busy = exc
    if indexed is None:  # no ledger yet, or a writer holds it: the last run report says what it can
        report = latest_report(settings.runs_dir)
        if report:
            last_run = LastRun(run_id=report["run_id"], status=report["status"], finished_at=report.get("finished_at"))
        if busy is not None:
            who = busy.holder or {}
            note = (f"another memvault process (pid {who.get('pid', '?')}, {who.get('command', '?')}) "
                    "is writing; counts come from the last run report")
    index = NodeIndex.inspect(settings)
    warnings = _index_agreement(settings, indexed) if indexed is not None else []
    warnings += permission_warnings(settings.home)
    configured = embedding_model(settings)[0]
    if index.model and index.model != configured:
        warnings.append(
            f"the node index was built by `{index.model}`, but the settings name `{configured}`: recall answers from "
            "the old index (full text only unless its embedder is a bundled one) and `memvault run` leaves the index "
            "as it is — run `memvault reindex` to re-embed into a new index (the old one serves until it is done)")
    if settings.embeddings.kept_from_index:
        warnings.append(
            f"the node index was built by `{configured}` before `{default_embeddings(settings).embeddings.model}` became "
            "the default; this home keeps it (memvault.toml names no model) — `memvault reindex` moves it to the "
            "default (about 1.6× less CPU per text when indexing; the old index serves until it is done)")
    engine_in_use, schedule, next_run = _operations(settings)
    status: Status = {
        "home": str(settings.home), "engine": settings.engine, "conversations": counts.conversations,
        "messages": counts.messages, "chunks": counts.chunks, "buckets": counts.buckets, "articles": articles,
        "nodes": index.nodes, "last_run": last_run, "warnings": warnings, "engine_in_use": engine_in_use,
        "index_uri": index.uri, "index_bytes": index.bytes, "embedding_model": index.model, "schedule": schedule,
        "next_run": next_run, "configured_embedding_model": configured,
        "topics_embedding_model": INT8_NAME if topics_apart(settings) else configured,
        "hook_daemon": hookd_client.status(settings.home)}
    if note is not None:
        status["note"] = note
    return status


def _index_agreement(settings: Settings, indexed: list[str]) -> list[str]:
    """A warning when the node index lacks conversations the ledger marks indexed."""
    from memvault.errors import IndexMismatchError
    from memvault.ids import conv_ref
    from stores.nodes import NodeIndex

    try:  # what the live index holds, whichever embedder built it
        docs = NodeIndex.open_stored(settings).docs() if NodeIndex.exists(settings) else {}
    except (IndexMismatchError, ValueError, OSError):
        docs = {}
    missing = [cid for cid in indexed if conv_ref(cid) not in docs]
    if not missing:
        return []
    return [f"the node index lacks {len(missing)} of the {len(indexed)} conversation(s) the ledger marks indexed "
            "(recall cannot find them) — `memvault run` rebuilds them (or `memvault reindex` rebuilds the whole index)"]


def _operations(settings: Settings) -> tuple[str | None, ScheduleState, NextRun | None]:
    """The engine of the last run, the schedule's state, and the next run (issue 7)."""
    import os

    from memvault.ops.schedule import next_scheduled_run, schedule_state
    from memvault.runs.reports import latest_report

    report = latest_report(settings.runs_dir)
    # Only a server the user runs is asked; without PREFECT_API_URL Prefect would start a
    # temporary one, which status must never do.
    api_url = os.environ.get("PREFECT_API_URL")
    return (report.get("engine") if report else None, schedule_state(settings),
            next_scheduled_run(api_url) if api_url else None)

"""`memvault status`: counts and the last run, without waiting on a writer.

DuckDB refuses every other process while a run holds the ledger, so when the ledger stays
busy past a short retry (``Ledger.open``), status answers from the last run report and says
who is writing.
"""

from dataclasses import asdict
from typing import Any

from memvault.errors import LedgerBusy
from memvault.ops.home import permission_warnings, require_home
from memvault.settings import Settings


def gather_status(settings: Settings) -> dict[str, Any]:
    from memvault.reports import latest_report
    from stores.ledger import Ledger
    from stores.nodes import NodeIndex
    from stores.vault import Vault

    require_home(settings.home)
    data: dict[str, Any] = {"home": str(settings.home), "engine": settings.engine,
                            "conversations": None, "messages": None, "chunks": None, "buckets": None,
                            "articles": len(Vault(settings.home).list_articles()), "nodes": 0, "last_run": None}
    busy: LedgerBusy | None = None
    indexed: list[str] | None = None
    if settings.ledger_path.exists():
        try:
            with Ledger.open(settings, read_only=True) as ledger:
                data.update(asdict(ledger.counts()))
                last = ledger.last_run()
                data["last_run"] = asdict(last) if last else None
                indexed = ledger.indexed_conversation_ids()
        except LedgerBusy as exc:
            busy = exc
    if data["conversations"] is None:
        report = latest_report(settings.runs_dir)
        if report:
            data["last_run"] = {"run_id": report["run_id"], "status": report["status"],
                                "finished_at": report.get("finished_at")}
        if busy is not None:
            who = busy.holder or {}
            data["note"] = (f"another memvault process (pid {who.get('pid', '?')}, {who.get('command', '?')}) "
                            "is writing; counts come from the last run report")
        data.update({k: 0 for k in ("conversations", "messages", "chunks", "buckets")})
    from stores.nodes import embedding_model

    index = NodeIndex.inspect(settings)
    data["nodes"] = index.nodes
    data["warnings"] = _index_agreement(settings, indexed) if indexed is not None else []
    data["warnings"] += permission_warnings(settings.home)
    data.update(_operations(settings, index.uri, index.bytes, index.model))
    configured = embedding_model(settings)[0]
    data["configured_embedding_model"] = configured
    if index.model and index.model != configured:
        data["warnings"].append(
            f"the node index was built by `{index.model}`, but the settings name `{configured}`: recall answers from "
            "the old index (full text only unless its embedder is a bundled one) and `memvault run` leaves the index "
            "as it is — run `memvault reindex` to re-embed into a new index (the old one serves until it is done)")
    from memvault import hookd_client

    data["hook_daemon"] = hookd_client.status(settings.home)
    return data


def _index_agreement(settings: Settings, indexed: list[str]) -> list[str]:
    """A warning when the node index lacks conversations the ledger marks indexed."""
    from memvault.errors import IndexMismatchError
    from memvault.ids import conv_ref
    from stores.nodes import NodeIndex

    try:
        docs = NodeIndex.open_existing(settings).docs() if NodeIndex.exists(settings) else {}
    except (IndexMismatchError, ValueError, OSError):
        docs = {}
    missing = [cid for cid in indexed if conv_ref(cid) not in docs]
    if not missing:
        return []
    return [f"the node index lacks {len(missing)} of the {len(indexed)} conversation(s) the ledger marks indexed "
            "(recall cannot find them) — `memvault run` rebuilds them (or `memvault reindex` rebuilds the whole index)"]


def _operations(settings: Settings, uri: str, size: int | None, model: str | None) -> dict[str, Any]:
    """Engine in use, index size and model, schedule state, and the next run (issue 7)."""
    import os

    from memvault.ops.schedule import next_scheduled_run, schedule_state
    from memvault.reports import latest_report

    report = latest_report(settings.runs_dir)
    out: dict[str, Any] = {
        "engine_in_use": report.get("engine") if report else None,
        "index_uri": uri,
        "index_bytes": size,
        "embedding_model": model,
        "schedule": schedule_state(settings),
        "next_run": None,
    }
    # Only a server the user runs is asked; without PREFECT_API_URL Prefect would start a
    # temporary one, which status must never do.
    api_url = os.environ.get("PREFECT_API_URL")
    if api_url:
        out["next_run"] = next_scheduled_run(api_url)
    return out

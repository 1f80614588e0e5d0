"""`memvault status`: counts and the last run, without ever blocking on a writer.

DuckDB refuses every other process while a run holds the ledger, so when the ledger is busy
status answers from the last run report and says so.
"""

from typing import Any

import duckdb

from memvault.ops.home import require_home
from memvault.lock import holder
from memvault.settings import Settings


def gather_status(settings: Settings) -> dict[str, Any]:
    from stores.ledger import Ledger
    from stores.vault import Vault
    from memvault.reports import latest_report

    require_home(settings.home)
    data: dict[str, Any] = {"home": str(settings.home), "engine": settings.engine,
                            "conversations": None, "messages": None, "chunks": None, "buckets": None,
                            "articles": len(Vault(settings.home).list_articles()), "nodes": 0, "last_run": None}
    busy = holder(settings.state_dir)
    ledger = None
    if not busy and settings.ledger_path.exists():
        try:
            ledger = Ledger(settings.ledger_path, read_only=True)
        except duckdb.IOException:
            busy = busy or {"pid": "?"}
    indexed: list[str] | None = None
    if ledger is not None:
        try:
            data.update(ledger.counts())
            data["last_run"] = ledger.last_run()
            indexed = ledger.indexed_conversation_ids()
        finally:
            ledger.close()
    else:
        report = latest_report(settings.runs_dir)
        if report:
            data["last_run"] = {"run_id": report["run_id"], "status": report["status"],
                                "finished_at": report.get("finished_at")}
        if busy:
            data["note"] = (f"another memvault process (pid {busy.get('pid', '?')}, {busy.get('command', '?')}) "
                            "is writing; counts come from the last run report")
    if data["conversations"] is None:
        data.update({k: 0 for k in ("conversations", "messages", "chunks", "buckets")})
    data["nodes"] = _node_count(settings)
    data["warnings"] = _index_agreement(settings, indexed) if indexed is not None else []
    data.update(_operations(settings, data))
    return data


def _index_agreement(settings: Settings, indexed: list[str]) -> list[str]:
    """A warning when the node index lacks conversations the ledger marks indexed."""
    from memvault.embeddings import DIM, MODEL_NAME
    from memvault.errors import IndexMismatchError
    from stores.nodes import NodeIndex

    try:
        docs = NodeIndex(settings.index_uri, MODEL_NAME, DIM, create=False).docs()
    except (IndexMismatchError, ValueError, OSError):
        docs = {}
    missing = [cid for cid in indexed if f"conv:{cid}" not in docs]
    if not missing:
        return []
    return [f"the node index lacks {len(missing)} of the {len(indexed)} conversation(s) the ledger marks indexed "
            "(recall cannot find them) — `memvault run` rebuilds them (or `memvault reindex` rebuilds the whole index)"]


def _operations(settings: Settings, data: dict[str, Any]) -> dict[str, Any]:
    """Engine in use, index size and model, schedule state, and the next run (issue 7)."""
    import os

    from memvault.reports import latest_report
    from memvault.ops.schedule import next_scheduled_run, schedule_state

    report = latest_report(settings.runs_dir)
    out: dict[str, Any] = {
        "engine_in_use": report.get("engine") if report else None,
        "index_uri": settings.index_uri,
        "index_bytes": _index_bytes(settings.index_uri),
        "embedding_model": _index_model(settings),
        "schedule": schedule_state(settings),
        "next_run": None,
    }
    # Only a server the user runs is asked; without PREFECT_API_URL Prefect would start a
    # temporary one, which status must never do.
    api_url = os.environ.get("PREFECT_API_URL")
    if api_url:
        out["next_run"] = next_scheduled_run(api_url)
    return out


def _index_bytes(uri: str) -> int | None:
    """Bytes on disk of a local index; None for object storage (not measured)."""
    from pathlib import Path

    if "://" in uri:
        return None
    root = Path(uri)
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0


def _index_model(settings: Settings) -> str | None:
    from memvault.embeddings import DIM, MODEL_NAME
    from memvault.errors import IndexMismatchError
    from stores.nodes import NodeIndex

    try:
        return NodeIndex(settings.index_uri, MODEL_NAME, DIM, create=False).stored_model()
    except IndexMismatchError as exc:
        # The index holds another model's vectors: say which (the message names it).
        return str(exc).split("`")[1] if "holds vectors of `" in str(exc) else None
    except (ValueError, OSError):
        return None


def _node_count(settings: Settings) -> int:
    from memvault.embeddings import DIM, MODEL_NAME
    from memvault.errors import IndexMismatchError
    from stores.nodes import NodeIndex

    try:
        return NodeIndex(settings.index_uri, MODEL_NAME, DIM, create=False).count()
    except (IndexMismatchError, ValueError, OSError):
        return 0

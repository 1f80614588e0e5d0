"""A hub client's reads and notes: `recall`, `search`, `note` and `prompt-recall` ask the hub.

A home whose settings have ``hub.url`` keeps no memory of its own to search: these commands
send their question to the hub's ``/v1/`` routes and print its answer as they print a local
one. A note made while the hub cannot be reached is spooled (``hub-note``) and sent by the
next `memvault drain` or capture.
"""

import os
from pathlib import Path
from typing import Any

from memvault import spool
from memvault.errors import ConfigError
from memvault.hub_push import Hub
from memvault.hub_wire import HubError
from memvault.settings import Settings


def hub_of(settings: Settings) -> Hub | None:
    """The hub this home is a client of, or None."""
    h = settings.hub
    if not h.url:
        return None
    if not h.token_file:
        raise ConfigError(f"[hub] in {settings.home / 'memvault.toml'} has a url but no token_file — rerun "
                          "`memvault agent-setup … --hub URL --token-file FILE`")
    return Hub(settings.home, {"url": h.url, "token_file": h.token_file, "machine": h.machine,
                               "insecure": h.insecure, "timeout_s": h.timeout_s})


def _scope(project: str | None, source: str | None, since: str | None, until: str | None) -> dict[str, Any]:
    return {k: v for k, v in (("project", project), ("source", source), ("since", since), ("until", until)) if v}


def recall(hub: Hub, query: str, max_nodes: int | None = None, max_chars: int | None = None,
           project: str | None = None, source: str | None = None, since: str | None = None,
           until: str | None = None) -> dict[str, Any]:
    """The hub's recall for ``query`` (the same shape as `MemoryService.recall`)."""
    return hub.post("/v1/recall", {"query": query, "max_nodes": max_nodes, "max_chars": max_chars,
                                   "cwd": os.getcwd(), **_scope(project, source, since, until)})


def search(hub: Hub, query: str, limit: int = 10, project: str | None = None, source: str | None = None,
           since: str | None = None, until: str | None = None) -> list[dict[str, Any]]:
    """The hub's search hits for ``query``."""
    answer = hub.post("/v1/search", {"query": query, "limit": limit, "cwd": os.getcwd(),
                                     **_scope(project, source, since, until)})
    hits = answer.get("hits")
    if not isinstance(hits, list):
        raise HubError(f"the hub answered a search without hits ({str(answer)[:80]})", True)
    return hits


def note(hub: Hub, home: Path, text: str, title: str | None = None, project: str | None = None) -> dict[str, Any]:
    """Store a note on the hub; spooled here (``queued``) when the hub cannot be reached."""
    try:
        return hub.post("/v1/note", {"text": text, "title": title, "project": project})
    except HubError as exc:
        if exc.reachable:
            raise
        spool.append(home / ".memvault", {"op": "hub-note", "text": text, "title": title, "project": project})
        spool.log_line(home / ".memvault", f"note: {exc}; spooled for the hub (`memvault drain` sends it)")
        return {"queued": True, "cite": None, "note": f"the hub is unreachable; spooled ({exc})"}

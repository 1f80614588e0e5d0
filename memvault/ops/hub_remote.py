"""A hub client's reads and notes: `recall`, `search`, `note` and `prompt-recall` ask the hub.

A home whose settings have ``hub.url`` keeps no memory of its own to search: these commands
send their question to the hub's ``/v1/`` routes and print its answer as they print a local
one. A note made while the hub cannot be reached is spooled (``hub-note``) and sent by the
next `memvault drain` or capture.

`HubMemory` is the same for the MCP server: it answers the calls the server makes on a
`MemoryService` (recall, search, timeline, get, the article tools) from the hub's routes.
"""

import os
from pathlib import Path
from typing import Any

from memvault.live import spool
from memvault.errors import ConfigError
from memvault.live.hub_push import Hub
from memvault.live.hub_wire import HubError
from memvault.ops.results import (Article, ArticleLinks, ArticleSummary, Node, NoteResult, Recall, SearchHit,
                                   SearchResult, Section, TimelineNode, TocEntry, parse)
from memvault.recall.scope import Scope
from memvault.config.settings import Settings


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


def _scope(project: str | None, source: str | None, since: str | None, until: str | None) -> dict[str, str]:
    return {k: v for k, v in (("project", project), ("source", source), ("since", since), ("until", until)) if v}


def recall(hub: Hub, query: str, max_nodes: int | None = None, max_chars: int | None = None,
           project: str | None = None, source: str | None = None, since: str | None = None,
           until: str | None = None) -> Recall:
    """The hub's recall for ``query`` (the same shape as `MemoryService.recall`)."""
    return parse(Recall, hub.post("/v1/recall", {"query": query, "max_nodes": max_nodes, "max_chars": max_chars,
                                                 "cwd": os.getcwd(), **_scope(project, source, since, until)}), "recall")


def search(hub: Hub, query: str, limit: int = 10, project: str | None = None, source: str | None = None,
           since: str | None = None, until: str | None = None) -> list[SearchHit]:
    """The hub's search hits for ``query``."""
    return parse(SearchResult, hub.post("/v1/search", {"query": query, "limit": limit, "cwd": os.getcwd(),
                                                       **_scope(project, source, since, until)}), "search")["hits"]


def note(hub: Hub, home: Path, text: str, title: str | None = None, project: str | None = None) -> NoteResult:
    """Store a note on the hub; spooled here (``queued``) when the hub cannot be reached."""
    try:
        return parse(NoteResult, hub.post("/v1/note", {"text": text, "title": title, "project": project}), "note")
    except HubError as exc:
        if exc.reachable:
            raise
        spool.append(home / ".memvault", {"op": "hub-note", "text": text, "title": title, "project": project})
        spool.log_line(home / ".memvault", f"note: {exc}; spooled for the hub (`memvault drain` sends it)")
        return {"queued": True, "cite": None, "note": f"the hub is unreachable; spooled ({exc})"}


class HubMemory:
    """A client home's memory, read from its hub: `MemoryService`'s read methods, same results.

    Each method posts to the hub's ``/v1/`` route that makes the same call on the hub's own
    service, so the MCP server shapes a hub answer exactly as a local one. A hub error
    (``HubError``: unreachable, 401, 404 for an unknown article) carries the hub's message.
    """

    def __init__(self, settings: Settings, hub: Hub) -> None:
        self.settings, self.hub = settings, hub

    def recall(self, query: str, max_nodes: int | None = None, max_chars: int | None = None,
               scope: Scope = Scope(), cwd: str | None = None) -> Recall:
        return parse(Recall, self.hub.post("/v1/recall", {"query": query, "max_nodes": max_nodes, "max_chars": max_chars,
                                                          "cwd": cwd, **_scope_fields(scope)}), "recall")

    def search(self, query: str, limit: int = 10, scope: Scope = Scope(), cwd: str | None = None) -> list[SearchHit]:
        return parse(SearchResult, self.hub.post("/v1/search", {"query": query, "limit": limit, "cwd": cwd,
                                                                **_scope_fields(scope)}), "search")["hits"]

    def timeline(self, node_id: str, before: int = 3, after: int = 3) -> list[TimelineNode]:
        answer = self.hub.post("/v1/timeline", {"id": node_id, "before": before, "after": after})
        return parse(list[TimelineNode], _listed(answer, "nodes"), "timeline")

    def get(self, ids: list[str]) -> list[Node]:
        return parse(list[Node], _listed(self.hub.post("/v1/get", {"ids": ids}), "nodes"), "nodes")

    def list_articles(self) -> list[ArticleSummary]:
        return parse(list[ArticleSummary], _listed(self.hub.get("/v1/articles"), "articles"), "article list")

    def read_article(self, name: str) -> Article:
        return parse(Article, self.hub.post("/v1/article", {"title": name}), "article")

    def read_section(self, name: str, section: str) -> Section:
        return parse(Section, self.hub.post("/v1/article-section", {"title": name, "section": section}), "section")

    def article_toc(self, name: str) -> list[TocEntry]:
        answer = self.hub.post("/v1/article-toc", {"title": name})
        return parse(list[TocEntry], _listed(answer, "sections"), "table of contents")

    def article_links(self, name: str) -> ArticleLinks:
        return parse(ArticleLinks, self.hub.post("/v1/article-links", {"title": name}), "article links")

    def note(self, text: str, title: str | None = None, project: str | None = None) -> NoteResult:
        """A note stored on the hub (spooled here when it cannot be reached)."""
        return note(self.hub, self.settings.home, text, title=title, project=project)


def _scope_fields(scope: Scope) -> dict[str, str | None]:
    # ISO times: the hub's `Scope.of` reads them back as the same bounds (a whole-day --until included).
    return {"project": scope.project, "source": scope.source,
            "since": scope.since.isoformat() if scope.since else None,
            "until": scope.until.isoformat() if scope.until else None}


def _listed(answer: dict[str, Any], key: str) -> list[object]:
    rows = answer.get(key)
    if not isinstance(rows, list):
        raise HubError(f"the hub answered without {key} ({str(answer)[:80]}) — is it an older memvault?", True)
    return rows

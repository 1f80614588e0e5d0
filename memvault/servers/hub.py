"""The hub's API, versioned under ``/v1/`` (JSON in and out).

`memvault serve --token-file FILE` makes a machine the hub of a person's memory: the laptops
and agents send their transcripts (`POST /v1/capture`) and notes (`POST /v1/note`) and ask
it (`POST /v1/recall`, `/v1/search`, `/v1/prompt-recall`, `GET /v1/status`, and for a client's MCP server
`/v1/timeline`, `/v1/get`, `GET /v1/articles`, `/v1/article`, `/v1/article-section`,
`/v1/article-toc`, `/v1/article-links`). The hub stays
the single writer of its home: a capture only stores bytes and spools the file
(`memvault.ops.hub_inbox`); the server's live drainer ingests and indexes it. The write routes
exist only when the server has a token.
"""

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from memvault.live import spool
from memvault.errors import MemvaultError, UsageError
from memvault.ops.admin_results import HubStatus
from memvault.ops.results import (CaptureStored, Node, NoteResult, PromptRecallAnswer, Recall, SearchResult, Section,
                                   TimelineNode)
from memvault.servers import SharedService
from memvault.servers.responses import error_response
from memvault.config.settings import Settings

API_VERSION = 1
JSON_CAP = 1024 * 1024  # the read routes and a note: a query or a note is small


async def read_json(request: Request, cap: int) -> Any:
    """The request's JSON body; ``_TooLarge`` past ``cap`` bytes (declared or read)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise _TooLarge(cap)
    body = bytearray()
    async for part in request.stream():
        body.extend(part)
        if len(body) > cap:
            raise _TooLarge(cap)
    try:
        return json.loads(bytes(body).decode("utf-8")) if body else {}
    except (UnicodeDecodeError, ValueError):
        raise UsageError("the request body is not JSON (UTF-8)") from None


class _TooLarge(Exception):
    def __init__(self, cap: int) -> None:
        super().__init__(cap)
        self.cap = cap


def _field(body: Any, name: str, kind: type, default: Any = None, required: bool = False) -> Any:
    if not isinstance(body, dict):
        raise UsageError("the request body must be a JSON object")
    value = body.get(name, default)
    if value is None and not required:
        return default
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise UsageError(f"field {name} must be a {kind.__name__}" + (" (required)" if required else ""))
    return value


def _query(body: Any) -> str:
    query = str(_field(body, "query", str, required=True)).strip()
    if not query:
        raise UsageError("field query is empty")
    return query


def _scope(body: Any) -> Any:
    from memvault.recall.scope import Scope

    return Scope.of(*(_field(body, k, str) for k in ("project", "source", "since", "until")))


def hub_routes(shared: SharedService, write: bool) -> list[Route]:
    """The ``/v1/`` routes; ``write`` adds capture and note (only for a server with a token)."""
    settings = shared.service.settings
    cap = settings.hub.max_capture_bytes

    def recall(body: Any) -> Recall:
        return shared.call(lambda s: s.recall(_query(body), max_nodes=_field(body, "max_nodes", int),
                                              max_chars=_field(body, "max_chars", int), scope=_scope(body),
                                              cwd=_field(body, "cwd", str)))

    def search(body: Any) -> SearchResult:
        limit = _field(body, "limit", int, 10)
        if not 1 <= limit <= 100:
            raise UsageError("field limit must be 1..100")
        query = _query(body)
        return {"query": query, "hits": shared.call(lambda s: s.search(query, limit, scope=_scope(body),
                                                                        cwd=_field(body, "cwd", str)))}

    def prompt(body: Any) -> PromptRecallAnswer:
        from memvault.ops.prompt_recall import prompt_block

        text = _field(body, "prompt", str, "")
        return shared.call(lambda s: prompt_block(s, text, _field(body, "cwd", str), _field(body, "session_id", str)))

    def status(body: Any) -> HubStatus:
        return _status(settings, write)

    def brief(body: Any) -> Any:
        from memvault.ops.agent_setup import index_brief

        return {"block": shared.call(lambda s: index_brief(s.settings.home))}

    routes = [_route("/v1/recall", "POST", recall), _route("/v1/search", "POST", search),
              *reader_routes(shared, _route), _route("/v1/index-brief", "GET", brief),
              _route("/v1/prompt-recall", "POST", prompt), _route("/v1/status", "GET", status)]
    if write:
        routes += [_route("/v1/capture", "POST", lambda body: capture(shared, body), limit=cap),
                   _route("/v1/note", "POST", lambda body: note(shared, body))]
    return routes


def _route(path: str, method: str, work: Callable[[Any], Any], limit: int = JSON_CAP) -> Route:
    """A route that runs ``work`` on the request's JSON body in a thread; errors as JSON."""
    async def handle(request: Request) -> JSONResponse:
        try:
            body = await read_json(request, limit) if method == "POST" else {}
            return JSONResponse(await run_in_threadpool(work, body))
        except _TooLarge as exc:
            return JSONResponse({"error": f"the request is larger than this hub's cap of {exc.cap} bytes — send "
                                          "the transcript in smaller parts (the client does by itself)",
                                 "type": "TooLarge", "max_bytes": exc.cap}, status_code=413)
        except _Conflict as exc:
            return JSONResponse({"error": str(exc), "type": "Conflict", "have": exc.have}, status_code=409)
        except MemvaultError as exc:
            return error_response(exc)

    handler: Callable[[Request], Awaitable[JSONResponse]] = handle
    return Route(path, handler, methods=[method])


def _status(settings: Settings, write: bool) -> HubStatus:
    """``/v1/status``: the hub's API version, clock, home, spool and drainer, and its machines."""
    from memvault.ops.hub_inbox import machines_summary

    state = settings.state_dir
    return {"api": API_VERSION, "time": time.time(), "home": str(settings.home), "write": write,
            "max_capture_bytes": settings.hub.max_capture_bytes, "spool": spool.pending(state),
            "drainer": "serve" if spool.serve_info(state) else ("running" if spool.drainer_running(state) else "idle"),
            **machines_summary(settings.home)}


def reader_routes(shared: SharedService, route: Callable[..., Route]) -> list[Route]:
    """The MCP server's digging tools for a client (`timeline`, `get`, the article tools): the
    same `MemoryService` calls the local server makes, their results as they come."""

    def title(body: Any) -> str:
        return str(_field(body, "title", str, required=True))

    def around(body: Any) -> dict[str, list[TimelineNode]]:
        node, before, after = _field(body, "id", str, required=True), _field(body, "before", int, 3), _field(body, "after", int, 3)
        if not (0 <= before <= 50 and 0 <= after <= 50):
            raise UsageError("fields before and after must be 0..50")
        return {"nodes": shared.call(lambda s: s.timeline(node, before, after))}

    def get(body: Any) -> dict[str, list[Node]]:
        ids = _field(body, "ids", list, required=True)
        if not ids or len(ids) > 100 or not all(isinstance(i, str) for i in ids):
            raise UsageError("field ids must be a list of 1..100 node ids (strings)")
        # The vector is the index's business, not an agent's (the local MCP tool drops it too).
        rows = shared.call(lambda s: s.get(ids))
        return {"nodes": [cast(Node, {k: v for k, v in r.items() if k != "vector"}) for r in rows]}

    def section(body: Any) -> Section:
        name, part = title(body), _field(body, "section", str, required=True)
        return shared.call(lambda s: s.read_section(name, part))

    return [route("/v1/timeline", "POST", around), route("/v1/get", "POST", get),
            route("/v1/articles", "GET", lambda body: {"articles": shared.call(lambda s: s.list_articles())}),
            route("/v1/article", "POST", lambda body: shared.call(lambda s: s.read_article(title(body)))),
            route("/v1/article-section", "POST", section),
            route("/v1/article-toc", "POST", lambda body: {"sections": shared.call(lambda s: s.article_toc(title(body)))}),
            route("/v1/article-links", "POST", lambda body: shared.call(lambda s: s.article_links(title(body))))]


def capture(shared: SharedService, body: Any) -> CaptureStored:
    """Store a capture's new bytes (``CaptureConflict`` → 409 with what the hub holds)."""
    from memvault.ops.hub_inbox import Capture, CaptureConflict, store

    parsed = Capture.parse(body)
    try:
        return store(shared.service.settings.home, parsed)
    except CaptureConflict as exc:
        raise _Conflict(str(exc), exc.have) from None


class _Conflict(UsageError):
    """409: the bytes do not continue what the hub holds (``have``)."""

    def __init__(self, message: str, have: int) -> None:
        super().__init__(message)
        self.have = have


def note(shared: SharedService, body: Any) -> NoteResult:
    """Store a note sent by another machine (redacted, indexed at once, as `memvault note`)."""
    from memvault.ops.note import add_note

    text = _field(body, "text", str, required=True)
    title, project = _field(body, "title", str), _field(body, "project", str)
    return shared.call_ledger(lambda s: add_note(s.settings, text, title=title, project=project, embedder=s.embedder),
                              embeds=True)

"""`memvault serve`: the agent API as a small HTTP/JSON service (Starlette + uvicorn).

It serves the whole memory, so it binds to loopback unless the user asks for another address
*and* passes ``--allow-remote`` with ``--token-file`` (every request then carries the token,
`memvault.servers.auth`). The Host header is checked always, so a web page cannot reach it
through DNS rebinding. With a token it is also a hub (`memvault.servers.hub`): other
machines send their transcripts and notes to it, and ask it for recall.
"""

import socket
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from memvault.errors import MemvaultError, UsageError
from memvault.live.hub_wire import is_loopback
from memvault.ops.memory import MemoryService
from memvault.ops.prompt_recall import prompt_block
from memvault.ops.results import ArticleHtml, Health
from memvault.servers import SharedService
from memvault.servers.auth import Guard, host_of
from memvault.servers.hub import hub_routes
from memvault.servers.responses import error_response

__all__ = ["build_app", "check_bind", "host_of", "is_loopback", "serve"]


def check_bind(host: str, allow_remote: bool, token_file: object = None) -> None:
    """Refuse a non-loopback address unless the user explicitly allows it, and then only with a token."""
    if is_loopback(host):
        return
    if not allow_remote:
        raise UsageError(
            f"refusing to bind {host}: that serves your whole memory to anyone who can reach it — keep the "
            "default 127.0.0.1, or pass --allow-remote with --token-file FILE (every request then needs the token)"
        )
    if token_file is None:
        raise UsageError(f"refusing --allow-remote on {host} without --token-file FILE: the API would answer anyone "
                         "on the network — add --token-file ~/memvault/.memvault/hub.token (created if missing)")


def _int_or(request: Request, name: str, default: int, low: int = 0, high: int = 100_000) -> int:
    value = _int(request, name, default, low, high)
    return default if value is None else value


def _int(request: Request, name: str, default: int | None, low: int = 0, high: int = 100_000) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"query parameter {name}={raw!r} is not an integer") from None
    if not low <= value <= high:
        raise UsageError(f"query parameter {name}={value} is out of range {low}..{high}")
    return value


def _query(request: Request) -> str:
    q = (request.query_params.get("q") or "").strip()
    if not q:
        raise UsageError("missing query parameter q, e.g. /recall?q=postgres+backups")
    return q


def _scope(request: Request) -> Any:
    """The scoped-recall filters of a request (``project``, ``source``, ``since``, ``until``)."""
    from memvault.recall.scope import Scope

    p = request.query_params
    return Scope.of(p.get("project"), p.get("source"), p.get("since"), p.get("until"))


def _cwd(request: Request) -> str | None:
    """Where the caller works (``cwd``): that project's nodes get the project prior."""
    return request.query_params.get("cwd") or None


def build_app(shared: SharedService, allowed_hosts: tuple[str, ...] = (), token: str | None = None) -> Starlette:
    """The Starlette app. Requests must name a loopback Host or one of ``allowed_hosts``; with
    ``token``, every request but ``GET /health`` and the page's files must carry it, and the
    hub's write routes (`POST /v1/capture`, `/v1/note`) exist."""

    def endpoint(fn: Callable[[Request, MemoryService], Any], ledger: bool = False) -> Callable[[Request], JSONResponse]:
        # Sync endpoints run in Starlette's thread pool; the service call is serialized inside
        # (``ledger``: with drains, for the endpoints that open the ledger; the rest with each other).
        def handle(request: Request) -> JSONResponse:
            call = shared.call_ledger if ledger else shared.call
            try:
                return JSONResponse(call(lambda s: fn(request, s)))
            except MemvaultError as exc:
                return error_response(exc)

        return handle

    def health(request: Request, s: MemoryService) -> Health:
        # Cheap: no model load. A missing or mismatched index answers 503 with what to do.
        return {"status": "ok", "home": str(s.settings.home), "nodes": s.nodes.count(),
                "articles": len(s.vault.list_articles())}

    def get_ids(request: Request) -> list[str]:
        ids = [i for raw in request.query_params.getlist("ids") for i in raw.split(",") if i.strip()]
        if not ids:
            raise UsageError("missing query parameter ids, e.g. /get?ids=ID1,ID2")
        return [i.strip() for i in ids]

    routes = [
        Route("/health", endpoint(health)),
        Route("/search", endpoint(lambda r, s: {"query": _query(r), "hits": s.search(
            _query(r), _int_or(r, "limit", 10, 1, 100), scope=_scope(r), cwd=_cwd(r))})),
        Route("/recall", endpoint(lambda r, s: s.recall(_query(r), max_nodes=_int(r, "max_nodes", None, 1, 50),
                                                       max_chars=_int(r, "max_chars", None, 200, 50_000),
                                                       scope=_scope(r), cwd=_cwd(r)))),
        # The UserPromptSubmit hook's question: a block only when the best hit clears the threshold.
        Route("/prompt-recall", endpoint(lambda r, s: prompt_block(s, _query(r), _cwd(r)))),
        Route("/timeline/{id}", endpoint(lambda r, s: s.timeline(r.path_params["id"], _int_or(r, "before", 3, 0, 50),
                                                                _int_or(r, "after", 3, 0, 50)))),
        Route("/get", endpoint(lambda r, s: s.get(get_ids(r)))),
        Route("/articles", endpoint(lambda r, s: s.list_articles())),
        Route("/articles/{title}", endpoint(lambda r, s: s.read_article(r.path_params["title"]))),
        Route("/articles/{title}/toc", endpoint(lambda r, s: s.article_toc(r.path_params["title"]))),
        Route("/articles/{title}/links", endpoint(lambda r, s: s.article_links(r.path_params["title"]))),
        Route("/articles/{title}/sections/{section:path}",
              endpoint(lambda r, s: s.read_section(r.path_params["title"], r.path_params["section"]))),
        *browse_routes(endpoint),
        *hub_routes(shared, write=token is not None),
    ]

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        return JSONResponse({"error": f"{detail}: {request.url.path}", "type": "HTTPError"}, status_code=status)

    middleware = [Middleware(Guard, allowed_hosts=allowed_hosts, token=token)]
    return Starlette(routes=routes, middleware=middleware, exception_handlers={HTTPException: http_error})


def browse_routes(endpoint: Callable[..., Callable[[Request], JSONResponse]]) -> list[Route]:
    """Conversations (read from the ledger, opened read-only per call), an article as safe HTML,
    and the web page at `/` with its two static files."""
    from memvault.ops.conversations import list_conversations, show_conversation
    from memvault.servers import web
    from memvault.servers.web.render import article_html

    def conversations(r: Request, s: MemoryService) -> Any:
        p = r.query_params
        return list_conversations(s.settings, p.get("project"), p.get("source"), p.get("since"), p.get("until"),
                                  _int(r, "limit", 100, 0, 100_000))

    def html(r: Request, s: MemoryService) -> ArticleHtml:
        article = s.read_article(r.path_params["title"])

        def resolve(page: str) -> str | None:
            found = s.vault.find_article(page)
            return None if found is None else found.stem

        return {"title": article["title"], "path": article["path"], "html": article_html(article["text"], resolve)}

    def page(request: Request) -> Response:
        name = request.path_params.get("name", "index.html")
        found = web.asset(name)
        if found is None:
            raise HTTPException(404, "no such file")
        body, media = found
        return Response(body, media_type=media, headers={"Content-Security-Policy": web.CSP,
                                                         "X-Content-Type-Options": "nosniff",
                                                         "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"})

    return [
        Route("/conversations", endpoint(conversations, ledger=True)),
        Route("/conversations/{id}", endpoint(lambda r, s: show_conversation(s.settings, r.path_params["id"]),
                                              ledger=True)),
        Route("/articles/{title}/html", endpoint(html)),
        Route("/", page),
        Route("/static/{name}", page),
    ]


def _unwind_on_sigterm() -> None:
    """Make SIGTERM (launchd, systemd, ``kill``) end the server through its ``finally``.

    uvicorn shuts down on SIGTERM and then raises the signal again; under Python's default
    handler that killed the process on the spot, leaving ``.memvault/serve.json`` behind. As a
    SystemExit it unwinds like Ctrl-C does (exit status 143, as a process killed by SIGTERM).
    """
    import signal
    import sys
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def serve(shared: SharedService, host: str, port: int, allow_remote: bool, token: str | None = None,
          allow_hosts: tuple[str, ...] = ()) -> None:
    """Run the API until interrupted (Ctrl-C or SIGTERM)."""
    import uvicorn

    from memvault.servers import drain_loop

    check_bind(host, allow_remote, token)
    _unwind_on_sigterm()
    # The address it is bound to is a name clients may use (an IP literal cannot be rebound).
    names = (*allow_hosts, *(() if host in ("0.0.0.0", "::", "") else (host,)))
    # The port first: a second `serve` on a busy port fails here, before it announces itself,
    # so it never replaces (or removes) the serve.json of the server that listens there.
    sock = listen_on(host, port)
    stop = drain_loop.start(shared, host, port)  # hooks see a warm server: it drains, it answers prompt-recall
    try:
        config = uvicorn.Config(build_app(shared, names, token), log_level="warning")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        drain_loop.finish(shared, stop)
        sock.close()


def listen_on(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` and listening; MemvaultError when the port is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT, not one in use
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise MemvaultError(f"cannot listen on {host}:{port} ({exc.strerror or exc}) — another `memvault serve` or "
                            "program uses that port; stop it or choose another with --port") from None
    return sock

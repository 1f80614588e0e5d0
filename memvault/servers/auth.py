"""Who may talk to `memvault serve`: the Host check (always) and the bearer token (with a token file).

- **Host.** A request whose Host header is not a loopback name, the address the server is
  bound to, or a name given with ``--allow-host`` is refused (421): a web page elsewhere cannot
  reach the API by pointing its own domain at this machine (DNS rebinding).
- **Token.** With ``--token-file``, every request carries ``Authorization: Bearer <token>``
  except ``GET /health`` and the web page's own files (``/`` and ``/static/…``, which hold no
  memory: the page asks for the token and sends it with each API call); anything else is 401.
"""

import hmac
from collections.abc import Iterable
from typing import Any

from starlette.responses import JSONResponse

from memvault.live.hub_wire import is_loopback

OPEN_PATHS = ("/health",)
PAGE_PATHS = ("/", "/static/")


def host_of(header: str) -> str:
    """The host part of a Host header (``[::1]:8765`` → ``::1``, ``localhost:80`` → ``localhost``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _header(scope: Any, name: bytes) -> str:
    for key, value in scope.get("headers") or []:
        if key == name:
            return str(value.decode("latin-1"))
    return ""


class Guard:
    """ASGI middleware: the Host check, then (when ``token`` is set) the bearer token."""

    def __init__(self, app: Any, allowed_hosts: Iterable[str] = (), token: str | None = None) -> None:
        self.app = app
        self.allowed = {h.strip().lower().strip("[]") for h in allowed_hosts if h and h.strip()}
        self.token = token

    def host_ok(self, header: str) -> bool:
        host = host_of(header)
        return is_loopback(host) or host in self.allowed

    def exempt(self, method: str, path: str) -> bool:
        if method not in ("GET", "HEAD"):
            return False
        return path in OPEN_PATHS or path == "/" or path.startswith("/static/")

    def token_ok(self, header: str) -> bool:
        if self.token is None:
            return True
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            host = _header(scope, b"host")
            if not self.host_ok(host):
                names = ", ".join(sorted(self.allowed)) or "none"
                response = JSONResponse({"error": f"Host {host!r} is not a name this server answers to (loopback, "
                                                  f"and --allow-host: {names}) — start it with --allow-host NAME "
                                                  "for each name clients use", "type": "HTTPError"}, status_code=421)
                await response(scope, receive, send)
                return
            if not self.exempt(scope.get("method", "GET"), scope.get("path", "")) \
                    and not self.token_ok(_header(scope, b"authorization")):
                response = JSONResponse({"error": "missing or wrong bearer token — send `Authorization: Bearer "
                                                  "<token>` with the token in the server's --token-file",
                                         "type": "Unauthorized"}, status_code=401,
                                        headers={"WWW-Authenticate": 'Bearer realm="memvault"'})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

"""What a hub and its clients share: the token file, the URL rule, and one JSON call.

Standard library only: a client's capture hook reads its ``[hub]`` table and pushes through
this module without loading the settings (pydantic), Typer or httpx.

- The token is 256 random bits as 64 hex characters, in a file of mode 0600 that `memvault
  serve --token-file FILE` creates when it is missing; a client holds a copy.
- A hub URL is ``http(s)://host[:port][/prefix]``; plain ``http://`` to a host that is not on
  loopback is refused unless the user says ``--insecure`` (TLS is a reverse proxy's job).
"""

import ipaddress
import json
import os
import socket
import stat
import urllib.parse
from pathlib import Path
from typing import Any

from memvault.errors import ConfigError, MemvaultError, UsageError

TOKEN_BYTES = 32  # 256 bits
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str, insecure: bool = False) -> str:
    """``url`` without a trailing slash; ``UsageError`` for a URL that is not http(s) or, without
    ``insecure``, plain http to a host that is not on loopback."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"hub URL {url!r} is not an http(s) URL, e.g. https://mini.local:8765 or http://127.0.0.1:8765")
    if parts.scheme == "http" and not is_loopback(parts.hostname) and not insecure:
        raise UsageError(f"hub URL {url!r} is plain http to another machine: the token and your memory would cross "
                         "the network in clear — put the hub behind a TLS reverse proxy and use https://, "
                         "or pass --insecure if this network is yours alone")
    return url.strip().rstrip("/")


def create_token_file(path: Path) -> bool:
    """Create ``path`` with a fresh random token (mode 0600, whatever the umask); False when
    it already exists (then it is left as it is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    import secrets  # hmac and hashlib: loaded by the server that makes a token, not by every hook

    with os.fdopen(fd, "w", encoding="ascii") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(secrets.token_hex(TOKEN_BYTES) + "\n")
    return True


def read_token(path: Path) -> str:
    """The token in ``path``; ``ConfigError`` when it is missing, empty, too short or readable
    by other accounts."""
    try:
        st = path.stat()
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise ConfigError(f"token file {path} does not exist — copy it from the hub (`memvault serve --token-file` "
                          "created it there) or create one with `memvault serve --token-file FILE`") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read token file {path} ({exc}) — check its owner and mode (0600)") from None
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise ConfigError(f"token file {path} is readable by other accounts (mode {stat.S_IMODE(st.st_mode):04o}) — "
                          f"run `chmod 600 {path}`")
    if len(token) < 32 or any(c.isspace() for c in token):
        raise ConfigError(f"token file {path} does not hold a token (one line of at least 32 characters) — "
                          "copy it again from the hub")
    return token


def machine_name(configured: str | None = None) -> str:
    """This machine's name on the hub: the setting, else the host name (short)."""
    name = (configured or socket.gethostname().split(".")[0] or "machine").strip()
    return name


def hub_table(home: Path) -> dict[str, Any] | None:
    """The ``[hub]`` table of ``home/memvault.toml`` when it names a URL (the hook's view; the
    settings validate the same table fully); None for a home that is not a client."""
    try:
        raw = (home / "memvault.toml").read_bytes()
    except OSError:
        return None
    if b"hub" not in raw:  # every hook asks: most homes are no client, and tomllib costs it 5 ms
        return None
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    table = data.get("hub")
    if not isinstance(table, dict) or not isinstance(table.get("url"), str) or not table["url"].strip():
        return None
    return table


class HubError(MemvaultError):
    """A call to the hub failed: ``reachable`` False when it never answered (spool and retry),
    ``status`` the HTTP status when it answered with an error."""

    def __init__(self, message: str, reachable: bool, status: int | None = None,
                 body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.reachable, self.status, self.body = reachable, status, body or {}


def call(url: str, token: str | None, method: str, path: str, body: Any = None,
         timeout_s: float = 10.0) -> dict[str, Any]:
    """One JSON request to the hub; the decoded JSON object, or ``HubError``.

    An answer that is not a JSON object (a captive portal, a proxy's error page) is a
    ``HubError`` too, so a caller never takes garbage for an acknowledgement.
    """
    import urllib.error
    import urllib.request

    data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    headers = {"Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url.rstrip("/") + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:  # noqa: S310 - the user's own hub
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        raw = exc.read() or b""
        answer = _decode(raw)
        reason = answer.get("error") if answer else raw[:200].decode("utf-8", "replace")
        raise HubError(f"the hub answered {exc.code}: {reason}", True, exc.code, answer) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HubError(f"the hub at {url} is unreachable ({reason})", False) from None
    answer = _decode(raw)
    if answer is None:
        raise HubError(f"the hub at {url} answered something that is not memvault's JSON "
                       f"({raw[:80].decode('utf-8', 'replace')!r}) — is the URL right?", True)
    return answer


def _decode(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None

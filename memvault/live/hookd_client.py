"""The hooks' side of the hook daemon: find the home's warm process, start it when there is
none, ask it one question (standard library only — a hook must start in milliseconds).

One daemon per home (``memvault.servers.hookd``) listens on a Unix socket in a per-user
folder (``$XDG_RUNTIME_DIR/memvault`` or ``/tmp/memvault-<uid>``, mode 0700; the socket 0600),
named by a hash of the home's path, so only its owner can connect. A hook connects, sends one
JSON line, reads one JSON answer. When nothing listens (no daemon yet, or a stale socket file
left by a killed one), the hook starts the daemon detached and, if asked to, waits for it;
the daemon's lock file makes a second one exit at once, so two hooks starting it together
still get one. ``None`` from ``ask`` means "answer in process"; ``MEMVAULT_HOOKD=off`` turns the
daemon off (every hook answers in process).
"""

import json
import os
import socket
import sys
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

LOCK = "hookd.lock"
INFO = "hookd.json"
START_WAIT_S = 20.0  # a first hook waits this long at most for the daemon to load the model
ASK_TIMEOUT_S = 10.0


def runtime_dir() -> Path:
    """The per-user folder of the daemons' sockets (created 0700; refused when not ours)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(base) / "memvault" if base else Path("/tmp") / f"memvault-{os.getuid()}"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = folder.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise PermissionError(f"{folder} is not private to this user (owner {st.st_uid}, mode {st.st_mode & 0o777:o})")
    return folder


def socket_path(home: Path) -> Path:
    """Where the daemon of ``home`` listens (short enough for a Unix socket on every system)."""
    # Two checksums (64 bits), not hashlib: its OpenSSL import costs a hook more than the rest.
    raw = str(Path(home).resolve()).encode("utf-8")
    key = f"{zlib.crc32(raw):08x}{zlib.adler32(raw[::-1]):08x}"
    return runtime_dir() / f"{key}.sock"


def _exchange(path: Path, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        sock.connect(str(path))
        sock.sendall(json.dumps(request).encode("utf-8") + b"\n")
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    answer = json.loads(b"".join(chunks).decode("utf-8"))
    if not isinstance(answer, dict):
        raise ValueError("the daemon's answer is not a JSON object")
    return answer


def start(home: Path) -> "subprocess.Popen[bytes] | None":
    """Start the daemon of ``home`` detached (its own session; output to ``live.log``)."""
    import subprocess  # only when starting: its import costs a hook as much as the rest

    state = Path(home) / ".memvault"
    if not state.is_dir():
        return None
    with open(state / "live.log", "ab") as log:
        return subprocess.Popen([sys.executable, "-m", "memvault.servers.hookd", "--home", str(home)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True)


def ask(home: Path, request: dict[str, Any], start_daemon: bool = True, wait: bool = True,
        timeout_s: float = ASK_TIMEOUT_S) -> dict[str, Any] | None:
    """The daemon's answer to ``request``, or None (no daemon, could not start it, no answer in
    time, or it answered with an error — the caller answers in process)."""
    if os.environ.get("MEMVAULT_HOOKD", "").lower() in ("off", "0", "no", "false"):
        return None
    try:
        path = socket_path(home)
    except OSError:
        return None
    try:
        return _checked(_exchange(path, request, timeout_s))
    except (FileNotFoundError, ConnectionRefusedError):
        pass  # nobody listens: start it below
    except (OSError, ValueError):
        return None
    if not start_daemon:
        return None
    proc = start(home)
    if proc is None or not wait:
        return None
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            return _checked(_exchange(path, request, timeout_s))
        except (FileNotFoundError, ConnectionRefusedError):
            if proc.poll() is not None and not held(home):
                return None  # it could not start, and no other daemon is starting
        except (OSError, ValueError):
            return None
    return None


def _checked(answer: dict[str, Any]) -> dict[str, Any] | None:
    return None if answer.get("error") else answer


def held(home: Path) -> bool:
    """True while some process holds the daemon's lock for ``home``."""
    import fcntl

    try:
        fd = os.open(Path(home) / ".memvault" / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


def status(home: Path) -> dict[str, Any]:
    """``{"running", "pid", "socket", "idle_exit_s", "served"}`` of the daemon of ``home``."""
    try:
        path = socket_path(home)
        answer = _exchange(path, {"op": "ping"}, 5.0)
        return {"running": True, "socket": str(path), **{k: answer.get(k) for k in ("pid", "idle_exit_s", "served")}}
    except (OSError, ValueError):
        return {"running": False, "socket": None, "pid": None, "idle_exit_s": None, "served": None}


def running(home: Path) -> bool:
    """A daemon answers for ``home`` (what capture checks before starting a drainer)."""
    return bool(status(home)["running"])

"""The hook daemon: one warm process per memory home that answers the agent hooks.

Started by the first hook that finds none (``memvault.live.hookd_client``); nobody starts it by
hand. It holds ``.memvault/hookd.lock`` for its whole life — a second daemon for the same home
exits at once — and only then replaces whatever socket file is in its place (a stale one
left by a killed daemon). It answers ``prompt-recall`` (the decision and the block),
``index-brief``, ``ping`` and ``stop`` over a Unix socket that only its owner may open (folder 0700,
socket 0600, and the peer's uid checked where the system tells it), drains the capture spool
with its warm embedder as `memvault serve` does, and exits after ``live.daemon_idle_s``
without a request, or when its socket file is taken away or replaced.

    python -m memvault.servers.hookd --home ~/memvault
"""

import argparse
import json
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.live import hookd_client
from memvault.live import spool
from memvault.errors import MemvaultError

if TYPE_CHECKING:
    from memvault.servers import SharedService

CHECK_S = 5.0  # how often the idle clock and the socket file are looked at
REQUEST_MAX_BYTES = 1 << 20  # the client sends a bounded query; anything longer is refused


class HookDaemon:
    """The accept loop, the request handlers and the idle clock of one home's daemon."""

    def __init__(self, shared: "SharedService", path: Path, idle_s: float) -> None:
        self.shared = shared
        self.home = shared.service.settings.home
        self.path = path
        self.idle_s = idle_s
        self.last = time.monotonic()
        self.served = 0
        self.stop = threading.Event()

    def answer(self, request: dict[str, Any]) -> Mapping[str, object]:
        """The answer to one request (an ``error`` key when it cannot be answered)."""
        op = request.get("op")
        if op == "ping":
            return {"pid": os.getpid(), "idle_exit_s": self.idle_s, "served": self.served}
        if op == "prompt-recall":
            from memvault.ops.prompt_recall import prompt_block

            prompt = request.get("prompt")
            if not isinstance(prompt, str):
                return {"error": "prompt-recall needs a \"prompt\" string"}
            cwd, session = request.get("cwd"), request.get("session_id")
            return self.shared.call(lambda s: prompt_block(s, prompt, cwd if isinstance(cwd, str) else None,
                                                           session if isinstance(session, str) else None))
        if op == "stop":
            self.stop.set()  # the accept loop sees it within its check interval
            return {"pid": os.getpid(), "stopping": True}
        if op == "index-brief":
            from memvault.ops.agent_setup import index_brief

            return {"text": index_brief(self.home)}
        return {"error": f"unknown op {op!r}"}

    def handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                if not _same_user(conn):
                    return
                conn.settimeout(10.0)
                data = b""
                while len(data) <= REQUEST_MAX_BYTES and (chunk := conn.recv(65536)):
                    data += chunk
                if len(data) > REQUEST_MAX_BYTES:
                    reply: Mapping[str, object] = {"error": "request too long"}
                else:
                    request = json.loads(data.decode("utf-8", errors="replace") or "null")
                    reply = self.answer(request) if isinstance(request, dict) else {"error": "not a JSON object"}
                self.served += 1
                conn.sendall(json.dumps(reply).encode("utf-8"))
            except (OSError, ValueError, MemvaultError) as exc:
                spool.log_line(self.shared.service.settings.state_dir, f"hookd: a request failed ({type(exc).__name__}: {exc})")
                try:
                    conn.sendall(json.dumps({"error": type(exc).__name__}).encode("utf-8"))
                except OSError:
                    pass
            finally:
                self.last = time.monotonic()

    def serve(self, server: socket.socket) -> str:
        """Accept until idle or displaced; returns why it stopped."""
        mine = os.stat(self.path).st_ino
        server.settimeout(min(CHECK_S, max(self.idle_s / 2, 0.2)))
        while not self.stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                if time.monotonic() - self.last > self.idle_s:
                    return f"idle for {self.idle_s:.0f} s"
                try:
                    if os.stat(self.path).st_ino != mine:
                        return "its socket was replaced"
                except FileNotFoundError:
                    return "its socket was removed"
                continue
            self.last = time.monotonic()
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()
        return "stopped"


def _same_user(conn: socket.socket) -> bool:
    """The peer runs as this user (checked where the system reports it: Linux SO_PEERCRED)."""
    cred = getattr(socket, "SO_PEERCRED", None)
    if cred is None:
        return True  # the socket's folder (0700) and mode (0600) keep others out
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, cred, struct.calcsize("3i")))
    return bool(uid == os.getuid())


def bind(path: Path) -> socket.socket:
    """A listening socket at ``path`` (mode 0600), replacing a stale file there; call with the lock held."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    server.listen(16)
    return server


def run(home: str, idle_s: float | None = None) -> int:
    """The daemon's life: lock, bind, serve, clean up. Exit 0 also when another daemon runs."""
    import fcntl

    from memvault.ops.capture import resolve_home

    # The lock before anything heavy: a second daemon leaves in milliseconds.
    lock = resolve_home(home) / ".memvault" / hookd_client.LOCK
    if not lock.parent.is_dir():
        print(f"hookd: no memory home at {lock.parent.parent} — run `memvault init`", file=sys.stderr)
        return 1
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return 0  # another daemon serves this home
    from memvault.servers import open_service

    try:
        shared = open_service(home)
    except BaseException:
        os.close(fd)
        raise
    settings = shared.service.settings
    state = settings.state_dir
    path = hookd_client.socket_path(settings.home)
    server = bind(path)
    idle = settings.live.daemon_idle_s if idle_s is None else idle_s
    daemon = HookDaemon(shared, path, idle)
    info = state / hookd_client.INFO
    info.write_text(json.dumps({"pid": os.getpid(), "socket": str(path), "idle_exit_s": idle}), encoding="utf-8")
    spool.log_line(state, f"hookd: serving {settings.home} on {path} (idle exit after {idle:.0f} s)")
    from memvault.servers import drain_loop

    threading.Thread(target=drain_loop.drain_loop, args=(shared, daemon.stop), name="memvault-drain", daemon=True).start()
    # The model and the search indexes load now, so the first hook after start is warm too.
    from memvault.ops.prompt_recall import warm

    threading.Thread(target=lambda: shared.call(warm), daemon=True).start()
    why = "stopped"
    try:
        why = daemon.serve(server)
    finally:
        daemon.stop.set()
        server.close()
        _remove_if_ours(path, why)
        info.unlink(missing_ok=True)
        spool.log_line(state, f"hookd: exiting ({why})")
        os.close(fd)
    return 0


def _remove_if_ours(path: Path, why: str) -> None:
    if why == "its socket was replaced":
        return  # it belongs to the daemon that replaced it
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memvault.servers.hookd", description=__doc__.split("\n")[0])
    parser.add_argument("--home", required=True)
    parser.add_argument("--idle-exit", type=float, default=None, help="seconds without a request before it exits")
    args = parser.parse_args(argv)
    try:
        return run(args.home, args.idle_exit)
    except MemvaultError as exc:
        print(f"hookd: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())

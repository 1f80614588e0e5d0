"""A hub client's drainer: push what the hooks spooled to the hub, then forget it.

A client home (one with a ``[hub]`` table) spools captures as any home does; instead of
ingesting them, its drainer sends each named transcript's unacknowledged bytes to
`POST /v1/capture` and removes the entry once the hub has them. ``.memvault/hub-acked.json``
keeps, per file, how many bytes the hub acknowledged (and the file's inode, so a file replaced
on disk is sent whole again). When the hub cannot be reached, or answers something that is not
its JSON, the entry stays in the spool and one line goes to ``live.log``; `memvault drain`
(or the next capture) pushes it later. Spooled notes (made while the hub was away) go to
`POST /v1/note` the same way.

Standard library only (``python -m memvault.live.hub_push --home H`` is what a hook starts).
"""

import base64
import json
import os
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from memvault.live import spool
from memvault.errors import MemvaultError
from memvault.live.hub_wire import HubError, call, check_url, hub_table, machine_name, read_token

ACKED = "hub-acked.json"
CHUNK = 4 * 1024 * 1024  # raw bytes per request (base64 adds a third); lowered when the hub's cap is smaller


class Hub:
    """A client's hub: URL, token, this machine's name, timeout."""

    def __init__(self, home: Path, table: dict[str, Any]) -> None:
        self.url = check_url(str(table["url"]), insecure=bool(table.get("insecure")))
        token_file = table.get("token_file")
        if not isinstance(token_file, str) or not token_file.strip():
            raise HubError(f"[hub] in {home / 'memvault.toml'} has no token_file — rerun "
                           "`memvault agent-setup … --hub URL --token-file FILE`", False)
        self.token = read_token(Path(token_file).expanduser())
        self.machine = machine_name(table.get("machine") if isinstance(table.get("machine"), str) else None)
        self.timeout_s = float(table.get("timeout_s") or 10.0)
        self.chunk = CHUNK

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return call(self.url, self.token, "POST", path, body, self.timeout_s)

    def get(self, path: str) -> dict[str, Any]:
        return call(self.url, self.token, "GET", path, None, self.timeout_s)


def client_hub(home: Path) -> Hub | None:
    """The home's hub, or None when it is not a client (``HubError``/``MemvaultError`` when
    its ``[hub]`` table is unusable)."""
    table = hub_table(home)
    return None if table is None else Hub(home, table)


def _load_acked(state: Path) -> dict[str, Any]:
    try:
        data = json.loads((state / ACKED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_acked(state: Path, acked: dict[str, Any]) -> None:
    tmp = state / f".{ACKED}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(acked), encoding="utf-8")
    os.replace(tmp, state / ACKED)


def push_file(hub: Hub, state: Path, acked: dict[str, Any], path: Path, source: str,
              session_id: str | None) -> int:
    """Send the bytes of ``path`` the hub has not acknowledged; returns the bytes sent."""
    key = str(path)
    st = path.stat()
    seen = acked.get(key) if isinstance(acked.get(key), dict) else None
    offset, replace = 0, False
    if seen is not None:
        if seen.get("ino") == st.st_ino and 0 <= int(seen.get("offset", 0)) <= st.st_size:
            offset = int(seen.get("offset", 0))
        else:
            replace = True  # replaced or truncated since: the hub gets it whole, in place of what it had
    sent, conflicts = 0, 0
    with path.open("rb") as fh:
        while offset < st.st_size or replace:
            fh.seek(offset)
            data = fh.read(min(hub.chunk, st.st_size - offset))
            body = {"machine": hub.machine, "source": source, "path": key, "session_id": session_id,
                    "offset": offset, "data": base64.b64encode(data).decode("ascii"), "replace": replace}
            try:
                answer = hub.post("/v1/capture", body)
            except HubError as exc:
                if exc.status == 409 and isinstance(exc.body.get("have"), int) and conflicts < 3:
                    # The hub holds another length (it lost a file, or this home lost its acks): go on
                    # from what it has, or send the file whole when the bytes differ.
                    conflicts += 1
                    differs = "differs" in str(exc.body.get("error"))
                    offset, replace = (0, True) if differs else (min(exc.body["have"], st.st_size), False)
                    continue
                if exc.status == 413 and isinstance(exc.body.get("max_bytes"), int) and hub.chunk > 1024:
                    hub.chunk = max(1024, (exc.body["max_bytes"] - 4096) * 3 // 4)
                    continue
                raise
            have = answer.get("have")
            if not isinstance(have, int) or have < 0:
                raise HubError(f"the hub answered a capture without `have` ({str(answer)[:80]})", True)
            sent += len(data)
            offset, replace = have, False
            acked[key] = {"offset": have, "ino": st.st_ino, "at": time.time()}
            _save_acked(state, acked)
            if have >= st.st_size:
                break
    return sent


def _configured(home: Path, kind: str) -> list[tuple[str, Path]]:
    """The ``[[sources]]`` of ``kind`` (a Codex notify names no file: its folders are re-sent)."""
    try:
        with (home / "memvault.toml").open("rb") as fh:
            sources = tomllib.load(fh).get("sources") or []
    except (OSError, tomllib.TOMLDecodeError):
        return []
    return [(str(s.get("kind")), Path(str(s.get("path"))).expanduser()) for s in sources
            if isinstance(s, dict) and s.get("kind") in (kind, "auto") and s.get("path")]


def _files_of(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.jsonl") if p.is_file()) if root.is_dir() else []


def push_entry(hub: Hub, home: Path, acked: dict[str, Any], entry: dict[str, Any]) -> str:
    """Push one spool entry; what was done (for the totals)."""
    state = home / ".memvault"
    op = entry.get("op")
    if op == "transcript" and isinstance(entry.get("path"), str):
        path = Path(entry["path"])
        if not path.is_file():
            return f"skipped: {path} is gone"
        sent = push_file(hub, state, acked, path, str(entry.get("source") or "auto"), entry.get("session_id"))
        return f"sent {sent} bytes of {path.name}"
    if op == "sources":
        sent = sum(push_file(hub, state, acked, f, kind, None)
                   for kind, root in _configured(home, str(entry.get("source"))) for f in _files_of(root))
        return f"sent {sent} bytes of {entry.get('source')} sources"
    if op == "hub-note" and isinstance(entry.get("text"), str):
        hub.post("/v1/note", {"text": entry["text"], "title": entry.get("title"), "project": entry.get("project")})
        return "sent a note"
    return "skipped: not an entry a hub client sends"


def push_spool(home: Path) -> dict[str, Any]:
    """Push the spool to the hub until it is empty or the hub is away; never raises for the hub's
    trouble (the entries stay, ``live.log`` says why)."""
    state = home / ".memvault"
    totals: dict[str, Any] = {"pushed": 0, "kept": 0, "errors": [], "hub": None}
    try:
        hub = client_hub(home)
    except (HubError, MemvaultError) as exc:
        spool.log_line(state, f"hub push: {exc}; the spool is kept")
        totals["errors"].append(str(exc))
        totals["kept"] = spool.pending(state)
        return totals
    if hub is None:
        totals["errors"].append("this home has no [hub] table")
        return totals
    totals["hub"] = hub.url
    lock = spool.DrainLock(state)
    while True:
        if not lock.acquire():
            totals["note"] = "another drainer is running; it pushes the spool"
            return totals
        try:
            acked = _load_acked(state)
            for path, entry in spool.entries(state):
                try:
                    push_entry(hub, home, acked, entry or {})
                except HubError as exc:
                    # One line, then stop: the hub is away or confused; the rest waits in order.
                    spool.log_line(state, f"hub push: {exc}; {spool.pending(state)} entr(ies) kept in the spool "
                                          "(`memvault drain` sends them)")
                    totals["errors"].append(str(exc))
                    totals["kept"] = spool.pending(state)
                    return totals
                except OSError as exc:
                    spool.log_line(state, f"hub push: cannot read {entry and entry.get('path')} ({exc}); entry dropped")
                    totals["errors"].append(str(exc))
                spool.remove([path])
                totals["pushed"] += 1
        finally:
            lock.release()
        if not spool.pending(state):
            return totals


def main(argv: list[str]) -> int:
    """``python -m memvault.live.hub_push --home H``: what a client's capture hook starts, detached."""
    home = Path(argv[argv.index("--home") + 1]) if "--home" in argv else Path(os.environ.get("MEMVAULT_HOME", "~/memvault"))
    push_spool(home.expanduser().resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

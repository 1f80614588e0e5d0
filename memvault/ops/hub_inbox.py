"""The hub's side of `POST /v1/capture`: transcript bytes from other machines, stored once.

Each machine's transcripts land under ``<home>/hub/<machine>/<kind>/<folder hash>/<file name>``
(the folder hash keeps two folders' ``session.jsonl`` apart), a folder that `memvault serve
--token-file` registers as a source of the home; the capture then spools the file, so the
server's live drainer ingests and indexes it within seconds, as it does a local capture.

A request says where its bytes start (``offset``). The stored file's size is what the hub has
acknowledged, so a resend is idempotent: bytes the file already holds are compared and skipped,
only what lies past its end is appended, and a request that starts past the end is answered
with the size the hub has (the client resends from there). A file rewritten on the client
(its bytes no longer match) is replaced only when the client says so (``replace``).

Two machines sending the same session store two files of one conversation: ingest keys a
conversation by its kind and native session id and a message by its id, so the ledger holds it
once; ``.memvault/hub-sessions.json`` records every machine that sent it (``attributed``).
The order of messages is the transcript's own, never the hub's clock or the sender's.
"""

import base64
import binascii
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.live import spool
from memvault.errors import UsageError
from memvault.files import atomic_write_text
from memvault.ops.admin_results import SessionSenders
from memvault.ops.results import CaptureStored, MachineFiles, MachinesSummary
from memvault.sources.kinds import CAPTURE_KINDS

HUB_DIR = "hub"
SESSIONS = "hub-sessions.json"
KINDS = CAPTURE_KINDS
_MACHINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_LOCK = threading.Lock()  # one capture at a time per process: appends and the sessions file


class CaptureConflict(Exception):
    """The request's bytes do not continue what the hub holds; ``have`` is its size."""

    def __init__(self, message: str, have: int) -> None:
        super().__init__(message)
        self.have = have


@dataclass(frozen=True)
class Capture:
    """One validated capture request."""

    machine: str
    source: str
    path: str
    session_id: str | None
    offset: int
    data: bytes
    replace: bool

    @classmethod
    def parse(cls, body: Any) -> "Capture":
        """The request in ``body`` (decoded JSON); ``UsageError`` names the field that is wrong."""
        if not isinstance(body, dict):
            raise UsageError("a capture is a JSON object with machine, source, path, offset and data (base64)")
        machine, source, path = body.get("machine"), body.get("source", "auto"), body.get("path")
        if not isinstance(machine, str) or not _MACHINE.match(machine):
            raise UsageError("field machine must be a name of letters, digits, '.', '_' or '-' (at most 64)")
        if source not in KINDS:
            raise UsageError(f"field source must be one of {', '.join(KINDS)}")
        if not isinstance(path, str) or not path.strip() or len(path) > 4096 or "\x00" in path:
            raise UsageError("field path must be the transcript's original path (at most 4096 characters)")
        offset = body.get("offset", 0)
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise UsageError("field offset must be a byte offset (an integer ≥ 0)")
        try:
            data = base64.b64decode(body.get("data") or "", validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise UsageError("field data must be the bytes in base64") from None
        session = body.get("session_id")
        return cls(machine, str(source), path, session if isinstance(session, str) and session else None, offset,
                   data, bool(body.get("replace")))


def hub_root(home: Path) -> Path:
    return home / HUB_DIR


def register_hub_source(home: Path) -> bool:
    """Make ``<home>/hub`` a configured source of the home (``kind = "auto"``: each file's format
    is detected) so the nightly run reads it too; True when memvault.toml was changed."""
    from memvault.ops.config_edit import read_text, with_source

    hub_root(home).mkdir(mode=0o700, exist_ok=True)
    toml = home / "memvault.toml"
    before = read_text(toml)
    after = with_source(before, toml, "auto", str(hub_root(home)))
    if after == before:
        return False
    atomic_write_text(toml, after)
    return True


def stored_path(home: Path, capture: Capture) -> Path:
    """Where a machine's transcript lands: its kind, a hash of its folder, its file name."""
    original = capture.path.replace("\\", "/")
    folder, _, name = original.rpartition("/")
    clean = _UNSAFE.sub("_", name)[:120].lstrip(".") or "transcript"
    digest = hashlib.sha256(folder.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return hub_root(home) / capture.machine / capture.source / digest / clean


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def store(home: Path, capture: Capture) -> CaptureStored:
    """Store the capture's new bytes and spool the file for the drainer.

    Returns ``have`` (the stored size: what the client may now forget), ``stored`` (bytes
    written by this request), ``file`` (relative to the home) and ``machines`` (every machine
    that sent this session). ``CaptureConflict`` when the bytes do not continue the file.
    """
    target = stored_path(home, capture)
    with _LOCK:
        have = _size(target)
        written = 0
        if capture.replace and capture.offset == 0:
            if not target.exists() or target.read_bytes() != capture.data:
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".{target.name}.tmp")
                tmp.write_bytes(capture.data)
                tmp.replace(target)
                written = len(capture.data)
        elif capture.offset > have:
            raise CaptureConflict(f"the hub holds {have} bytes of {capture.path}; send from there", have)
        else:
            overlap = min(have - capture.offset, len(capture.data))
            if overlap:
                with target.open("rb") as fh:
                    fh.seek(capture.offset)
                    if fh.read(overlap) != capture.data[:overlap]:
                        raise CaptureConflict(f"{capture.path} differs from what the hub holds (rewritten on "
                                              "the client?) — send it whole with replace", have)
            tail = capture.data[overlap:]
            if tail:
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("ab") as fh:
                    fh.write(tail)
                written = len(tail)
        machines = _attribute(home, capture)
        if written:
            # The same spool entry a local hook writes: the live drainer ingests and indexes it.
            spool.append(home / ".memvault", {"op": "transcript", "source": capture.source, "path": str(target),
                                              "session_id": capture.session_id, "machine": capture.machine,
                                              "event": "hub-capture"})
        return {"have": _size(target), "stored": written, "file": str(target.relative_to(home)),
                "machines": machines}


def _attribute(home: Path, capture: Capture) -> list[str]:
    """Record that ``capture.machine`` sent this session; every machine that did, sorted."""
    key = f"{capture.source}:{capture.session_id or capture.path.rsplit('/', 1)[-1]}"
    sessions = read_sessions(home)
    entry = sessions.setdefault(key, {"machines": {}})
    machines: dict[str, Any] = entry.setdefault("machines", {})
    if capture.machine not in machines:
        machines[capture.machine] = {"path": capture.path, "first": time.time()}
        atomic_write_text(home / ".memvault" / SESSIONS, json.dumps(sessions, ensure_ascii=False, indent=1))
    return sorted(machines)


def read_sessions(home: Path) -> dict[str, SessionSenders]:
    """``{"<kind>:<session>": {"machines": {name: {"path", "first"}}}}`` — who sent what."""
    try:
        data = json.loads((home / ".memvault" / SESSIONS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def machines_summary(home: Path) -> MachinesSummary:
    """Per machine: sessions sent and bytes stored (what `/v1/status` shows)."""
    out: dict[str, MachineFiles] = {}
    root = hub_root(home)
    if root.is_dir():
        for machine in sorted(p for p in root.iterdir() if p.is_dir()):
            files = [f for f in machine.rglob("*") if f.is_file() and not f.name.startswith(".")]
            out[machine.name] = {"files": len(files), "bytes": sum(f.stat().st_size for f in files)}
    shared = sum(1 for v in read_sessions(home).values() if len(v.get("machines") or {}) > 1)
    return {"machines": out, "sessions_from_several_machines": shared}

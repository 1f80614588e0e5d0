"""`memvault capture`: an agent hook's entry point — spool "this transcript changed", return.

A hook runs on the agent's path, so this module imports only the standard library and
`memvault.live.spool`: no settings, no DuckDB, no LanceDB, no model. It never raises and never
prints to the agent: bad input goes to ``.memvault/live.log`` and the hook exits 0 all the
same. When no drainer runs (and no `memvault serve` drains), it starts one, detached; in a
hub client's home (a ``[hub]`` table) it starts the pusher instead (`memvault.live.hub_push`).

Payloads understood:

- Claude Code hooks (stdin): ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``.
- Codex CLI ``notify`` (the JSON is the last argument): ``{"type": "agent-turn-complete", …}``
  carries no transcript path, so the entry asks the drainer to re-read the configured
  `codex` sources (incremental: only appended bytes are read).
- Anything else with ``transcript_path`` (pi, a script): that file, as ``--source`` says.
"""

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.live import hookd_client
from memvault.live import spool
from memvault.files import owner_only_umask
from memvault.live.hub_wire import hub_table
from memvault.sources.kinds import CAPTURE_KINDS

if TYPE_CHECKING:  # the capture hook imports nothing it does not run
    from memvault.ops.admin_results import CaptureResult, SpoolEntry

KINDS = CAPTURE_KINDS


def resolve_home(home: str | None) -> Path:
    """The home as settings resolve it (flag, else MEMVAULT_HOME, else ~/memvault), without
    importing the settings (pydantic would double the hook's start-up time)."""
    raw = home if home else os.environ.get("MEMVAULT_HOME", "~/memvault")
    return Path(raw).expanduser().resolve()


def entry_for(payload: Any, source: str) -> "SpoolEntry":
    """The spool entry for one hook payload; ``ValueError`` says why a payload is unusable."""
    if not isinstance(payload, dict):
        raise ValueError(f"hook payload is {type(payload).__name__}, not a JSON object")
    if source not in KINDS:
        raise ValueError(f"unknown --source {source!r} (one of {', '.join(KINDS)})")
    path = payload.get("transcript_path")
    if isinstance(path, str) and path.strip():
        return {"op": "transcript", "source": source, "path": str(Path(path).expanduser()),
                "session_id": payload.get("session_id"), "cwd": payload.get("cwd"),
                "event": payload.get("hook_event_name") or payload.get("type")}
    if payload.get("type") == "agent-turn-complete" or source == "codex":
        return {"op": "sources", "source": "codex", "cwd": payload.get("cwd"), "event": payload.get("type")}
    raise ValueError("hook payload has no transcript_path (and is not a Codex notify event)")


def payload_shape(raw: str) -> str:
    """What a rejected payload looked like, for live.log: its size and, for a JSON object, its
    key names — never its text, which may hold a secret in a form no rule knows."""
    try:
        value = json.loads(raw) if raw.strip() else None
    except ValueError:
        return f"payload of {len(raw)} characters, not JSON"
    if isinstance(value, dict):
        keys = ", ".join(repr(k if len(k) <= 40 and k.isprintable() else k[:40].encode("unicode_escape").decode() + "…")
                         for k in list(value)[:12])
        return f"payload of {len(raw)} characters, a JSON object with keys {keys}"
    return f"payload of {len(raw)} characters, a JSON {type(value).__name__}"


def spawn_drainer(home: Path) -> int | None:
    """Start `memvault drain --wait` detached (its own session, no terminal); returns its pid."""
    return _detached(home, [sys.executable, "-m", "memvault.cli", "--home", str(home), "drain", "--wait"])


def _detached(home: Path, argv: list[str]) -> int:
    import subprocess  # here, not at the top: prompt-recall's hook imports this module too

    log = open(home / ".memvault" / spool.LIVE_LOG, "a")  # the child inherits it; closed here after
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                close_fds=True)
    finally:
        log.close()
    return proc.pid


def spawn_pusher(home: Path) -> int | None:
    """Start the hub client's pusher (`memvault.live.hub_push`, standard library only) detached."""
    return _detached(home, [sys.executable, "-m", "memvault.live.hub_push", "--home", str(home)])


def _start_drainer(home: Path, state: Path) -> str:
    """Start what empties the spool unless one runs: in a hub client's home the pusher (the
    entry goes to the hub, only its unacknowledged bytes), else a drainer — none while a
    `memvault serve` drains."""
    if hub_table(home) is not None:
        if spool.drainer_running(state):
            return "running"
        spawn_pusher(home)
        return "pusher"
    serve = spool.serve_info(state)
    if serve and serve.get("drains"):
        return "serve"
    if hookd_client.running(home):
        return "daemon"  # the hook daemon drains the spool with its warm embedder
    if spool.drainer_running(state):
        return "running"
    spawn_drainer(home)
    return "started"


def capture(home: Path, raw: str, source: str = "claude-code", spawn: bool = True) -> "CaptureResult":
    """Spool the event in ``raw`` (hook JSON) for ``home``; never raises.

    Returns what happened (``spooled``: the entry file or None, ``drainer``: started, running
    or serve, ``error``: why nothing was spooled) — the CLI prints nothing of it.
    """
    state = home / ".memvault"
    owner_only_umask()  # the spool entry and live.log are the owner's only
    if not state.is_dir():
        return {"spooled": None, "error": f"no memory home at {home} — run `memvault init`"}
    try:
        entry = entry_for(json.loads(raw) if raw.strip() else None, source)
        path = spool.append(state, entry)
    except (ValueError, OSError) as exc:
        spool.log_line(state, f"capture: {exc} — event ignored ({payload_shape(raw)})")
        return {"spooled": None, "error": str(exc)}
    # Written before the check: a drainer that is just finishing looks at the spool again
    # after releasing its lock, so this entry is never stranded between the two.
    drainer = "running" if spawn else "not started"
    if spawn:
        try:
            drainer = _start_drainer(home, state)
        except OSError as exc:
            spool.log_line(state, f"capture: could not start a drainer ({exc}); the entry waits for the next one "
                                  "(or `memvault drain`)")
            drainer = "failed"
    return {"spooled": str(path), "drainer": drainer}

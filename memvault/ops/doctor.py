"""`memvault doctor`: is everything around the memory in working order, and what to run if not.

One `Check` per item, each with its state (``ok``, ``warn``, ``fail``), what was found and the
command that fixes it:

- **agents** — for each agent registered (Claude Code, Codex CLI, OpenCode): every memvault
  hook command and MCP entry names an executable that exists, and it runs and answers within the
  agent's time limit (the hook's own ``timeout``; an MCP server must answer ``initialize``);
- **hub** — for a client: the hub answers, accepts the token, and its clock is close to ours;
- **home** — owner-only modes, a stale writer lock or git ``index.lock``, the index readable,
  free disk;
- **schedule** — the nightly deployment's units present, the last run and how it ended.
"""

import json
import os
import shlex
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.ops.admin_results import CheckOut
from memvault.config.settings import Settings

MCP_TIMEOUT_S = 30.0  # Claude Code's and Codex's default start-up wait for an MCP server
SKEW_WARN_S = 120.0
FREE_DISK_WARN = 1 << 30  # 1 GiB
HOOK_PAYLOADS = {  # recorded hook JSON: what each command receives from the agent
    "index-brief": {"hook_event_name": "SessionStart", "source": "startup"},
    "prompt-recall": {"hook_event_name": "UserPromptSubmit", "prompt": "memvault doctor: is memory reachable?"},
}


@dataclass
class Check:
    """One line of the doctor's report."""

    area: str
    item: str
    state: str  # ok | warn | fail
    detail: str
    fix: str = ""


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def registered_commands(claude_dir: Path, codex_dir: Path, opencode_dir: Path) -> list[tuple[str, str, list[str], float]]:
    """``(agent, what, argv, time limit)`` of every memvault hook and MCP server the agents know."""
    found: list[tuple[str, str, list[str], float]] = []
    for agent, hooks_file in (("claude-code", claude_dir / "settings.json"), ("codex", codex_dir / "hooks.json")):
        for event, groups in (_json(hooks_file).get("hooks") or {}).items():
            for group in groups if isinstance(groups, list) else []:
                for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                    command = str(hook.get("command", "")) if isinstance(hook, dict) else ""
                    if "memvault" in command:
                        found.append((agent, f"{event} hook", shlex.split(command), float(hook.get("timeout") or 60)))
    mcp = (_json(claude_dir.with_name(".claude.json")).get("mcpServers") or {}).get("memvault")
    if isinstance(mcp, dict) and mcp.get("command"):
        found.append(("claude-code", "MCP server", [str(mcp["command"]), *map(str, mcp.get("args") or [])], MCP_TIMEOUT_S))
    codex_toml = codex_dir / "config.toml"
    if codex_toml.is_file():
        import tomllib

        try:
            server = tomllib.loads(codex_toml.read_text(encoding="utf-8")).get("mcp_servers", {}).get("memvault")
        except (tomllib.TOMLDecodeError, OSError, AttributeError):
            server = None
        if isinstance(server, dict) and server.get("command"):
            found.append(("codex", "MCP server", [str(server["command"]), *map(str, server.get("args") or [])],
                          MCP_TIMEOUT_S))
    entry = (_json(opencode_dir / "opencode.json").get("mcp") or {}).get("memvault")
    if isinstance(entry, dict) and isinstance(entry.get("command"), list):
        found.append(("opencode", "MCP server", [str(c) for c in entry["command"]], MCP_TIMEOUT_S))
    return found


def check_command(agent: str, what: str, argv: list[str], limit_s: float) -> Check:
    """The command resolves, runs, and answers within ``limit_s``."""
    item = f"{agent} {what}"
    fix = f"memvault agent-setup {agent} --apply"
    exe = argv[0] if argv else ""
    if not exe or not Path(exe).is_file() or not os.access(exe, os.X_OK):
        return Check("agents", item, "fail", f"{exe or '(empty)'} is not an executable (moved or deleted?)", fix)
    sub = next((a for a in argv if a in ("index-brief", "prompt-recall", "capture", "mcp")), "")
    if sub == "capture":
        # A real capture would spool an event: check that the program answers instead.
        argv, stdin = [exe, "--version"], ""
    elif sub == "mcp":
        stdin = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "memvault-doctor", "version": "1"}}}) + "\n"
    else:
        stdin = json.dumps(HOOK_PAYLOADS.get(sub, {}))
    started = time.monotonic()
    try:
        if sub == "mcp":
            answered = _mcp_answers(argv, stdin, limit_s)
        else:
            proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=limit_s)
            answered = proc.returncode == 0
    except subprocess.TimeoutExpired:
        return Check("agents", item, "fail", f"did not answer within the agent's {limit_s:g} s", fix)
    except OSError as exc:
        return Check("agents", item, "fail", f"cannot run {exe} ({exc})", fix)
    took = time.monotonic() - started
    if not answered:
        return Check("agents", item, "fail", f"{shlex.join(argv)} failed", fix)
    return Check("agents", item, "ok", f"answers in {took:.1f} s (limit {limit_s:g} s)")


def _mcp_answers(argv: list[str], request: str, limit_s: float) -> bool:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(request)
        proc.stdin.flush()
        import selectors

        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout=limit_s):
                raise subprocess.TimeoutExpired(argv, limit_s)
        line = proc.stdout.readline()
        return '"result"' in line
    finally:
        proc.kill()
        proc.wait()


def check_hub(settings: Settings) -> list[Check]:
    """Reachable, token accepted, clocks close (a client home only)."""
    if not settings.hub.url:
        return []
    from memvault.live.hub_wire import HubError
    from memvault.ops.hub_remote import hub_of

    fix = "memvault agent-setup AGENT --hub URL --token-file FILE --apply"
    try:
        hub = hub_of(settings)
        assert hub is not None
        sent = time.time()
        status = hub.get("/v1/status")
    except HubError as exc:
        if exc.status == 401:
            return [Check("hub", settings.hub.url, "fail", "the hub refused the token", f"copy the hub's token file again; {fix}")]
        return [Check("hub", settings.hub.url, "fail", str(exc), "start `memvault serve --token-file FILE` on the hub")]
    except Exception as exc:  # noqa: BLE001 - a config problem is one line of the report
        return [Check("hub", settings.hub.url, "fail", str(exc), fix)]
    skew = float(status.get("time") or 0) - (sent + time.time()) / 2
    out = [Check("hub", settings.hub.url, "ok", "reachable, token accepted")]
    out.append(Check("hub", "clock", "ok" if abs(skew) < SKEW_WARN_S else "warn",
                     f"the hub's clock is {skew:+.1f} s from this one (order of messages never depends on it)",
                     "" if abs(skew) < SKEW_WARN_S else "turn on network time (NTP) on both machines"))
    from memvault.live import spool

    waiting = spool.pending(settings.state_dir)
    out.append(Check("hub", "spool", "ok" if not waiting else "warn", f"{waiting} capture(s) not yet sent",
                     "" if not waiting else "memvault drain"))
    return out


def check_home(settings: Settings) -> list[Check]:
    """Modes, stale locks, the index, free disk."""
    home, state = settings.home, settings.state_dir
    out: list[Check] = []
    wide = [p for p in (home, state) if p.exists() and stat.S_IMODE(p.stat().st_mode) & 0o077]
    out.append(Check("home", "modes", "warn" if wide else "ok",
                     f"readable by other accounts: {', '.join(str(p) for p in wide)}" if wide else "owner-only",
                     f"chmod 700 {' '.join(shlex.quote(str(p)) for p in wide)}" if wide else ""))
    from memvault.lock import holder

    who = holder(state) if state.exists() else None
    git_lock = home / ".git" / "index.lock"
    if git_lock.exists() and who is None and time.time() - git_lock.stat().st_mtime > 600:
        out.append(Check("home", "locks", "fail", f"{git_lock} left by a killed git (no memvault writer runs)",
                         f"rm {shlex.quote(str(git_lock))}"))
    else:
        out.append(Check("home", "locks", "ok", f"held by pid {who.get('pid')} ({who.get('command')})" if who else "free"))
    if not settings.hub.url:
        out.append(_index_check(settings))
    free = shutil.disk_usage(home if home.exists() else home.parent).free
    out.append(Check("home", "disk", "ok" if free >= FREE_DISK_WARN else "warn", f"{free / 2**30:.1f} GiB free",
                     "" if free >= FREE_DISK_WARN else "free some space: a full disk stops ingest"))
    return out


def _index_check(settings: Settings) -> Check:
    from stores.nodes import NodeIndex

    try:
        info = NodeIndex.inspect(settings)
    except Exception as exc:  # noqa: BLE001 - a damaged index is one line of the report, not a crash
        return Check("home", "index", "fail", f"cannot be read ({exc})", "memvault reindex")
    if not NodeIndex.exists(settings):
        return Check("home", "index", "warn", "no index yet", "memvault run")
    return Check("home", "index", "ok", f"{info.nodes} nodes")


def check_schedule(settings: Settings) -> list[Check]:
    """The nightly deployment's units and the last run."""
    if settings.hub.url:
        return []  # a client has no nightly run; its hub has
    from memvault.ops.schedule import schedule_state

    state = schedule_state(settings)
    out = [Check("schedule", "deployment", "ok" if state["installed"] else "warn",
                 f"nightly at {state['at']} ({state['timezone']})" if state["installed"] else "no nightly schedule installed",
                 "" if state["installed"] else "memvault schedule")]
    from memvault.runs.reports import latest_report

    last = latest_report(settings.runs_dir)
    if last is None:
        out.append(Check("schedule", "last run", "warn", "no run yet", "memvault run"))
    else:
        state_of = {"completed": "ok", "completed_with_errors": "warn"}.get(str(last.get("status")), "fail")
        out.append(Check("schedule", "last run", state_of,
                         f"{last.get('run_id')} {last.get('status')} at {last.get('finished_at')}",
                         "" if state_of == "ok" else "memvault status (what failed), then memvault run"))
    return out


def opencode_plugin(opencode_dir: Path) -> Path | None:
    """memvault's plugin file in OpenCode's config folder, if any.

    OpenCode's loader globs ``{plugin,plugins}/*.{ts,js}`` under its config folder, so either
    folder counts; agent-setup writes ``plugin/``.
    """
    from memvault.ops.opencode_plugin import PLUGIN_NAME

    return next((p for p in (opencode_dir / d / PLUGIN_NAME for d in ("plugin", "plugins")) if p.is_file()), None)


def check_opencode_plugin(opencode_dir: Path) -> list[Check]:
    """With memvault's MCP entry in opencode.json, its plugin must be there and name a working
    executable (the plugin is what captures OpenCode's sessions)."""
    if not isinstance((_json(opencode_dir / "opencode.json").get("mcp") or {}).get("memvault"), dict):
        return []
    plugin = opencode_plugin(opencode_dir)
    if plugin is None:
        return [Check("agents", "opencode plugin", "fail", f"no memvault.js in {opencode_dir / 'plugin'}: "
                      "OpenCode sessions are not captured", "memvault agent-setup opencode --apply")]
    exe = ""
    for line in plugin.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("const MEMVAULT ="):
            try:
                exe = str(json.loads(line.split("=", 1)[1].strip().rstrip(";")))
            except ValueError:
                pass  # an edited plugin: reported below as naming no executable
            break
    # The plugin runs `memvault capture` and `prompt-recall`: its executable is checked as a capture hook's.
    return [check_command("opencode", f"plugin ({plugin.parent.name}/)", [exe, "capture"], 60.0)]


def diagnose(settings: Settings, claude_dir: Path, codex_dir: Path, opencode_dir: Path) -> list[Check]:
    """Every check, in report order."""
    checks = [check_command(*found) for found in registered_commands(claude_dir, codex_dir, opencode_dir)]
    checks += check_opencode_plugin(opencode_dir)
    if not checks:
        checks.append(Check("agents", "registered", "warn", "no agent has memvault's hooks or MCP server",
                            "memvault agent-setup claude-code|codex|opencode --apply"))
    return checks + check_hub(settings) + check_home(settings) + check_schedule(settings)


def as_dicts(checks: list[Check]) -> list[CheckOut]:
    """The checks as `doctor --json` prints them."""
    return [{"area": c.area, "item": c.item, "state": c.state, "detail": c.detail, "fix": c.fix} for c in checks]

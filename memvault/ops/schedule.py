"""`memvault schedule` / `unschedule`: keep a Prefect server and a process worker alive on this
machine — launchd agents on macOS, `systemd --user` units on Linux — rendered from the
templates in deployments/.

Planning is pure (files to write, commands to run), so `--dry-run` prints exactly what would
happen and tests assert it; applying takes an injectable command runner. No prefect import:
registering the deployments is the CLI's next step (deployments/deploy.py).
"""

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any
from urllib.parse import urlparse
from xml.sax.saxutils import escape

from memvault.errors import UsageError
from memvault.files import atomic_write_text
from memvault.ops.deployment_files import install_root, template, work_pool_name
from memvault.logs import LOGGER_PACKAGES
from memvault.ops.admin_results import NextRun, ScheduleApplied, SchedulePlan, ScheduleState
from memvault.config.settings import Settings

SERVER, WORKER = "prefect-server", "prefect-worker"
STATE_FILE = "schedule.json"
Runner = Callable[[list[str], bool], None]


@dataclass
class Plan:
    """Everything one schedule/unschedule does: files to write or remove, commands to run."""

    platform: str
    unit_dir: Path
    write: dict[Path, str] = field(default_factory=dict)
    remove: list[Path] = field(default_factory=list)
    commands: list[tuple[list[str], bool]] = field(default_factory=list)  # (argv, may fail)
    at: str | None = None
    timezone: str | None = None

    def as_dict(self) -> SchedulePlan:
        return {"platform": self.platform, "unit_dir": str(self.unit_dir), "at": self.at, "timezone": self.timezone,
                "files": [{"path": str(p), "content": c} for p, c in self.write.items()],
                "remove": [str(p) for p in self.remove],
                "commands": [shlex.join(argv) for argv, _ in self.commands]}


def nightly_cron(at: str) -> str:
    """"HH:MM" → a daily cron expression."""
    match = re.fullmatch(r"([01]?\d|2[0-3]):([0-5]\d)", at.strip())
    if not match:
        raise UsageError(f"invalid time {at!r} — use HH:MM, 24-hour (e.g. 03:00)")
    return f"{int(match[2])} {int(match[1])} * * *"


def local_timezone() -> str:
    """This machine's IANA time zone name (TZ, /etc/timezone, the /etc/localtime link), else UTC."""
    if os.environ.get("TZ", "").strip(":"):
        return os.environ["TZ"].strip(":")
    etc = Path("/etc/timezone")
    if etc.is_file() and etc.read_text().strip():
        return etc.read_text().strip()
    link = Path("/etc/localtime")
    if link.is_symlink():
        target = str(link.resolve())
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    return "UTC"


def schedule_timezone(settings: Settings) -> str:
    return settings.schedule.timezone or local_timezone()


def current_platform() -> str:
    if sys.platform == "darwin":
        return "darwin"
    if sys.platform.startswith("linux"):
        return "linux"
    raise UsageError(f"`memvault schedule` supports macOS (launchd) and Linux (systemd); this is {sys.platform}")


def default_unit_dir(platform: str) -> Path:
    """Where the agents/units go; MEMVAULT_UNIT_DIR overrides (tests, unusual setups)."""
    if os.environ.get("MEMVAULT_UNIT_DIR"):
        return Path(os.environ["MEMVAULT_UNIT_DIR"]).expanduser()
    return Path.home() / ("Library/LaunchAgents" if platform == "darwin" else ".config/systemd/user")


def unit_names(platform: str) -> dict[str, str]:
    """Service role → file name."""
    if platform == "darwin":
        return {SERVER: "org.memvault.prefect-server.plist", WORKER: "org.memvault.prefect-worker.plist"}
    return {SERVER: "memvault-prefect-server.service", WORKER: "memvault-prefect-worker.service"}


def _environment(settings: Settings, bin_dir: Path) -> dict[str, str]:
    return {
        "PREFECT_API_URL": settings.schedule.api_url,
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "MEMVAULT_HOME": str(settings.home),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        # The stages' log lines (module loggers) in the flow runs' logs; see memvault.logs.
        "PREFECT_LOGGING_EXTRA_LOGGERS": ",".join(LOGGER_PACKAGES),
        # Flow runs call git (the vault) and the venv's python; launchd/systemd start with a bare PATH.
        "PATH": f"{bin_dir}:/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin",
    }


def _commands(settings: Settings, bin_dir: Path, pool: str) -> dict[str, list[str]]:
    url = urlparse(settings.schedule.api_url)
    host, port = url.hostname or "127.0.0.1", str(url.port or 4200)
    return {SERVER: [str(bin_dir / "prefect"), "server", "start", "--host", host, "--port", port],
            WORKER: [str(bin_dir / "prefect"), "worker", "start", "--pool", pool, "--type", "process"]}


def _plist(label: str, argv: list[str], env: dict[str, str], workdir: Path, log_dir: Path, role: str) -> str:
    return Template(_template("launchd-agent.plist")).substitute(
        label=escape(label),
        arguments="\n".join(f"    <string>{escape(a)}</string>" for a in argv),
        environment="\n".join(f"    <key>{escape(k)}</key>\n    <string>{escape(v)}</string>" for k, v in env.items()),
        workdir=escape(str(workdir)), stdout=escape(str(log_dir / f"{role}.log")),
        stderr=escape(str(log_dir / f"{role}.err.log")))


def _quote_systemd(arg: str) -> str:
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"' if re.search(r'[\s"\\]', arg) else arg


def _unit(role: str, argv: list[str], env: dict[str, str], workdir: Path, log_dir: Path, server_unit: str) -> str:
    return Template(_template("systemd-user.service")).substitute(
        description=f"memvault {role.replace('-', ' ')}",
        after="network.target" if role == SERVER else f"network.target {server_unit}",
        exec_start=" ".join(_quote_systemd(a) for a in argv), workdir=_quote_systemd(str(workdir)),
        environment="\n".join(f'Environment="{k}={v}"' for k, v in env.items()),
        stdout=log_dir / f"{role}.log", stderr=log_dir / f"{role}.err.log")


def _template(name: str) -> str:
    return template(name)


def plan_schedule(settings: Settings, at: str | None = None, platform: str | None = None,
                  unit_dir: Path | None = None, bin_dir: Path | None = None) -> Plan:
    """The agents/units and commands that keep the server and the worker alive."""
    platform = platform or current_platform()
    unit_dir = (unit_dir or default_unit_dir(platform)).expanduser().absolute()
    bin_dir = (bin_dir or Path(sys.executable).parent).absolute()
    at = at or f"{settings.schedule.at:%H:%M}"
    nightly_cron(at)  # validate before writing anything
    log_dir = settings.state_dir / "logs"
    env = _environment(settings, bin_dir)
    argv = _commands(settings, bin_dir, work_pool_name())
    names = unit_names(platform)
    plan = Plan(platform=platform, unit_dir=unit_dir, at=at, timezone=schedule_timezone(settings))
    for role in (SERVER, WORKER):
        path = unit_dir / names[role]
        if platform == "darwin":
            plan.write[path] = _plist(names[role].removesuffix(".plist"), argv[role], env, install_root(), log_dir, role)
        else:
            plan.write[path] = _unit(role, argv[role], env, install_root(), log_dir, names[SERVER])
    if platform == "darwin":
        domain = f"gui/{os.getuid()}"
        for role in (SERVER, WORKER):
            label = names[role].removesuffix(".plist")
            plan.commands.append((["launchctl", "bootout", f"{domain}/{label}"], True))
            plan.commands.append((["launchctl", "bootstrap", domain, str(unit_dir / names[role])], False))
    else:
        units = [names[SERVER], names[WORKER]]
        plan.commands += [(["systemctl", "--user", "daemon-reload"], False),
                          (["systemctl", "--user", "enable", "--now", *units], False),
                          (["systemctl", "--user", "restart", *units], False)]
    return plan


def plan_unschedule(settings: Settings, platform: str | None = None, unit_dir: Path | None = None) -> Plan:
    """Stop the services and remove their files (what exists of them)."""
    platform = platform or current_platform()
    unit_dir = (unit_dir or default_unit_dir(platform)).expanduser().absolute()
    names = unit_names(platform)
    plan = Plan(platform=platform, unit_dir=unit_dir)
    plan.remove = [unit_dir / names[r] for r in (SERVER, WORKER) if (unit_dir / names[r]).exists()]
    if platform == "darwin":
        plan.commands = [(["launchctl", "bootout", f"gui/{os.getuid()}/{names[r].removesuffix('.plist')}"], True)
                         for r in (SERVER, WORKER)]
    else:
        plan.commands = [(["systemctl", "--user", "disable", "--now", names[SERVER], names[WORKER]], True),
                         (["systemctl", "--user", "daemon-reload"], True)]
    return plan


def run_command(argv: list[str], may_fail: bool) -> None:
    """The real runner: a failure that matters stops with the command's own message."""
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0 and not may_fail:
        raise UsageError(f"`{shlex.join(argv)}` failed ({result.returncode}): "
                         f"{(result.stderr or result.stdout).strip()[:400]}")


def apply(plan: Plan, settings: Settings, run: Runner = run_command) -> ScheduleApplied:
    """Write/remove the files, then run the commands; records the schedule in .memvault/schedule.json."""
    changed = [str(p) for p, text in plan.write.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if plan.write:
        (settings.state_dir / "logs").mkdir(parents=True, exist_ok=True)
    for path, text in plan.write.items():
        atomic_write_text(path, text)
    for path in plan.remove:
        path.unlink(missing_ok=True)
    for argv, may_fail in plan.commands:
        run(argv, may_fail)
    state = settings.state_dir / STATE_FILE
    if plan.write:
        atomic_write_text(state, json.dumps({"platform": plan.platform, "at": plan.at, "timezone": plan.timezone,
                                             "files": [str(p) for p in plan.write]}, indent=2) + "\n")
    else:
        state.unlink(missing_ok=True)
    return {**plan.as_dict(), "changed": changed}


def schedule_state(settings: Settings) -> ScheduleState:
    """For `status`: is the schedule installed, which files, the nightly time."""
    state_path = settings.state_dir / STATE_FILE
    state = json.loads(state_path.read_text()) if state_path.is_file() else {}
    files = state.get("files") or []
    if not files and sys.platform in ("darwin", "linux"):
        unit_dir = default_unit_dir(current_platform())
        files = [str(unit_dir / n) for n in unit_names(current_platform()).values()]
    present = [f for f in files if Path(f).is_file()]
    return {"installed": bool(files) and len(present) == len(files), "files": present,
            "at": state.get("at") or f"{settings.schedule.at:%H:%M}",
            "timezone": state.get("timezone") or schedule_timezone(settings)}


def wait_for_server(api_url: str, timeout_s: float = 90.0) -> bool:
    """Poll the server's /health until it answers or the timeout passes."""
    import time

    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(api_url.rstrip("/") + "/health", timeout=2.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass  # not up yet; the loop is the retry
        time.sleep(1.0)
    return False


def next_scheduled_run(api_url: str, timeout_s: float = 2.0) -> NextRun:
    """The next scheduled run of the nightly deployment, asked of a running server (never starts one)."""
    import httpx

    base = api_url.rstrip("/")
    try:
        dep = httpx.get(f"{base}/deployments/name/nightly/nightly", timeout=timeout_s)
        if dep.status_code == 404:
            return {"deployment": None, "next_run": None, "note": "no nightly deployment — run `memvault deploy`"}
        dep.raise_for_status()
        body = {"deployments": {"id": {"any_": [dep.json()["id"]]}},
                "flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}}},
                "sort": "EXPECTED_START_TIME_ASC", "limit": 1}
        runs = httpx.post(f"{base}/flow_runs/filter", json=body, timeout=timeout_s)
        runs.raise_for_status()
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        return {"deployment": "nightly/nightly", "next_run": None, "note": f"Prefect server at {base} did not answer ({exc})"}
    found = runs.json()
    return {"deployment": "nightly/nightly", "next_run": found[0]["expected_start_time"] if found else None}

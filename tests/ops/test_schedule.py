"""`memvault schedule` / `unschedule`: launchd plists and systemd units rendered into tmp_path,
commands captured by an injected runner (launchd and systemd cannot run here)."""

import configparser
import json
import plistlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault.cli import app
from memvault.errors import UsageError
from memvault.ops.schedule import apply, nightly_cron, plan_schedule, plan_unschedule, schedule_state
from memvault.config.settings import load_settings

ENV_KEYS = {"PREFECT_API_URL", "PREFECT_SERVER_ANALYTICS_ENABLED", "DO_NOT_TRACK", "MEMVAULT_HOME"}


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[list[str], bool]] = []

    def __call__(self, argv: list[str], may_fail: bool) -> None:
        self.calls.append((argv, may_fail))


def test_nightly_cron_from_hh_mm() -> None:
    assert nightly_cron("03:00") == "0 3 * * *"
    assert nightly_cron("23:45") == "45 23 * * *"
    for bad in ("3am", "24:00", "12:60", ""):
        with pytest.raises(UsageError):
            nightly_cron(bad)


def test_launchd_agents_are_valid_plists_with_absolute_paths(home: Path, tmp_path: Path) -> None:
    settings = load_settings(home)
    units = tmp_path / "LaunchAgents"
    plan = plan_schedule(settings, at="02:30", platform="darwin", unit_dir=units)
    assert sorted(p.name for p in plan.write) == ["org.memvault.prefect-server.plist", "org.memvault.prefect-worker.plist"]
    for path, text in plan.write.items():
        agent = plistlib.loads(text.encode())
        assert agent["Label"] == path.stem
        assert agent["KeepAlive"] is True and agent["RunAtLoad"] is True
        prog = agent["ProgramArguments"]
        assert Path(prog[0]).is_absolute() and prog[0].endswith("/prefect")
        assert Path(prog[0]).exists(), "the venv's prefect executable"
        env = agent["EnvironmentVariables"]
        assert ENV_KEYS <= set(env)
        assert env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false" and env["DO_NOT_TRACK"] == "1"
        assert env["MEMVAULT_HOME"] == str(settings.home)
        for key in ("StandardOutPath", "StandardErrorPath", "WorkingDirectory"):
            assert Path(agent[key]).is_absolute()
        assert agent["StandardOutPath"].startswith(str(settings.state_dir / "logs"))
    worker = plistlib.loads(plan.write[units / "org.memvault.prefect-worker.plist"].encode())
    assert worker["ProgramArguments"][1:] == ["worker", "start", "--pool", "memvault", "--type", "process"]
    server = plistlib.loads(plan.write[units / "org.memvault.prefect-server.plist"].encode())
    assert server["ProgramArguments"][1:4] == ["server", "start", "--host"]


def test_schedule_and_unschedule_are_idempotent(home: Path, tmp_path: Path) -> None:
    settings = load_settings(home)
    units = tmp_path / "LaunchAgents"
    runner = Recorder()
    first = apply(plan_schedule(settings, at="02:30", platform="darwin", unit_dir=units), settings, runner)
    assert len(first["changed"]) == 2
    files = sorted(units.iterdir())
    contents = [p.read_text() for p in files]
    second = apply(plan_schedule(settings, at="02:30", platform="darwin", unit_dir=units), settings, runner)
    assert second["changed"] == [] and [p.read_text() for p in sorted(units.iterdir())] == contents
    argvs = [a for a, _ in runner.calls]
    assert argvs[0][:2] == ["launchctl", "bootout"] and runner.calls[0][1] is True  # may fail when not loaded
    assert argvs[1][:2] == ["launchctl", "bootstrap"] and argvs[1][-1] == str(files[0])
    state = schedule_state(settings)
    assert state["installed"] and state["at"] == "02:30" and sorted(state["files"]) == [str(p) for p in files]

    gone = Recorder()
    apply(plan_unschedule(settings, platform="darwin", unit_dir=units), settings, gone)
    assert list(units.iterdir()) == []
    assert all(a[:2] == ["launchctl", "bootout"] for a, _ in gone.calls)
    again = apply(plan_unschedule(settings, platform="darwin", unit_dir=units), settings, Recorder())
    assert again["remove"] == []
    assert schedule_state(settings)["installed"] is False


def test_systemd_units_parse_and_start_the_services(home: Path, tmp_path: Path) -> None:
    settings = load_settings(home)
    units = tmp_path / "systemd"
    runner = Recorder()
    apply(plan_schedule(settings, platform="linux", unit_dir=units), settings, runner)
    for path in units.iterdir():
        parser = configparser.ConfigParser(strict=False, interpolation=None)
        parser.read_string(path.read_text())
        service = parser["Service"]
        assert Path(service["ExecStart"].split()[0]).is_absolute()
        assert service["Restart"] == "always" and parser["Install"]["WantedBy"] == "default.target"
        env = dict(line.split("=", 1)[1].strip('"').split("=", 1) for line in path.read_text().splitlines()
                   if line.startswith("Environment="))
        assert ENV_KEYS <= set(env) and env["MEMVAULT_HOME"] == str(settings.home)
        assert service["StandardOutput"].startswith("append:" + str(settings.state_dir / "logs"))
    worker = (units / "memvault-prefect-worker.service").read_text()
    assert "After=network.target memvault-prefect-server.service" in worker
    assert [a for a, _ in runner.calls] == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", "memvault-prefect-server.service", "memvault-prefect-worker.service"],
        ["systemctl", "--user", "restart", "memvault-prefect-server.service", "memvault-prefect-worker.service"],
    ]


def test_dry_run_prints_everything_and_changes_nothing(home: Path, tmp_path: Path) -> None:
    units = tmp_path / "agents"
    result = CliRunner().invoke(app, ["--home", str(home), "schedule", "--dry-run", "--json", "--platform", "darwin",
                                      "--unit-dir", str(units), "--at", "04:15"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["dry_run"] and len(data["files"]) == 2 and data["at"] == "04:15"
    assert all(plistlib.loads(f["content"].encode()) for f in data["files"])
    assert any(c.startswith("launchctl bootstrap") for c in data["commands"])
    assert "register deployments nightly, maintenance" in data["then"]
    assert not units.exists() and not (home / ".memvault" / "schedule.json").exists()

    text = CliRunner().invoke(app, ["--home", str(home), "unschedule", "--dry-run", "--platform", "linux",
                                    "--unit-dir", str(units)])
    assert text.exit_code == 0 and "systemctl --user disable --now" in text.output
    bad = CliRunner().invoke(app, ["--home", str(home), "schedule", "--dry-run", "--at", "25:00",
                                   "--platform", "linux", "--unit-dir", str(units)])
    assert bad.exit_code == 2 and "HH:MM" in bad.output

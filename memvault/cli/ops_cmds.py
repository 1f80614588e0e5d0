"""CLI commands of operations: `deploy`, `schedule`, `unschedule`, `backup`, `reindex`,
`maintenance` (registered on the shared Typer app when this module is imported)."""

import os
from pathlib import Path
from typing import Any

import typer

from memvault.cli.app import app
from memvault.cli.output import JsonOpt, console, render, reporting

AtOpt = typer.Option(None, "--at", help="Nightly run time HH:MM (default [schedule] at, 03:00).")
DryRunOpt = typer.Option(False, "--dry-run", help="Print every file and command; change nothing.")
UnitDirOpt = typer.Option(None, "--unit-dir", envvar="MEMVAULT_UNIT_DIR",
                          help="Where agents/units go (default ~/Library/LaunchAgents or ~/.config/systemd/user).")
PlatformOpt = typer.Option(None, "--platform", help="darwin or linux (default: this machine).")


def _settings(ctx: typer.Context) -> Any:
    from memvault.settings import load_settings

    return load_settings(ctx.obj.get("home"))


def _quiet_prefect() -> None:
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")


def _print_plan(plan: dict[str, Any]) -> None:
    for f in plan["files"]:
        console.print(f"[bold]write {f['path']}[/bold]", highlight=False)
        print(f["content"])
    for path in plan["remove"]:
        console.print(f"[bold]remove {path}[/bold]", highlight=False)
    for cmd in plan["commands"]:
        console.print(f"[bold]run[/bold] {cmd}", highlight=False)


def _print_deployments(result: dict[str, Any]) -> None:
    for d in result["deployments"]:
        console.print(f"deployment {d.get('full_name', d['name'])}: cron '{d['cron']}' ({d['timezone']}), "
                      f"pool {d['work_pool']}, entrypoint {d['working_directory']}/{d['flow_entrypoint']}",
                      highlight=False)


@app.command()
def deploy(ctx: typer.Context, at: str = AtOpt, dry_run: bool = DryRunOpt, as_json: bool = JsonOpt) -> None:
    """Register the `nightly` and `maintenance` deployments with the running Prefect server.

    Needs PREFECT_API_URL. Entrypoints resolve to where memvault is installed.

    Example: PREFECT_API_URL=http://127.0.0.1:4200/api memvault deploy --at 02:30
    """
    from memvault.ops.schedule import nightly_cron, schedule_state

    _quiet_prefect()
    with reporting(as_json):
        settings = _settings(ctx)
        at = at or schedule_state(settings)["at"]
        nightly_cron(at)
        from deployments.deploy import planned, register

        result = {"dry_run": True, "deployments": planned(settings, at)} if dry_run else register(settings, at)
        render(as_json, result, lambda: _print_deployments(result))


@app.command()
def schedule(
    ctx: typer.Context, at: str = AtOpt, dry_run: bool = DryRunOpt, unit_dir: Path = UnitDirOpt,
    platform: str = PlatformOpt, as_json: bool = JsonOpt,
) -> None:
    """Keep a Prefect server and worker alive (launchd on macOS, systemd --user on Linux) and deploy.

    Idempotent; `--dry-run` prints every file it would write and every command it would run.

    Example: memvault schedule --at 03:00 --dry-run
    """
    from memvault.errors import MemvaultError
    from memvault.ops.home import require_home
    from memvault.ops.schedule import apply, plan_schedule, wait_for_server

    _quiet_prefect()
    with reporting(as_json):
        settings = _settings(ctx)
        require_home(settings.home)
        plan = plan_schedule(settings, at=at, platform=platform, unit_dir=unit_dir)
        api = settings.schedule.api_url
        if dry_run:
            from deployments.deploy import planned

            data = {**plan.as_dict(), "dry_run": True,
                    "then": f"wait for {api}/health, then register deployments "
                            + ", ".join(d["name"] for d in planned(settings, plan.at)) + f" at {api}"}
            render(as_json, data, lambda: (_print_plan(data), console.print(data["then"], highlight=False)))
            return
        result = apply(plan, settings)
        if not wait_for_server(api):
            raise MemvaultError(f"the Prefect server did not answer at {api} — see "
                                f"{settings.state_dir / 'logs' / 'prefect-server.err.log'}")
        os.environ["PREFECT_API_URL"] = api
        from deployments.deploy import register

        result["deploy"] = register(settings, plan.at)

        def text() -> None:
            for f in result["files"]:
                console.print(f"wrote {f['path']}", highlight=False)
            console.print(f"nightly at {plan.at} ({plan.timezone}); Prefect UI: {api.removesuffix('/api')}",
                          highlight=False)
            _print_deployments(result["deploy"])

        render(as_json, result, text)


@app.command()
def unschedule(
    ctx: typer.Context, dry_run: bool = DryRunOpt, unit_dir: Path = UnitDirOpt, platform: str = PlatformOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Remove the deployments' schedules and the launchd agents / systemd units (idempotent).

    Example: memvault unschedule --dry-run
    """
    from memvault.ops.schedule import apply, plan_unschedule, wait_for_server

    _quiet_prefect()
    with reporting(as_json):
        settings = _settings(ctx)
        plan = plan_unschedule(settings, platform=platform, unit_dir=unit_dir)
        api = settings.schedule.api_url
        if dry_run:
            data = {**plan.as_dict(), "dry_run": True, "then": f"delete the schedules of memvault's deployments at {api}"}
            render(as_json, data, lambda: (console.print(data["then"], highlight=False), _print_plan(data)))
            return
        cleared: list[str] = []
        if wait_for_server(api, timeout_s=3.0):
            os.environ["PREFECT_API_URL"] = api
            from deployments.deploy import remove_schedules

            cleared = remove_schedules()
        result = {**apply(plan, settings), "schedules_removed": cleared}

        def text() -> None:
            console.print(f"schedules removed: {', '.join(cleared) or 'none (server not running)'}", highlight=False)
            for path in result["remove"]:
                console.print(f"removed {path}", highlight=False)

        render(as_json, result, text)


@app.command()
def backup(ctx: typer.Context, dest: Path = typer.Argument(..., help="A new folder outside the home."),
           as_json: bool = JsonOpt) -> None:
    """Copy the whole home (vault, .git, ledger, index, reports) consistently, while no run writes.

    Example: memvault backup /Volumes/Backup/memvault-2026-06-01
    """
    from memvault.ops.backup import backup_home

    with reporting(as_json):
        result = backup_home(_settings(ctx), dest)

        def text() -> None:
            console.print(f"backed up {result['home']} → {result['dest']}: {result['files']} files, "
                          f"{result['bytes'] / 1e6:.1f} MB", highlight=False)
            if result["note"]:
                console.print(result["note"], highlight=False)

        render(as_json, result, text)


@app.command()
def reindex(ctx: typer.Context, as_json: bool = JsonOpt) -> None:
    """Rebuild the node index from the ledger and the vault into a new directory, then swap.

    Recall keeps using the old index until the new one is complete.

    Example: memvault reindex
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from memvault.ops.home import require_home
    from memvault.ops.reindex import rebuild_index

    with reporting(as_json):
        settings = _settings(ctx)
        require_home(settings.home)
        with Progress(TextColumn("embedding nodes"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                      console=console, disable=as_json, transient=True) as bar:
            task = bar.add_task("reindex", total=None)
            result = rebuild_index(settings, progress=lambda done, total: bar.update(task, completed=done, total=total))
        render(as_json, result, lambda: console.print(
            f"reindexed {result['nodes']} nodes ({result['edges']} similar edges, model {result['model']}); "
            f"live index now {result['new_index']} (was {result['old_index']})", highlight=False))


@app.command()
def maintenance(
    ctx: typer.Context,
    step: list[str] = typer.Option(None, "--step", help="Only this step (repeatable): merge, edges, tiers, "
                                                         "compact, retire, checkpoint."),
    as_json: bool = JsonOpt,
) -> None:
    """Run the maintenance flow now (a Prefect flow run): merge, edges, tiers, compact, checkpoint.

    Example: memvault maintenance --step compact --step checkpoint
    """
    from pydantic import ValidationError

    from memvault.errors import UsageError
    from memvault.ops.home import require_home

    _quiet_prefect()
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    if as_json:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")  # stdout is the JSON document
    with reporting(as_json):
        settings = _settings(ctx)
        require_home(settings.home)
        from flows.maintenance import MaintenanceOptions
        from flows.maintenance import maintenance as flow

        try:
            options = MaintenanceOptions(home=str(settings.home), steps=step or None)
        except ValidationError as exc:
            raise UsageError(exc.errors()[0]["msg"]) from None
        report = flow(options)

        def text() -> None:
            for name, out in report["steps"].items():
                result = ", ".join(f"{k} {v}" for k, v in out.items() if k != "seconds")
                console.print(f"  {name:<10} {out['seconds']:6.1f}s  {result}", highlight=False)

        render(as_json, report, text)

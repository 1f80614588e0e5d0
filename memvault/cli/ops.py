"""Commands of operations: `deploy`, `schedule`, `unschedule`, `backup`, `reindex`, `maintenance`."""

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from memvault.cli.app import app
from memvault.cli.context import home_settings, settings_of
from memvault.cli.output import console, out, render, reporting
from memvault.cli.params import AtOpt, DryRunFlag, JsonFlag, PlatformOpt, UnitDirOpt

PANEL = "Operations"


def _print_plan(plan: dict[str, Any]) -> None:
    for f in plan["files"]:
        console.print(f"[bold]write {escape(str(f['path']))}[/bold]", highlight=False)
        out(f["content"])
    for path in plan["remove"]:
        console.print(f"[bold]remove {escape(str(path))}[/bold]", highlight=False)
    for cmd in plan["commands"]:
        console.print(f"[bold]run[/bold] {escape(str(cmd))}", highlight=False)


def _print_deployments(result: dict[str, Any]) -> None:
    for d in result["deployments"]:
        console.print(f"deployment {d.get('full_name', d['name'])}: cron '{d['cron']}' ({d['timezone']}), "
                      f"pool {d['work_pool']}, entrypoint {d['working_directory']}/{d['flow_entrypoint']}",
                      highlight=False)


@app.command(rich_help_panel=PANEL)
def deploy(ctx: typer.Context, at: AtOpt = None, dry_run: DryRunFlag = False, as_json: JsonFlag = False) -> None:
    """Register the `nightly` and `maintenance` deployments with the running Prefect server.

    Needs PREFECT_API_URL. Entrypoints resolve to where memvault is installed.

    Example: PREFECT_API_URL=http://127.0.0.1:4200/api memvault deploy --at 02:30
    """
    from memvault.ops.schedule import nightly_cron, schedule_state
    from memvault.config.prefect_env import apply_prefect_defaults

    apply_prefect_defaults()
    with reporting(as_json):
        settings = settings_of(ctx)
        at = at or schedule_state(settings)["at"]
        nightly_cron(at)
        from deployments.deploy import planned, register

        result = {"dry_run": True, "deployments": planned(settings, at)} if dry_run else register(settings, at)
        render(as_json, result, lambda: _print_deployments(result))


@app.command(rich_help_panel=PANEL)
def schedule(
    ctx: typer.Context, at: AtOpt = None, dry_run: DryRunFlag = False, unit_dir: UnitDirOpt = None,
    platform: PlatformOpt = None, as_json: JsonFlag = False,
) -> None:
    """Keep a Prefect server and worker alive (launchd on macOS, systemd --user on Linux) and deploy.

    Idempotent; `--dry-run` prints every file it would write and every command it would run.

    Example: memvault schedule --at 03:00 --dry-run
    """
    from memvault.errors import MemvaultError
    from memvault.ops.schedule import apply, plan_schedule, wait_for_server
    from memvault.config.prefect_env import apply_prefect_defaults

    apply_prefect_defaults()
    with reporting(as_json):
        settings = home_settings(ctx)
        plan = plan_schedule(settings, at=at, platform=platform, unit_dir=unit_dir)
        api = settings.schedule.api_url
        if dry_run:
            from deployments.deploy import planned

            data = {**plan.as_dict(), "dry_run": True,
                    "then": f"wait for {api}/health, then register deployments "
                            + ", ".join(d["name"] for d in planned(settings, plan.at)) + f" at {api}"}

            def text_dry() -> None:
                _print_plan(data)
                console.print(data["then"], highlight=False)

            render(as_json, data, text_dry)
            return
        applied = apply(plan, settings)
        if not wait_for_server(api):
            raise MemvaultError(f"the Prefect server did not answer at {api} — see "
                                f"{settings.state_dir / 'logs' / 'prefect-server.err.log'}")
        os.environ["PREFECT_API_URL"] = api
        from deployments.deploy import register

        deployed = register(settings, plan.at)
        result = {**applied, "deploy": deployed}

        def text() -> None:
            for f in applied["files"]:
                console.print(f"wrote {f['path']}", highlight=False)
            console.print(f"nightly at {plan.at} ({plan.timezone}); Prefect UI: {api.removesuffix('/api')}",
                          highlight=False)
            _print_deployments(deployed)

        render(as_json, result, text)


@app.command(rich_help_panel=PANEL)
def unschedule(
    ctx: typer.Context, dry_run: DryRunFlag = False, unit_dir: UnitDirOpt = None, platform: PlatformOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Remove the deployments' schedules and the launchd agents / systemd units (idempotent).

    Example: memvault unschedule --dry-run
    """
    from memvault.ops.schedule import apply, plan_unschedule, wait_for_server
    from memvault.config.prefect_env import apply_prefect_defaults

    apply_prefect_defaults()
    with reporting(as_json):
        settings = settings_of(ctx)
        plan = plan_unschedule(settings, platform=platform, unit_dir=unit_dir)
        api = settings.schedule.api_url
        if dry_run:
            data = {**plan.as_dict(), "dry_run": True, "then": f"delete the schedules of memvault's deployments at {api}"}

            def text_dry() -> None:
                console.print(data["then"], highlight=False)
                _print_plan(data)

            render(as_json, data, text_dry)
            return
        cleared: list[str] = []
        if wait_for_server(api, timeout_s=3.0):
            os.environ["PREFECT_API_URL"] = api
            from deployments.deploy import remove_schedules

            cleared = remove_schedules()
        applied = apply(plan, settings)
        result = {**applied, "schedules_removed": cleared}

        def text() -> None:
            console.print(f"schedules removed: {', '.join(cleared) or 'none (server not running)'}", highlight=False)
            for path in applied["remove"]:
                console.print(f"removed {path}", highlight=False)

        render(as_json, result, text)


@app.command(rich_help_panel=PANEL)
def backup(
    ctx: typer.Context,
    dest: Annotated[Path, typer.Argument(metavar="DEST", help="A new folder outside the home.", show_default=False)],
    as_json: JsonFlag = False,
) -> None:
    """Copy the whole home (vault, .git, ledger, index, reports) consistently, while no run writes.

    Example: memvault backup /Volumes/Backup/memvault-2026-06-01
    """
    from memvault.ops.backup import backup_home

    with reporting(as_json):
        result = backup_home(settings_of(ctx), dest)

        def text() -> None:
            console.print(f"backed up {result['home']} → {result['dest']}: {result['files']} files, "
                          f"{result['bytes'] / 1e6:.1f} MB", highlight=False)
            if result["note"]:
                console.print(result["note"], highlight=False)

        render(as_json, result, text)


@app.command(rich_help_panel=PANEL)
def restore(
    ctx: typer.Context,
    src: Annotated[Path, typer.Argument(metavar="SRC", help="A `memvault backup` folder or a ledger copy (*.bak).",
                                        show_default=False)],
    as_json: JsonFlag = False,
) -> None:
    """Put a copy of the ledger back (after damage): the current file is kept aside, never deleted.

    Example: memvault restore /Volumes/Backup/memvault-2026-06-01
    """
    from memvault.ops.backup import restore_ledger

    with reporting(as_json):
        result = restore_ledger(settings_of(ctx), src)

        def text() -> None:
            console.print(f"restored the ledger of {result['home']} from {result['source']}: "
                          f"{result['conversations']} conversations, {result['messages']} messages", highlight=False)
            if result["kept_aside"]:
                console.print(f"the previous ledger is kept at {result['kept_aside']}", highlight=False)
            console.print(result["note"], highlight=False)

        render(as_json, result, text)


@app.command(rich_help_panel=PANEL)
def reindex(ctx: typer.Context, background: Annotated[bool, typer.Option(
        "--background", help="Start the rebuild detached and return at once (log: .memvault/reindex.log).")] = False,
        as_json: JsonFlag = False) -> None:
    """Rebuild the node index from the ledger and the vault into a new directory, then swap.

    Recall keeps using the old index until the new one is complete; after changing the
    embedder this is what re-embeds everything (texts embedded before come from the cache).

    Example: memvault reindex --background
    """
    from memvault.ops.reindex import rebuild_index, spawn_reindex
    from memvault.runs.progress import RichProgress

    with reporting(as_json):
        settings = home_settings(ctx)
        if background:
            started = spawn_reindex(settings)
            render(as_json, started, lambda: console.print(
                f"reindex started in the background (pid {started['pid']}); the old index serves until it is done "
                f"— progress in {started['log']}", highlight=False))
            return
        with RichProgress("embedding nodes", as_bytes=False, transient=True, disable=as_json) as bar:
            result = rebuild_index(settings, progress=bar)
        render(as_json, result, lambda: console.print(
            f"reindexed {result['nodes']} nodes ({result['edges']} similar edges, model {result['model']}); "
            f"live index now {result['new_index']} (was {result['old_index']})", highlight=False))


@app.command(rich_help_panel=PANEL)
def maintenance(
    ctx: typer.Context,
    step: Annotated[list[str] | None, typer.Option(
        "--step", metavar="STEP", show_default=False,
        help="Only this step (repeatable): merge, edges, tiers, compact, retire, checkpoint.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run the maintenance flow now (a Prefect flow run): merge, edges, tiers, compact, checkpoint.

    Example: memvault maintenance --step compact --step checkpoint
    """
    from pydantic import ValidationError

    from memvault.errors import UsageError
    from memvault.config.prefect_env import apply_prefect_defaults

    apply_prefect_defaults(quiet=as_json)  # under --json, stdout is the JSON document
    with reporting(as_json):
        settings = home_settings(ctx)
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

"""Commands of the memory home: `init` and `status`."""

from typing import Annotated

import typer
from rich.markup import escape

from memvault.cli.app import app
from memvault.cli.context import settings_of
from memvault.cli.output import console, render, reporting
from memvault.cli.params import JsonFlag

PANEL = "Memory home"
FixPermissionsFlag = Annotated[bool, typer.Option(
    "--fix-permissions", help="Also make an existing home owner-only (folders 0700, files 0600).")]


@app.command(rich_help_panel=PANEL)
def init(ctx: typer.Context, as_json: JsonFlag = False, fix_permissions: FixPermissionsFlag = False) -> None:
    """Create the memory home (idempotent: adds missing files, never overwrites).

    Example: memvault --home ~/memvault init
    Example: memvault init --fix-permissions
    """
    from memvault.ops.home import init_home, sources_snippet

    with reporting(as_json):
        settings = settings_of(ctx)
        result = init_home(settings.home, settings.lock_timeout_s, fix_permissions=fix_permissions)
        data = {"home": str(result.home), "created": result.created, "kept": result.kept,
                "narrowed": len(result.narrowed),
                "committed": result.committed,
                "detected_sources": [{"kind": k, "path": p} for k, p in result.detected_sources]}

        def text() -> None:
            verb = "created" if result.created else "already complete"
            console.print(f"memory home {result.home}: {verb} ({len(result.created)} file(s) added)", highlight=False)
            if fix_permissions:
                console.print(f"permissions: {len(result.narrowed)} folder(s) or file(s) narrowed to owner-only",
                              highlight=False)
            if result.detected_sources:
                found = ", ".join(f"{kind} at {path}" for kind, path in result.detected_sources)
                console.print(f"found transcripts: {found} — add to {result.home / 'memvault.toml'}:",
                              highlight=False, markup=False)
                # Plain print: rich markup would eat `[[sources]]`, and this is meant to be pasted.
                print(sources_snippet(result.detected_sources), end="")

        render(as_json, data, text)


@app.command(rich_help_panel=PANEL)
def status(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Counts, last run and engine of the memory home.

    Example: memvault status --json
    """
    from memvault.ops.status import gather_status

    with reporting(as_json):
        data = gather_status(settings_of(ctx))

        def text() -> None:
            console.print(f"home: {data['home']}")
            console.print(f"engine: {data['engine']}")
            for key in ("conversations", "messages", "chunks", "buckets", "articles", "nodes"):
                console.print(f"{key}: {data[key]}")
            last = data["last_run"]
            console.print("last run: " + (f"{last['run_id']} {last['status']} at {last['finished_at']}" if last else "never"))
            if data.get("engine_in_use"):
                console.print(f"engine in use (last run): {data['engine_in_use']}")
            size = data.get("index_bytes")
            console.print(f"index: {data.get('index_uri')} ({'size not measured' if size is None else f'{size / 1e6:.1f} MB'}, "
                          f"model {data.get('embedding_model') or 'none'})", highlight=False)
            if data.get("topics_embedding_model") not in (None, data.get("configured_embedding_model")):
                console.print(f"topics: model {data['topics_embedding_model']} (chunks, clusters and articles: "
                              "the bundled MiniLM, whose cosines their thresholds were chosen on)", highlight=False)
            sched = data.get("schedule") or {}
            console.print("schedule: " + (f"installed, nightly at {sched['at']} ({sched['timezone']}): {', '.join(sched['files'])}"
                                          if sched.get("installed") else "not installed (`memvault schedule`)"), highlight=False)
            nxt = data.get("next_run")
            if nxt:
                console.print(f"next run: {nxt.get('next_run') or 'none scheduled'}"
                              + (f" — {nxt['note']}" if nxt.get("note") else ""), highlight=False)
            daemon = data.get("hook_daemon") or {}
            console.print("hook daemon: " + (f"running (pid {daemon['pid']}, exits after {daemon['idle_exit_s']:.0f} s idle, "
                                             f"{daemon['served']} requests served)" if daemon.get("running")
                                             else "not running (the next agent hook starts it)"), highlight=False)
            if data.get("note"):
                console.print(data["note"])
            for warning in data.get("warnings", []):
                console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)

        render(as_json, data, text)

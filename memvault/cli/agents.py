"""Commands of the agent doors: `mcp`, `serve`, `index-brief`, `agent-setup`."""

from pathlib import Path
from typing import Annotated

import typer

from memvault.cli.app import app
from memvault.cli.context import home_settings, settings_of
from memvault.cli.output import console, err_console, render, reporting
from memvault.cli.params import JsonFlag

PANEL = "Agents"


@app.command(rich_help_panel=PANEL)
def mcp(ctx: typer.Context) -> None:
    """Serve the memory as MCP tools over stdio (read-only unless `mcp.allow_write`), for Claude Code and other clients.

    Example: memvault --home ~/memvault mcp
    """
    from memvault.servers import open_service
    from memvault.servers.mcp import run_stdio

    # stdout is the protocol channel: errors go to stderr (`reporting` prints there).
    with reporting(False):
        run_stdio(open_service(ctx.obj.get("home")))


@app.command(rich_help_panel=PANEL)
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", metavar="ADDRESS",
                                      help="Address to bind (loopback unless --allow-remote).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="PORT", min=1, max=65535, help="TCP port.")] = 8765,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", metavar="FILE",
        help="Require `Authorization: Bearer <token>` (the token in FILE; created, mode 0600, if missing) and "
             "accept captures and notes from other machines (the hub).")] = None,
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Allow a non-loopback --host (needs --token-file).")] = False,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", metavar="NAME", help="A Host name clients use to reach this server (repeatable).")] = None,
) -> None:
    """Serve the agent API as HTTP/JSON and a read-only web page at /; with --token-file, the hub of your machines.

    Search, recall, timeline, get, articles and conversations on loopback; with a token file,
    also POST /v1/capture and /v1/note for other machines (see docs/agents.md).

    Example: memvault serve --token-file ~/memvault/.memvault/hub.token --host 0.0.0.0 --allow-remote --allow-host mini.local
    """
    from memvault.hub_wire import create_token_file, read_token
    from memvault.servers import open_service
    from memvault.servers.http import check_bind, serve as run_http

    with reporting(False):
        check_bind(host, allow_remote, token_file)  # before loading anything: misuse fails fast, exit 2
        token = None
        if token_file is not None:
            path = token_file.expanduser().absolute()
            if create_token_file(path):
                err_console.print(f"created token file {path} (mode 0600) — copy it to each client", highlight=False)
            token = read_token(path)
            err_console.print(f"token: {path}", highlight=False)
            from memvault.ops.hub_inbox import register_hub_source

            # Before the service loads the settings: the hub's folder is one of its sources.
            register_hub_source(home_settings(ctx).home)
        shared = open_service(ctx.obj.get("home"))
        err_console.print(f"memvault HTTP API on http://{host}:{port} — the web page at /, GET /health, /search?q=, "
                          "/recall?q=, /articles, /conversations" + (", the hub at /v1/ (token required)" if token else "")
                          + " (Ctrl-C stops)", highlight=False)
        run_http(shared, host, port, allow_remote, token, tuple(allow_host or ()))


@app.command("index-brief", rich_help_panel=PANEL)
def index_brief(
    ctx: typer.Context,
    max_chars: Annotated[int, typer.Option("--max-chars", metavar="N", min=500,
                                           help="Longest brief, in characters.")] = 1_500,
) -> None:
    """Print the article index (titles only) in a <memvault-index> block, for a SessionStart hook.

    Example: memvault --home ~/memvault index-brief
    """
    from memvault.ops.agent_setup import index_brief as brief

    with reporting(False):
        print(brief(home_settings(ctx).home, max_chars))


@app.command("agent-setup", rich_help_panel=PANEL)
def agent_setup(
    ctx: typer.Context,
    client: Annotated[str, typer.Argument(metavar="AGENT", help="The agent to set up: claude-code.", show_default=False)],
    apply: Annotated[bool, typer.Option(
        "--apply", help="Write the files (default: only print what would be written).")] = False,
    claude_dir: Annotated[Path, typer.Option("--claude-dir", metavar="PATH",
                                             help="Claude Code's settings folder.")] = Path("~/.claude"),
    claude_json: Annotated[Path | None, typer.Option(
        "--claude-json", metavar="PATH",
        help="Claude Code's user config with `mcpServers` (default: .claude.json beside --claude-dir).")] = None,
    exe: Annotated[str | None, typer.Option(
        "--exe", metavar="PATH", help="Path of the memvault executable (default: found automatically).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a skill file that was edited by hand.")] = False,
    allow_write: Annotated[bool, typer.Option(
        "--allow-write", help="Let this agent write memory (the MCP tool `remember`; sets mcp.allow_write for it).")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Register memvault with an agent: MCP server, hooks (index, capture, prompt recall), skill file.

    Example: memvault agent-setup claude-code --apply
    """
    import json

    from memvault.errors import UsageError
    from memvault.ops.agent_setup import apply_plan, claude_code_plan

    with reporting(as_json):
        if client != "claude-code":
            raise UsageError(f"unknown agent {client!r} — supported: claude-code (any other MCP client: "
                             "run `memvault mcp` as a stdio server, see docs/agents.md)")
        home = settings_of(ctx).home
        plan = claude_code_plan(home, claude_dir, claude_json, exe, allow_write=allow_write)
        if apply:
            apply_plan(plan, force=force)
        data = {**plan.as_dict(), "applied": apply}

        def text() -> None:
            console.print(f"[bold]1. MCP server[/bold] — `mcpServers.memvault` in {plan.claude_json}:", highlight=False)
            print(json.dumps({"memvault": plan.server_entry}, indent=2))
            console.print(f"   equivalent: {plan.add_command}", highlight=False)
            console.print(f"[bold]2. Hooks[/bold] in {plan.settings_json} (index at start, capture on "
                          "Stop/SessionEnd/PreCompact, recall at each prompt):", highlight=False)
            print(json.dumps({"hooks": {e: [g] for e, g in plan.hook_groups.items()}}, indent=2))
            console.print(f"[bold]3. Skill[/bold] {plan.skill_path} (when to consult memory, how to cite)", highlight=False)
            console.print("Memory writes (MCP `remember`): " + ("allowed for this client" if allow_write
                          else "off (--allow-write turns them on)"), highlight=False)
            if apply:
                for path, change in plan.changes.items():
                    console.print(f"   {change}: {path}", highlight=False)
                console.print("Restart Claude Code (or run /mcp) to pick it up.")
            else:
                console.print("Nothing written; rerun with --apply to write these files.")

        render(as_json, data, text)

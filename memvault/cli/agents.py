"""Commands of the agent doors: `mcp`, `serve`, `index-brief`, `agent-setup`."""

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memvault.cli.app import app
from memvault.cli.context import home_settings, settings_of
from memvault.cli.output import console, err_console, render, reporting
from memvault.cli.params import JsonFlag

if TYPE_CHECKING:
    from memvault.ops.agent_files import FileEdit
    from memvault.ops.agent_setup import ClaudeCodePlan

PANEL = "Agents"


@app.command(rich_help_panel=PANEL)
def mcp(ctx: typer.Context) -> None:
    """Serve the memory as MCP tools over stdio (read-only unless `mcp.allow_write`), for Claude Code and other clients.

    On a hub client (a `[hub]` table in memvault.toml) the tools answer from the hub.

    Example: memvault --home ~/memvault mcp
    """
    from memvault.servers.mcp import run_stdio

    # stdout is the protocol channel: errors go to stderr (`reporting` prints there).
    with reporting(False):
        settings = home_settings(ctx)
        if settings.hub.url:  # a hub client keeps no index: the hub answers
            from memvault.ops.hub_remote import HubMemory, hub_of
            from memvault.servers.mcp import HubDoor

            hub = hub_of(settings)
            assert hub is not None
            run_stdio(HubDoor(HubMemory(settings, hub)))
            return
        from memvault.servers import open_service

        run_stdio(open_service(settings.home))


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
    from memvault.live.hub_wire import create_token_file, read_token
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
        settings = home_settings(ctx)
        if settings.hub.url:  # a hub client: the articles are on the hub
            from memvault.ops.hub_remote import hub_of

            hub = hub_of(settings)
            assert hub is not None
            print(str(hub.get("/v1/index-brief").get("block") or ""))
            return
        print(brief(settings.home, max_chars))


# The options of `agent-setup`, named here so the command's signature stays readable.
AgentArg = Annotated[str, typer.Argument(metavar="AGENT", help="The agent to set up: claude-code, codex or opencode.",
                                         show_default=False)]
ApplyFlag = Annotated[bool, typer.Option("--apply", help="Write the files (default: only print what would be written).")]
ClaudeDir = Annotated[Path, typer.Option("--claude-dir", metavar="PATH", help="Claude Code's settings folder.")]
ClaudeJson = Annotated[Path | None, typer.Option(
    "--claude-json", metavar="PATH",
    help="Claude Code's user config with `mcpServers` (default: .claude.json beside --claude-dir).")]
CodexDir = Annotated[Path, typer.Option("--codex-dir", metavar="DIR",
                                        help="Codex CLI's folder (hooks.json, config.toml, sessions/).")]
OpencodeDir = Annotated[Path, typer.Option("--opencode-dir", metavar="DIR",
                                           help="OpenCode's config folder (opencode.json, plugin/).")]
HubOpt = Annotated[str | None, typer.Option(
    "--hub", metavar="URL", help="Make this home a client of the hub at URL (writes [hub] in memvault.toml).")]
TokenFileOpt = Annotated[Path | None, typer.Option(
    "--token-file", metavar="FILE", help="With --hub: the hub's token, copied from the hub (mode 0600).")]
InsecureFlag = Annotated[bool, typer.Option(
    "--insecure", help="With --hub: allow plain http:// to a machine that is not this one.")]
MachineOpt = Annotated[str | None, typer.Option(
    "--machine", metavar="NAME", help="With --hub: this machine's name on the hub (default: the host name).")]
ExeOpt = Annotated[str | None, typer.Option(
    "--exe", metavar="PATH", help="Path of the memvault executable (default: found automatically).")]
ForceFlag = Annotated[bool, typer.Option("--force", help="Replace a skill file that was edited by hand.")]
AllowWriteFlag = Annotated[bool, typer.Option(
    "--allow-write", help="Let this agent write memory (the MCP tool `remember`; sets mcp.allow_write for it).")]


@app.command("agent-setup", rich_help_panel=PANEL)
def agent_setup(
    ctx: typer.Context, client: AgentArg, apply: ApplyFlag = False, claude_dir: ClaudeDir = Path("~/.claude"),
    claude_json: ClaudeJson = None, codex_dir: CodexDir = Path("~/.codex"),
    opencode_dir: OpencodeDir = Path("~/.config/opencode"), hub: HubOpt = None, token_file: TokenFileOpt = None,
    insecure: InsecureFlag = False, machine: MachineOpt = None, exe: ExeOpt = None, force: ForceFlag = False,
    allow_write: AllowWriteFlag = False, as_json: JsonFlag = False,
) -> None:
    """Register memvault with an agent: MCP server, hooks (index, capture, prompt recall), skill or plugin.

    Claude Code: ~/.claude.json and ~/.claude/settings.json; Codex CLI: ~/.codex/hooks.json and
    config.toml (its sessions become a source); OpenCode: opencode.json and a plugin. With
    --hub URL --token-file FILE this home sends captures to the hub and asks it for recall.

    Example: memvault agent-setup codex --hub https://mini.local:8765 --token-file ~/.config/memvault/hub.token --apply
    """
    from memvault.errors import UsageError
    from memvault.ops import agent_files
    from memvault.ops.agent_setup import apply_plan, claude_code_plan, find_executable

    with reporting(as_json):
        if client not in ("claude-code", "codex", "opencode"):
            raise UsageError(f"unknown agent {client!r} — supported: claude-code, codex, opencode (any other MCP "
                             "client: run `memvault mcp` as a stdio server, see docs/agents.md)")
        if (hub is None) != (token_file is None):
            raise UsageError("--hub and --token-file go together: the hub's URL and a copy of its token file")
        home = settings_of(ctx).home
        path = find_executable(exe)
        checkout = agent_files.in_source_checkout(path)
        warning = (f"{path} lives inside the source checkout {checkout}'s .venv: the hooks break when that clone "
                   "moves or is deleted — install memvault as a tool (README: `uv tool install`) and rerun "
                   "agent-setup") if checkout else None
        if warning and not as_json:  # under --json it is the "warning" key
            err_console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
        edits = _agent_edits(client, path, home, codex_dir, opencode_dir, allow_write)
        if hub is not None and token_file is not None:
            base = next((e.after for e in reversed(edits) if e.path == home / "memvault.toml"), None)
            edits.append(agent_files.hub_edit(home, hub, token_file, insecure, machine, base))
        plan = claude_code_plan(home, claude_dir, claude_json, path, allow_write=allow_write) \
            if client == "claude-code" else None
        diffs = [e.diff() for e in edits if e.changed]
        changes: dict[str, str] = {}
        if apply:
            if hub is not None:
                (home / ".memvault").mkdir(parents=True, exist_ok=True, mode=0o700)  # a client's spool lives here
            changes = agent_files.write_all(edits)
            if plan is not None:
                changes.update(apply_plan(plan, force=force))
        head: Mapping[str, object] = plan.as_dict() if plan is not None else {}
        data = {**head, "client": client, "memvault": path, "home": str(home),
                "warning": warning, "applied": apply, "diffs": diffs, "changes": changes}
        render(as_json, data, lambda: _print_setup(client, plan, allow_write, diffs, changes if apply else None))


def _agent_edits(client: str, path: str, home: Path, codex_dir: Path, opencode_dir: Path,
                 allow_write: bool) -> "list[FileEdit]":
    """The file edits for Codex or OpenCode (Claude Code's setup is a plan of its own)."""
    from memvault.ops import agent_files

    if client == "codex":
        return agent_files.codex_edits(path, home, codex_dir.expanduser().absolute(), allow_write)
    if client == "opencode":
        from memvault.ops.opencode_plugin import EXPORT_DIR

        edits = agent_files.opencode_edits(path, home, opencode_dir.expanduser().absolute(), allow_write)
        return [*edits, agent_files.source_edit(home, "opencode", str(home / ".memvault" / EXPORT_DIR))]
    return []


def _print_setup(client: str, plan: "ClaudeCodePlan | None", allow_write: bool, diffs: list[str],
                 changes: dict[str, str] | None) -> None:
    """What agent-setup did (``changes``) or would write (``changes`` None: not applied)."""
    if plan is not None:
        show_claude_plan(plan, allow_write)
    for diff in diffs:
        print(diff, end="" if diff.endswith("\n") else "\n")
    if not diffs and plan is None:
        console.print("Everything is already in place.", highlight=False)
    if changes is not None:
        for where, change in changes.items():
            console.print(f"   {change}: {where}", highlight=False)
        console.print(RESTART.get(client, ""), highlight=False)
    else:
        console.print("Nothing written; rerun with --apply to write these files.", highlight=False)


RESTART = {
    "claude-code": "Restart Claude Code (or run /mcp) to pick it up.",
    "codex": "Restart Codex; it asks you to trust the new hooks once (they run `memvault` only).",
    "opencode": "Restart OpenCode to load the plugin and the MCP server.",
}


def show_claude_plan(plan: object, allow_write: bool) -> None:
    """What `agent-setup claude-code` writes, as before the other agents existed."""
    import json

    from memvault.ops.agent_setup import ClaudeCodePlan

    assert isinstance(plan, ClaudeCodePlan)
    console.print(f"[bold]1. MCP server[/bold] — `mcpServers.memvault` in {plan.claude_json}:", highlight=False)
    print(json.dumps({"memvault": plan.server_entry}, indent=2))
    console.print(f"   equivalent: {plan.add_command}", highlight=False)
    console.print(f"[bold]2. Hooks[/bold] in {plan.settings_json} (index at start, capture on "
                  "Stop/SessionEnd/PreCompact, recall at each prompt):", highlight=False)
    print(json.dumps({"hooks": {e: [g] for e, g in plan.hook_groups.items()}}, indent=2))
    console.print(f"[bold]3. Skill[/bold] {plan.skill_path} (when to consult memory, how to cite)", highlight=False)
    console.print("Memory writes (MCP `remember`): " + ("allowed for this client" if allow_write
                  else "off (--allow-write turns them on)"), highlight=False)


@app.command(rich_help_panel=PANEL)
def doctor(
    ctx: typer.Context,
    claude_dir: Annotated[Path, typer.Option("--claude-dir", metavar="PATH",
                                             help="Claude Code's settings folder.")] = Path("~/.claude"),
    codex_dir: Annotated[Path, typer.Option("--codex-dir", metavar="DIR", help="Codex CLI's folder.")] = Path("~/.codex"),
    opencode_dir: Annotated[Path, typer.Option("--opencode-dir", metavar="DIR",
                                               help="OpenCode's config folder.")] = Path("~/.config/opencode"),
    as_json: JsonFlag = False,
) -> None:
    """Check the agents' hooks and MCP servers, the hub, the home and the schedule; say what to run to fix each.

    One line per item; exits 1 when anything is broken (warnings alone exit 0).

    Example: memvault doctor --json
    """
    from memvault.ops.doctor import as_dicts, diagnose

    with reporting(as_json):
        settings = home_settings(ctx)
        checks = diagnose(settings, claude_dir.expanduser(), codex_dir.expanduser(), opencode_dir.expanduser())
        broken = [c for c in checks if c.state == "fail"]

        def text() -> None:
            marks = {"ok": "[green]ok  [/green]", "warn": "[yellow]warn[/yellow]", "fail": "[red]FAIL[/red]"}
            from rich.markup import escape

            for c in checks:
                fix = f" — fix: {escape(c.fix)}" if c.fix else ""
                console.print(f"{marks[c.state]} {c.area}: {escape(c.item)}: {escape(c.detail)}{fix}", highlight=False)

        render(as_json, {"ok": not broken, "checks": as_dicts(checks)}, text)
        if broken:
            raise typer.Exit(1)

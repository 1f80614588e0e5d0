"""CLI commands of the live path: `capture`, `prompt-recall`, `drain`, `watch`, `note`
(registered on the shared Typer app when this module is imported).

`capture` and `prompt-recall` are agent hooks: they read the hook's JSON on stdin, never
fail the agent (exit 0; trouble goes to ``.memvault/live.log``) and keep their import graph
small. `memvault.cli.main` runs them without loading Typer when the command line is as
simple as a hook's (``memvault.cli.live_fast``).
"""

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from memvault.cli.app import app
from memvault.cli.context import home_settings
from memvault.cli.live_fast import run_capture, run_prompt_recall
from memvault.cli.output import console, err_console, render, reporting
from memvault.cli.params import JsonFlag
from memvault.sources.kinds import CAPTURE_KINDS, listed

if TYPE_CHECKING:
    from memvault.ops.admin_results import DrainTotals

PANEL = "Agents"


@app.command(rich_help_panel=PANEL)
def capture(
    ctx: typer.Context,
    payload: Annotated[str | None, typer.Argument(
        metavar="EVENT_JSON", help="The event JSON (Codex's `notify` passes it here); default: stdin.",
        show_default=False)] = None,
    source: Annotated[str, typer.Option(
        "--source", metavar="KIND", help=f"Transcript kind: {listed(CAPTURE_KINDS)}.")] = "claude-code",
) -> None:
    """Agent hook: note that a transcript changed (spooled; drained in the background). Exits 0.

    Reads the hook's JSON on stdin (Claude Code: Stop, SessionEnd, PreCompact) and returns
    at once; the transcript is ingested and indexed by a detached drainer.

    Example: echo '{"transcript_path": "/tmp/s.jsonl"}' | memvault capture
    """
    raise typer.Exit(run_capture(ctx.obj.get("home") and str(ctx.obj["home"]), source, payload))


@app.command("prompt-recall", rich_help_panel=PANEL)
def prompt_recall(
    ctx: typer.Context,
    explain: Annotated[str | None, typer.Option(
        "--explain", metavar="PROMPT", help="Say why PROMPT would or would not get a block, then print the block.",
        show_default=False)] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", metavar="DIR", help="With --explain: the directory the prompt is typed in.")] = None,
) -> None:
    """Agent hook (UserPromptSubmit): print a <memory-recall> block for the prompt, or nothing.

    A block appears only when the memory holds evidence for the prompt (see docs/agents.md:
    trivial prompts never; then the best unit's cosine + the home's top cosine + the share of
    the prompt's rare words and dates the unit holds, against a threshold). The home's hook daemon answers (started by the
    first hook). Exits 0. `--explain PROMPT` prints the decision in words and numbers.

    Example: echo '{"prompt": "how do we back up postgres?"}' | memvault prompt-recall

    Example: memvault prompt-recall --explain "how do we back up postgres?"
    """
    if explain is None:
        raise typer.Exit(run_prompt_recall(ctx.obj.get("home") and str(ctx.obj["home"])))
    from memvault.ops.prompt_recall import explain_prompt

    with reporting(False):
        console.print(escape(explain_prompt(home_settings(ctx).home, explain, cwd)), highlight=False)


@app.command(rich_help_panel=PANEL)
def drain(
    ctx: typer.Context,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for a busy writer lock (up to `live.drain_wait_s`).")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Ingest and index what hooks spooled, now (capture starts this detached by itself).

    Example: memvault drain --json
    """
    from memvault.ops.drain import run_drainer

    with reporting(as_json):
        settings = home_settings(ctx)
        if settings.hub.url:  # a hub client: send the spool to the hub instead
            from memvault.live.hub_push import push_spool

            pushed = push_spool(settings.home)
            render(as_json, pushed, lambda: console.print(
                f"pushed {pushed['pushed']} spool entr{'y' if pushed['pushed'] == 1 else 'ies'} to {pushed['hub']}"
                + (f"; {pushed['kept']} kept ({pushed['errors'][-1]})" if pushed["errors"] else ""), highlight=False))
            if pushed["errors"]:
                raise typer.Exit(1)
            return
        totals = run_drainer(settings, wait=wait)

        def text() -> None:
            console.print(f"drained {totals['entries']} spool entr{'y' if totals['entries'] == 1 else 'ies'}: "
                          f"{totals['messages_new']} new message(s), {totals['notes']} note(s), "
                          f"{totals['conversations_indexed']} conversation(s) indexed", highlight=False)
            if totals.get("note"):
                console.print(totals["note"], highlight=False)
            for err in totals["errors"]:
                console.print(f"  [yellow]{escape(err)}[/yellow]", highlight=False)

        render(as_json, totals, text)


@app.command(rich_help_panel=PANEL)
def watch(
    ctx: typer.Context,
    poll: Annotated[bool, typer.Option(
        "--poll", help="Scan every `live.watch_poll_s` instead of file-system notifications.")] = False,
) -> None:
    """Keep memory live for sources without hooks: ingest and index transcripts as they change.

    Example: memvault watch
    """
    from memvault.ops.watch import watch as run_watch

    with reporting(False):
        settings = home_settings(ctx)
        err_console.print(f"watching {len(settings.sources)} source(s) of {settings.home} (Ctrl-C stops)", highlight=False)

        def cycle(totals: "DrainTotals") -> None:
            err_console.print(f"{totals['messages_new']} new message(s), {totals['conversations_indexed']} "
                              "conversation(s) indexed", highlight=False)

        try:
            run_watch(settings, poll=poll, on_cycle=cycle)
        except KeyboardInterrupt:
            pass


@app.command(rich_help_panel=PANEL)
def note(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="What to remember (a fact, a decision, a preference).",
                                        show_default=False)],
    title: Annotated[str | None, typer.Option("--title", metavar="TITLE",
                                              help="Title of the note (default: its first words).")] = None,
    project: Annotated[str | None, typer.Option("--project", metavar="PROJECT",
                                                help="Project it belongs to (default: none).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Remember a note now: stored as a conversation of source `note`, recallable at once.

    Example: memvault note "the NAS backup moved to 02:30" --project homelab
    """
    from memvault.ops.note import add_note

    with reporting(as_json):
        settings = home_settings(ctx)
        if settings.hub.url:  # a hub client: the note goes to the hub (spooled while it is away)
            from memvault.ops import hub_remote

            hub = hub_remote.hub_of(settings)
            assert hub is not None
            result = hub_remote.note(hub, settings.home, text, title, project)
        else:
            result = add_note(settings, text, title=title, project=project)

        def show() -> None:
            if result["queued"]:
                console.print(f"queued {result['cite']}: {result['note']}", highlight=False)
            elif result.get("note"):
                console.print(f"remembered {result['cite']}: {result['note']}", highlight=False)
            else:
                console.print(f"remembered {result['cite']} (recallable now; in the wiki after the next run)",
                              highlight=False)

        render(as_json, result, show)

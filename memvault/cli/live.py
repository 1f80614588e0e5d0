"""CLI commands of the live path: `capture`, `prompt-recall`, `drain`, `watch`, `note`
(registered on the shared Typer app when this module is imported).

`capture` and `prompt-recall` are agent hooks: they read the hook's JSON on stdin, never
fail the agent (exit 0; trouble goes to ``.memvault/live.log``) and keep their import graph
small. `memvault.cli.main` runs them without loading Typer when the command line is as
simple as a hook's (``memvault.cli.live_fast``).
"""

import typer

from memvault.cli.app import app
from memvault.cli.live_fast import run_capture, run_prompt_recall
from memvault.cli.output import JsonOpt, console, err_console, render, reporting


@app.command()
def capture(
    ctx: typer.Context,
    payload: str = typer.Argument(None, help="The event JSON (Codex's `notify` passes it here); default: stdin."),
    source: str = typer.Option("claude-code", "--source", help="Transcript kind: claude-code, codex, pi or auto."),
) -> None:
    """Agent hook: note that a transcript changed (spooled; drained in the background). Exits 0.

    Reads the hook's JSON on stdin (Claude Code: Stop, SessionEnd, PreCompact) and returns
    at once; the transcript is ingested and indexed by a detached drainer.

    Example: echo '{"transcript_path": "/tmp/s.jsonl"}' | memvault capture
    """
    raise typer.Exit(run_capture(ctx.obj.get("home") and str(ctx.obj["home"]), source, payload))


@app.command("prompt-recall")
def prompt_recall(ctx: typer.Context) -> None:
    """Agent hook (UserPromptSubmit): print a <memory-recall> block for the prompt, or nothing.

    The block appears only when the best hit clears `live.prompt_threshold`; it uses a
    running `memvault serve` when there is one. Exits 0.

    Example: echo '{"prompt": "how do we back up postgres?"}' | memvault prompt-recall
    """
    raise typer.Exit(run_prompt_recall(ctx.obj.get("home") and str(ctx.obj["home"])))


@app.command()
def drain(
    ctx: typer.Context,
    wait: bool = typer.Option(False, "--wait", help="Wait for a busy writer lock (up to `live.drain_wait_s`)."),
    as_json: bool = JsonOpt,
) -> None:
    """Ingest and index what hooks spooled, now (capture starts this detached by itself).

    Example: memvault drain --json
    """
    from memvault.ops.drain import run_drainer
    from memvault.ops.home import require_home
    from memvault.settings import load_settings

    with reporting(as_json):
        settings = load_settings(ctx.obj.get("home"))
        require_home(settings.home)
        totals = run_drainer(settings, wait=wait)

        def text() -> None:
            console.print(f"drained {totals['entries']} spool entr{'y' if totals['entries'] == 1 else 'ies'}: "
                          f"{totals['messages_new']} new message(s), {totals['notes']} note(s), "
                          f"{totals['conversations_indexed']} conversation(s) indexed", highlight=False)
            if totals.get("note"):
                console.print(totals["note"], highlight=False)
            for err in totals["errors"]:
                console.print(f"  [yellow]{err}[/yellow]", highlight=False)

        render(as_json, totals, text)


@app.command()
def watch(
    ctx: typer.Context,
    poll: bool = typer.Option(False, "--poll", help="Scan every `live.watch_poll_s` instead of file-system notifications."),
) -> None:
    """Keep memory live for sources without hooks: ingest and index transcripts as they change.

    Example: memvault watch
    """
    from memvault.ops.home import require_home
    from memvault.ops.watch import watch as run_watch
    from memvault.settings import load_settings

    with reporting(False):
        settings = load_settings(ctx.obj.get("home"))
        require_home(settings.home)
        err_console.print(f"watching {len(settings.sources)} source(s) of {settings.home} (Ctrl-C stops)", highlight=False)

        def cycle(totals: dict) -> None:
            err_console.print(f"{totals['messages_new']} new message(s), {totals['conversations_indexed']} "
                              "conversation(s) indexed", highlight=False)

        try:
            run_watch(settings, poll=poll, on_cycle=cycle)
        except KeyboardInterrupt:
            pass


@app.command()
def note(
    ctx: typer.Context,
    text: str = typer.Argument(..., help="What to remember (a fact, a decision, a preference)."),
    title: str = typer.Option(None, "--title", help="Title of the note (default: its first words)."),
    project: str = typer.Option(None, "--project", help="Project it belongs to (default: none)."),
    as_json: bool = JsonOpt,
) -> None:
    """Remember a note now: stored as a conversation of source `note`, recallable at once.

    Example: memvault note "the NAS backup moved to 02:30" --project homelab
    """
    from memvault.ops.home import require_home
    from memvault.ops.note import add_note
    from memvault.settings import load_settings

    with reporting(as_json):
        settings = load_settings(ctx.obj.get("home"))
        require_home(settings.home)
        result = add_note(settings, text, title=title, project=project)

        def show() -> None:
            if result["queued"]:
                console.print(f"queued {result['cite']}: {result['note']}", highlight=False)
            else:
                console.print(f"remembered {result['cite']} (recallable now; in the wiki after the next run)",
                              highlight=False)

        render(as_json, result, show)

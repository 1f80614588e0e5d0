"""Commands of browsing, read-only: `conversations` (list what memvault holds) and `show`
(read one conversation back as Markdown)."""

from typing import Annotated

import typer

from memvault.cli.app import app
from memvault.cli.context import home_settings
from memvault.cli.output import console, out, render, reporting
from memvault.cli.params import JsonFlag
from memvault.sources.kinds import SOURCE_KINDS

PANEL = "Browse"
DEFAULT_LIMIT = 50


def _cell(text: str | None, width: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


@app.command(rich_help_panel=PANEL)
def conversations(
    ctx: typer.Context,
    project: Annotated[str | None, typer.Option(
        "--project", metavar="PROJECT", help="Only this project (its directory, or the directory's name).")] = None,
    source: Annotated[str | None, typer.Option(
        "--source", metavar="KIND", help=f"Only this source kind ({', '.join(SOURCE_KINDS)}).")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", metavar="DATE", help="Only conversations dated on or after DATE (YYYY-MM-DD).")] = None,
    until: Annotated[str | None, typer.Option(
        "--until", metavar="DATE", help="Only conversations dated on or before DATE (YYYY-MM-DD).")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", min=0,
                                       help="Most conversations (0: all).")] = DEFAULT_LIMIT,
    as_json: JsonFlag = False,
) -> None:
    """List conversations, newest first: short id, date, source, project, messages, title.

    Example: memvault conversations --project homelab --since 2026-01-01
    """
    from memvault.ops.conversations import list_conversations

    with reporting(as_json):
        # One more than asked, to say whether the list was cut.
        rows = list_conversations(home_settings(ctx), project, source, since, until, (limit + 1) if limit else None)
        cut = bool(limit) and len(rows) > limit
        rows = rows[:limit] if limit else rows

        def text() -> None:
            if not rows:
                console.print("no conversations" + (" match" if project or source or since or until else
                                                    " yet — `memvault ingest PATH` reads transcripts"), highlight=False)
                return
            for r in rows:
                where = (r["project"] or "").rstrip("/").rsplit("/", 1)[-1]
                flag = " (ignored)" if r["ignored"] else ""
                console.print(f"{r['ref']:<14} {(r['date'] or '')[:10]:<10}  {r['source']:<11} {_cell(where, 16):<16} "
                              f"{r['messages']:>5}  {_cell(r['title'], 70)}{flag}", highlight=False, markup=False)
            if cut:
                console.print(f"… more than {limit}: raise --limit (0 for all) or narrow with --project, "
                              "--source, --since", highlight=False, markup=False)

        render(as_json, rows, text)


@app.command(rich_help_panel=PANEL)
def show(
    ctx: typer.Context,
    refs: Annotated[list[str], typer.Argument(metavar="conv:ID", show_default=False,
                                              help="Conversation id: conv:<prefix>, a bare prefix or a full id.")],
    full: Annotated[bool, typer.Option("--full", help="Expand tool calls and results instead of one line each.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Print a conversation as Markdown (tool calls folded; --full expands them).

    Title, source, project and date, then each message with its role and time.

    Example: memvault show conv:1a2b3c4d --full
    """
    from memvault.ops.conversations import conversation_markdown, show_conversations

    with reporting(as_json):
        convs = show_conversations(home_settings(ctx), refs)  # every id resolved before anything prints

        def text() -> None:
            out("\n".join(conversation_markdown(c, full) for c in convs), end="")

        render(as_json, convs[0] if len(convs) == 1 else convs, text)

"""Commands of recall, read-only: `recall`, `search`, `timeline`, `get`, and the article tools
`articles`, `read`, `toc`, `links`. What memory holds is printed as it is (`plain`): rich would
take `[/etc/hosts]` or `[red]` in a node's text for markup."""

from typing import Annotated

import typer
from rich.markup import escape

from memvault.cli.app import app
from memvault.cli.context import service_of, settings_of
from memvault.cli.output import console, out, plain, render, reporting
from memvault.cli.params import JsonFlag, TitleArg
from memvault.sources.kinds import SCOPE_KINDS

PANEL = "Recall"

QueryArg = Annotated[str, typer.Argument(metavar="QUERY", help="What to remember.", show_default=False)]
# Scoped recall (`recall`, `search`): hard filters inside the index queries.
ScopeProject = Annotated[str | None, typer.Option(
    "--project", metavar="PROJECT", help="Only this project (its directory, or the directory's name).")]
ScopeSource = Annotated[str | None, typer.Option(
    "--source", metavar="KIND", help=f"Only this source kind ({', '.join(SCOPE_KINDS)}).")]
ScopeSince = Annotated[str | None, typer.Option(
    "--since", metavar="DATE", help="Only conversations started on or after DATE (YYYY-MM-DD).")]
ScopeUntil = Annotated[str | None, typer.Option(
    "--until", metavar="DATE", help="Only conversations started on or before DATE (YYYY-MM-DD).")]


@app.command(rich_help_panel=PANEL)
def recall(
    ctx: typer.Context,
    query: QueryArg,
    max_nodes: Annotated[int | None, typer.Option("--max-nodes", metavar="N", min=1,
                                                  help="Most nodes in the block.")] = None,
    max_chars: Annotated[int | None, typer.Option("--max-chars", metavar="N", min=1,
                                                  help="Most characters in the block.")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show each hit's score terms.")] = False,
    project: ScopeProject = None, source: ScopeSource = None, since: ScopeSince = None, until: ScopeUntil = None,
    as_json: JsonFlag = False,
) -> None:
    """Print a <memory-recall> block for QUERY (hybrid vector + full-text search).

    Example: memvault recall "when does the postgres backup run?" --project homelab
    """
    import os

    from memvault.recall.scope import Scope

    from memvault.ops.hub_remote import hub_of

    with reporting(as_json):
        hub = hub_of(settings_of(ctx))
        if hub is not None:  # a hub client: the memory is on the hub
            from memvault.ops import hub_remote

            result = hub_remote.recall(hub, query, max_nodes, max_chars, project, source, since, until)
        else:
            scope = Scope.of(project, source, since, until)
            result = service_of(ctx).recall(query, max_nodes=max_nodes, max_chars=max_chars, scope=scope,
                                            cwd=os.getcwd())

        def text() -> None:
            from memvault.cli.explain import explain_hit

            out(result["block"])
            if explain:
                for h in result["hits"]:
                    for line in explain_hit(h):
                        plain(line)

        render(as_json, result, text)


@app.command(rich_help_panel=PANEL)
def search(
    ctx: typer.Context,
    query: QueryArg,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", min=1, help="Most hits.")] = 10,
    project: ScopeProject = None, source: ScopeSource = None, since: ScopeSince = None, until: ScopeUntil = None,
    as_json: JsonFlag = False,
) -> None:
    """Ids, titles and paths of the best matches (no bodies; use `get` for those).

    Example: memvault search tidepool --limit 5 --since 2026-01-01
    """
    import os

    from memvault.recall.scope import Scope

    from memvault.ops.hub_remote import hub_of

    with reporting(as_json):
        hub = hub_of(settings_of(ctx))
        if hub is not None:  # a hub client: the memory is on the hub
            from memvault.ops import hub_remote

            hits = hub_remote.search(hub, query, limit, project, source, since, until)
        else:
            hits = service_of(ctx).search(query, limit, scope=Scope.of(project, source, since, until), cwd=os.getcwd())

        def text() -> None:
            for h in hits:
                plain(f"{h['score']:.4f}  {h['id']}  {h['path']}" + (f"  {h['date']}" if h.get("date") else ""))

        render(as_json, {"query": query, "hits": hits}, text)


@app.command(rich_help_panel=PANEL)
def timeline(
    ctx: typer.Context,
    node_id: Annotated[str, typer.Argument(metavar="ID", help="Anchor node id from `search`.", show_default=False)],
    before: Annotated[int, typer.Option("--before", metavar="N", min=0, help="Nodes before the anchor.")] = 3,
    after: Annotated[int, typer.Option("--after", metavar="N", min=0, help="Nodes after the anchor.")] = 3,
    as_json: JsonFlag = False,
) -> None:
    """Nodes around an anchor, in document order.

    Example: memvault timeline 1f2e3d4c5b6a79880011223344556677 --before 2 --after 2
    """
    with reporting(as_json):
        rows = service_of(ctx).timeline(node_id, before, after)

        def text() -> None:
            for r in rows:
                # One line per node: a node's text may hold line breaks (a conversation's date and source).
                said = f" · {r['date']}" if r.get("date") else ""
                plain(("→ " if r["anchor"] else "  ") + f"{r['path']}{said}: {' '.join(r['text'].split())[:160]}")

        render(as_json, rows, text)


@app.command(rich_help_panel=PANEL)
def get(
    ctx: typer.Context,
    ids: Annotated[list[str], typer.Argument(metavar="ID", help="Node ids from `search`.", show_default=False)],
    as_json: JsonFlag = False,
) -> None:
    """Full nodes by id.

    Example: memvault get 1f2e3d4c5b6a79880011223344556677
    """
    with reporting(as_json):
        rows = service_of(ctx).get(ids)

        def text() -> None:
            for r in rows:
                console.print(f"[bold]{escape(r['path'])}[/bold]", highlight=False)
                plain(f"{r['text']}\n")

        render(as_json, rows, text)


@app.command(rich_help_panel=PANEL)
def articles(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the articles of the vault.

    Example: memvault articles --json
    """
    with reporting(as_json):
        rows = service_of(ctx).list_articles()

        def text() -> None:
            if not rows:
                plain("no articles yet — `memvault run` writes them from what was ingested")
            for r in rows:
                plain(f"{r['title']}  ({r['words']} words, {r['citations']} citations)  {r['path']}")

        render(as_json, rows, text)


@app.command(rich_help_panel=PANEL)
def read(
    ctx: typer.Context,
    title: TitleArg,
    section: Annotated[str | None, typer.Option("--section", metavar="SECTION",
                                                help="Only this section (title or path).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Print an article (or one section of it).

    Example: memvault read "Postgres Backup" --section Retention
    """
    with reporting(as_json):
        service = service_of(ctx)
        data = service.read_section(title, section) if section else service.read_article(title)
        render(as_json, data, lambda: out(data["text"], end=""))


@app.command(rich_help_panel=PANEL)
def toc(ctx: typer.Context, title: TitleArg, as_json: JsonFlag = False) -> None:
    """Table of contents of an article.

    Example: memvault toc Tidepool
    """
    with reporting(as_json):
        rows = service_of(ctx).article_toc(title)

        def text() -> None:
            for r in rows:
                plain(r["path"])

        render(as_json, rows, text)


@app.command(rich_help_panel=PANEL)
def links(ctx: typer.Context, title: TitleArg, as_json: JsonFlag = False) -> None:
    """Wikilinks out of and into an article.

    Example: memvault links Tidepool --json
    """
    with reporting(as_json):
        data = service_of(ctx).article_links(title)

        def text() -> None:
            plain("out: " + (", ".join(data["out"]) or "(none)"))
            plain("in: " + (", ".join(data["in"]) or "(none)"))

        render(as_json, data, text)

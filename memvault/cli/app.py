"""Command definitions. Heavy imports live inside commands so `memvault --help` is instant."""

from pathlib import Path
from typing import Any

import typer

from memvault.cli.output import JsonOpt, console, render, reporting

app = typer.Typer(
    name="memvault",
    help="A local-first memory of your conversations with AI assistants.\n\n"
    "Example: memvault init && memvault run && memvault recall 'postgres backups'",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


# Scoped recall (`recall`, `search`): hard filters inside the index queries.
ScopeProject = typer.Option(None, "--project", help="Only this project (its directory, or the directory's name).")
ScopeSource = typer.Option(None, "--source", help="Only this source kind (claude-code, codex, pi, chatgpt, claude-ai, note, article).")
ScopeSince = typer.Option(None, "--since", help="Only conversations started on or after DATE (YYYY-MM-DD).")
ScopeUntil = typer.Option(None, "--until", help="Only conversations started on or before DATE (YYYY-MM-DD).")


@app.callback()
def _global(
    ctx: typer.Context,
    home: Path = typer.Option(None, "--home", envvar="MEMVAULT_HOME", help="Memory home (default ~/memvault)."),
) -> None:
    ctx.obj = {"home": home}


def _settings(ctx: typer.Context, **overrides: Any):  # noqa: ANN202
    from memvault.settings import load_settings

    return load_settings(ctx.obj.get("home"), **overrides)


def _service(ctx: typer.Context):  # noqa: ANN202
    from memvault.ops.home import require_home
    from memvault.ops.memory import MemoryService

    settings = _settings(ctx)
    require_home(settings.home)
    return MemoryService(settings)


@app.command()
def init(ctx: typer.Context, as_json: bool = JsonOpt) -> None:
    """Create the memory home (idempotent: adds missing files, never overwrites).

    Example: memvault --home ~/memvault init
    """
    from memvault.ops.home import init_home
    from memvault.lock import writer_lock

    with reporting(as_json):
        settings = _settings(ctx)
        with writer_lock(settings.state_dir, "memvault init", settings.lock_timeout_s):
            result = init_home(settings.home)
        data = {"home": str(result.home), "created": result.created, "kept": result.kept,
                "committed": result.committed,
                "detected_sources": [{"kind": k, "path": p} for k, p in result.detected_sources]}

        def text() -> None:
            verb = "created" if result.created else "already complete"
            console.print(f"memory home {result.home}: {verb} ({len(result.created)} file(s) added)")
            for kind, path in result.detected_sources:
                console.print(f"  found {kind} transcripts at {path} — add to memvault.toml:\n"
                              f"    [[sources]]\n    kind = \"{kind}\"\n    path = \"{path}\"")

        render(as_json, data, text)


@app.command()
def status(ctx: typer.Context, as_json: bool = JsonOpt) -> None:
    """Counts, last run and engine of the memory home.

    Example: memvault status --json
    """
    from memvault.ops.status import gather_status

    with reporting(as_json):
        data = gather_status(_settings(ctx))

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
            sched = data.get("schedule") or {}
            console.print("schedule: " + (f"installed, nightly at {sched['at']} ({sched['timezone']}): {', '.join(sched['files'])}"
                                          if sched.get("installed") else "not installed (`memvault schedule`)"), highlight=False)
            nxt = data.get("next_run")
            if nxt:
                console.print(f"next run: {nxt.get('next_run') or 'none scheduled'}"
                              + (f" — {nxt['note']}" if nxt.get("note") else ""), highlight=False)
            if data.get("note"):
                console.print(data["note"])

        render(as_json, data, text)


@app.command()
def ingest(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(None, help="Files or folders; default: the sources in memvault.toml."),
    as_json: bool = JsonOpt,
) -> None:
    """Ingest transcripts (format detected from content) as a Prefect flow run.

    Example: memvault ingest ~/Downloads/chatgpt-export/conversations.json
    """
    from memvault.cli.ingest_cmds import ingest_progress
    from memvault.cli.runner import run_pipeline

    with reporting(as_json), ingest_progress(enabled=not as_json):
        report = run_pipeline(ctx.obj.get("home"), only=["ingest"], paths=[str(p) for p in paths or []],
                              quiet=as_json)
        result = report["stages"].get("ingest", {})
        render(as_json, result, lambda: _print_ingest(result))


def _print_ingest(result: dict[str, Any]) -> None:
    console.print(f"files seen {result.get('files_seen', 0)}, conversations new {result.get('conversations_new', 0)}, "
                  f"updated {result.get('conversations_updated', 0)}, messages new {result.get('messages_new', 0)}")
    for e in result.get("errors", []):
        console.print(f"  [yellow]{e['file']}:{e.get('line') or '-'}[/yellow]: {e['error']}", highlight=False)


@app.command()
def run(
    ctx: typer.Context,
    only: list[str] = typer.Option(None, "--only", help="Run only this stage (repeatable)."),
    from_stage: str = typer.Option(None, "--from", help="First stage to run."),
    until_stage: str = typer.Option(None, "--until", help="Last stage to run."),
    engine: str = typer.Option(None, "--engine", help="auto, mlx, openai or none for this run."),
    model: str = typer.Option(None, "--model", help="Override the configured model for this run."),
    since: str = typer.Option(None, "--since", help="Only conversations updated since DATE (YYYY-MM-DD)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be processed and the model calls; change nothing."),
    as_json: bool = JsonOpt,
) -> None:
    """Run the nightly pipeline now, as a Prefect flow run.

    Example: memvault run --from synthesize --until changelog
    """
    from memvault.cli.runner import print_plan, print_report, run_pipeline

    with reporting(as_json):
        report = run_pipeline(ctx.obj.get("home"), only=only or None, from_stage=from_stage,
                              until_stage=until_stage, engine=engine, model=model, quiet=as_json,
                              since=since, dry_run=dry_run)
        render(as_json, report, lambda: print_plan(report) if dry_run else print_report(report))


@app.command()
def recall(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to remember."),
    max_nodes: int = typer.Option(None, help="Most nodes in the block."),
    max_chars: int = typer.Option(None, help="Most characters in the block."),
    explain: bool = typer.Option(False, "--explain", help="Show each hit's score terms."),
    project: str = ScopeProject, source: str = ScopeSource, since: str = ScopeSince, until: str = ScopeUntil,
    as_json: bool = JsonOpt,
) -> None:
    """Print a <memory-recall> block for QUERY (hybrid vector + full-text search).

    Example: memvault recall "when does the postgres backup run?" --project homelab
    """
    import os

    from memvault.recall.scope import Scope

    with reporting(as_json):
        scope = Scope.of(project, source, since, until)
        result = _service(ctx).recall(query, max_nodes=max_nodes, max_chars=max_chars, scope=scope, cwd=os.getcwd())

        def text() -> None:
            print(result["block"])
            if explain:
                for h in result["hits"]:
                    console.print(f"{h['score']:.4f} {h['path']}: {h['explain']}", highlight=False)

        render(as_json, result, text)


@app.command()
def search(
    ctx: typer.Context,
    query: str = typer.Argument(...),
    limit: int = typer.Option(10, "--limit", "-n"),
    project: str = ScopeProject, source: str = ScopeSource, since: str = ScopeSince, until: str = ScopeUntil,
    as_json: bool = JsonOpt,
) -> None:
    """Ids, titles and paths of the best matches (no bodies; use `get` for those).

    Example: memvault search tidepool --limit 5 --since 2026-01-01
    """
    import os

    from memvault.recall.scope import Scope

    with reporting(as_json):
        hits = _service(ctx).search(query, limit, scope=Scope.of(project, source, since, until), cwd=os.getcwd())

        def text() -> None:
            for h in hits:
                console.print(f"{h['score']:.4f}  {h['id']}  {h['path']}", highlight=False)

        render(as_json, {"query": query, "hits": hits}, text)


@app.command()
def timeline(
    ctx: typer.Context,
    node_id: str = typer.Argument(..., help="Anchor node id from `search`."),
    before: int = typer.Option(3), after: int = typer.Option(3), as_json: bool = JsonOpt,
) -> None:
    """Nodes around an anchor, in document order.

    Example: memvault timeline 1f2e3d4c5b6a79880011223344556677 --before 2 --after 2
    """
    with reporting(as_json):
        rows = _service(ctx).timeline(node_id, before, after)

        def text() -> None:
            for r in rows:
                console.print(("→ " if r["anchor"] else "  ") + f"{r['path']}: {r['text'][:160]}", highlight=False)

        render(as_json, rows, text)


@app.command()
def get(ctx: typer.Context, ids: list[str] = typer.Argument(...), as_json: bool = JsonOpt) -> None:
    """Full nodes by id.

    Example: memvault get 1f2e3d4c5b6a79880011223344556677
    """
    with reporting(as_json):
        rows = _service(ctx).get(ids)

        def text() -> None:
            for r in rows:
                console.print(f"[bold]{r['path']}[/bold]\n{r['text']}\n", highlight=False)

        render(as_json, rows, text)


@app.command()
def articles(ctx: typer.Context, as_json: bool = JsonOpt) -> None:
    """List the articles of the vault.

    Example: memvault articles --json
    """
    with reporting(as_json):
        rows = _service(ctx).list_articles()

        def text() -> None:
            for r in rows:
                console.print(f"{r['title']}  ({r['words']} words, {r['citations']} citations)  {r['path']}", highlight=False)

        render(as_json, rows, text)


@app.command()
def read(
    ctx: typer.Context,
    title: str = typer.Argument(..., help="Title or file stem."),
    section: str = typer.Option(None, "--section", help="Only this section (title or path)."),
    as_json: bool = JsonOpt,
) -> None:
    """Print an article (or one section of it).

    Example: memvault read "Postgres Backup" --section Retention
    """
    with reporting(as_json):
        service = _service(ctx)
        data = service.read_section(title, section) if section else service.read_article(title)
        render(as_json, data, lambda: print(data["text"], end=""))


@app.command()
def toc(ctx: typer.Context, title: str = typer.Argument(...), as_json: bool = JsonOpt) -> None:
    """Table of contents of an article.

    Example: memvault toc Tidepool
    """
    with reporting(as_json):
        rows = _service(ctx).article_toc(title)
        render(as_json, rows, lambda: [console.print(f"{r['path']}", highlight=False) for r in rows])


@app.command()
def links(ctx: typer.Context, title: str = typer.Argument(...), as_json: bool = JsonOpt) -> None:
    """Wikilinks out of and into an article.

    Example: memvault links Tidepool --json
    """
    with reporting(as_json):
        data = _service(ctx).article_links(title)

        def text() -> None:
            console.print("out: " + ", ".join(data["out"]))
            console.print("in: " + ", ".join(data["in"]))

        render(as_json, data, text)


def main() -> None:
    app()


# Commands of each area live in their own module and register themselves on `app`.
from memvault.cli import editorial_cmds, ingest_cmds, live, model_cmds, ops_cmds, recall_cmds  # noqa: E402,F401

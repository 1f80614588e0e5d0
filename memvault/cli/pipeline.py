"""Commands of the pipeline: `ingest`, `run`, `redact` and `model`."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from memvault.cli.app import app
from memvault.cli.context import home_settings
from memvault.cli.output import console, err_console, render, reporting
from memvault.cli.params import STAGE_LIST, Engine, JsonFlag, Stage

PANEL = "Pipeline"


@contextmanager
def ingest_progress(enabled: bool) -> Iterator[None]:
    """Show a progress bar (files and bytes, on stderr) while an ingest runs in this process."""
    if not enabled:
        yield
        return
    from memvault.runs.progress import RichProgress, watching

    with RichProgress() as bar, watching(bar):
        yield


@app.command(rich_help_panel=PANEL)
def ingest(
    ctx: typer.Context,
    paths: Annotated[list[Path] | None, typer.Argument(
        metavar="PATH", show_default=False,
        help="Files or folders to read, and only these (default: the sources in memvault.toml).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Ingest transcripts (format detected from content) as a Prefect flow run.

    Without PATH, reads the sources configured in memvault.toml. With PATH
    arguments, reads only those files and folders (the configured sources wait
    for the next `memvault run`). A PATH that does not exist is reported with
    the others' results, and the command exits 1.

    Example: memvault ingest ~/Downloads/chatgpt-export/conversations.json
    """
    from memvault.cli.runner import run_pipeline

    with reporting(as_json):
        home_settings(ctx)  # no home, or invalid settings: say so before anything else
        given = list(paths or [])
        missing = [p for p in given if not p.exists()]
        present = [p for p in given if p.exists()]
        if present or not given:
            with ingest_progress(enabled=not as_json):
                report = run_pipeline(ctx.obj.get("home"), only=["ingest"], paths=[str(p) for p in present],
                                      configured_sources=not given, quiet=as_json)
            result: dict[str, Any] = report["stages"].get("ingest", {})
        else:
            from memvault.stages.ingest_batches import IngestResult

            result = IngestResult().model_dump(mode="json")  # nothing to read: no flow run
        if missing:
            result["errors"] = [{"file": str(p), "line": None, "error": "no such file or folder"} for p in missing] \
                + list(result.get("errors", []))
        render(as_json, result, lambda: _print_ingest(result))
    if missing:
        if not as_json:
            err_console.print("[red]error:[/red] no such file or folder: "
                              + escape(", ".join(str(p) for p in missing)), highlight=False)
        raise typer.Exit(1)


def _print_ingest(result: dict[str, Any]) -> None:
    console.print(f"files seen {result.get('files_seen', 0)}, conversations new {result.get('conversations_new', 0)}, "
                  f"updated {result.get('conversations_updated', 0)}, messages new {result.get('messages_new', 0)}")
    for e in result.get("errors", []):
        console.print(f"  [yellow]{escape(str(e['file']))}:{e.get('line') or '-'}[/yellow]: {escape(str(e['error']))}",
                      highlight=False)


@app.command(rich_help_panel=PANEL)
def run(
    ctx: typer.Context,
    only: Annotated[list[Stage] | None, typer.Option(
        "--only", metavar="STAGE", show_default=False,
        help=f"Run only this stage (repeatable): {STAGE_LIST}.")] = None,
    from_stage: Annotated[Stage | None, typer.Option(
        "--from", metavar="STAGE", show_default=False, help="First stage to run.")] = None,
    until_stage: Annotated[Stage | None, typer.Option(
        "--until", metavar="STAGE", show_default=False, help="Last stage to run.")] = None,
    engine: Annotated[Engine | None, typer.Option(
        "--engine", metavar="ENGINE", show_default=False, help="auto, mlx, openai or none for this run.")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", metavar="NAME", help="Override the configured model for this run.")] = None,
    since: Annotated[str | None, typer.Option(
        "--since", metavar="DATE", help="Only conversations updated since DATE (YYYY-MM-DD or an ISO time).")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Show what would be processed and the model calls; change nothing.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Run the nightly pipeline now, as a Prefect flow run.

    Example: memvault run --from synthesize --until changelog
    """
    from memvault.cli.runner import print_plan, print_report, run_pipeline
    from memvault.runs.progress import LazyBar, watching

    # The index stage's bar (nodes embedded, rate, time left) appears when it starts embedding.
    with reporting(as_json), watching(None if as_json or dry_run else LazyBar("index: embedding nodes"), "index"):
        report = run_pipeline(ctx.obj.get("home"), only=[s.value for s in only] if only else None,
                              from_stage=from_stage.value if from_stage else None,
                              until_stage=until_stage.value if until_stage else None,
                              engine=engine.value if engine else None, model=model, quiet=as_json,
                              since=since, dry_run=dry_run)
        render(as_json, report, lambda: print_plan(report) if dry_run else print_report(report))


@app.command(rich_help_panel=PANEL)
def redact(
    ctx: typer.Context,
    rescan: Annotated[bool, typer.Option("--rescan", help="Apply the current patterns to everything stored.")] = False,
    rewrite_history: Annotated[bool, typer.Option(
        "--rewrite-history", help="Also rewrite every commit of the vault's git branch (the old one is kept "
                                  "under refs/memvault/backup/).")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Redact secrets already stored (ledger, index, vault) with the current patterns.

    Git history older than the rescan is rewritten only with --rewrite-history.

    Example: memvault redact --rescan --rewrite-history --json
    """
    from memvault.errors import UsageError
    from memvault.ops.rescan import rescan as run_rescan

    with reporting(as_json):
        if not rescan:
            raise UsageError("nothing to do: `memvault redact --rescan` applies the current patterns "
                             "(built-in plus [ingest] redact_patterns) to everything already stored"
                             + (" (--rewrite-history goes with --rescan)" if rewrite_history else ""))
        settings = home_settings(ctx)
        report = run_rescan(settings, rewrite_history=rewrite_history)
        data = report.model_dump(mode="json")
        render(as_json, data, lambda: _print_rescan(data))


def _print_rescan(data: dict[str, Any]) -> None:
    found = ", ".join(f"{k} {v}" for k, v in sorted(data["redactions"].items())) or "none"
    console.print(f"secrets redacted: {found}")
    for place, n in data["ledger"].items():
        if n:
            console.print(f"  ledger {place}: {n} row(s) changed", highlight=False)
    console.print(f"  conversations changed: {data['conversations']}")
    console.print(f"  index: {data['index_documents_removed']} document(s), {data['index_nodes_removed']} node(s) "
                  "removed; the next `memvault run` re-indexes them from the redacted text")
    for path in data["vault_files"]:
        console.print(f"  vault {path}: rewritten", highlight=False)
    if data["vault_files"]:
        console.print("  vault: " + ("committed" if data["committed"] else "not committed"))
    for path in data["backups"]:
        console.print(f"  [yellow]backup {path} may still hold originals; delete it once you trust the "
                      "current ledger[/yellow]", highlight=False)
    history = data.get("history")
    if history and history["backup_ref"]:
        console.print(f"  git: {history['commits_changed']} of {history['commits']} commit(s) rewritten, "
                      f"{history['blobs_changed']} file version(s) redacted; old history kept under "
                      f"{history['backup_ref']}", highlight=False)
        for path in history["worktree_differs"]:
            console.print(f"  [yellow]{path} differs from the rewritten history: it still holds a secret in the "
                          "working tree (not a file memvault rewrites)[/yellow]", highlight=False)
    console.print(f"[bold]note:[/bold] {data['note']}", highlight=False)


@app.command(rich_help_panel=PANEL)
def model(
    ctx: typer.Context,
    probe: Annotated[bool, typer.Option(
        "--probe", help="Choose the engine as a run would (auto loads or probes) and say why.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """The configured model engine, the hash of each stage's prompt, and the run budget.

    A prompt's hash covers its template and the vault's Meta pages; it changes when either is edited.

    Example: memvault model --probe
    """
    from memvault.prompts import prompt_hashes

    with reporting(as_json):
        settings = home_settings(ctx)
        data: dict[str, Any] = {"engine": settings.engine, "mlx_model": settings.model.mlx_model,
                "openai_base_url": settings.model.openai_base_url, "openai_model": settings.model.openai_model,
                "prompts": prompt_hashes(settings.home / "Meta"),
                "budget": {"max_tokens": settings.budget.max_tokens, "max_seconds": settings.budget.max_seconds}}
        if probe:
            from memvault.ops.run import build_engine

            engine, reason = build_engine(settings)
            data["chosen"] = {"engine": engine.name, "reason": reason}

        def text() -> None:
            console.print(f"engine: {data['engine']} (mlx_model {data['mlx_model'] or 'unset'}, "
                          f"server {data['openai_base_url']})", highlight=False)
            for stage, digest in data["prompts"].items():
                console.print(f"prompt {stage}: {digest}")
            console.print(f"budget: {data['budget']['max_tokens']} tokens, {data['budget']['max_seconds']:g} s per run")
            if "chosen" in data:
                console.print(f"a run would use: {data['chosen']['reason']}", highlight=False)

        render(as_json, data, text)

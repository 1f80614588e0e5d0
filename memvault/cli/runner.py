"""Running the pipeline from the terminal: a real Prefect flow run, with its report printed."""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.markup import escape

from memvault.cli.output import console, plain


def run_pipeline(home: Any, *, only: list[str] | None = None, from_stage: str | None = None,
                 until_stage: str | None = None, paths: list[str] | None = None, engine: str | None = None,
                 model: str | None = None, quiet: bool = False, since: str | None = None,
                 dry_run: bool = False, configured_sources: bool = True) -> dict[str, Any]:
    """Run the nightly flow (or a slice); validation errors surface before Prefect starts.

    So does a writer lock held by another process: waiting for it (up to `lock_timeout_s`)
    happens before a Prefect server is started, and a refusal is only the clear message. A
    dry run is no flow run: it reads the ledger (read-only) and returns the plan.
    ``configured_sources=False`` reads only ``paths`` (`memvault ingest PATH`).
    """
    from memvault.runs.budget import parse_since
    from memvault.lock import wait_for_drainer, wait_until_free
    from memvault.ops.home import require_home
    from memvault.config.prefect_env import apply_prefect_defaults
    from memvault.config.settings import load_settings
    from tasks.pipeline import VAULT_STAGES, select_stages

    apply_prefect_defaults(quiet=quiet)
    settings = load_settings(home)
    require_home(settings.home)
    stages = select_stages(only, from_stage, until_stage)  # misuse → UsageError before a server starts
    if not dry_run and set(stages) & VAULT_STAGES:
        from stores.vault import Vault

        Vault(settings.home).check_writable()  # wrong branch, merge in progress: refused before Prefect starts
    since_at = parse_since(since)
    if not dry_run:
        from memvault.cli.output import err_console

        # Right after a capture the drainer holds the lock for a few seconds: wait it out.
        wait_for_drainer(settings.state_dir, settings.live.drain_wait_s,
                         lambda line: err_console.print(line, highlight=False, markup=False))
        wait_until_free(settings.state_dir, settings.lock_timeout_s)
    from flows.nightly import RunOptions, execute, nightly

    # Validated by pydantic: the CLI's plain strings become the flow's Literal stage and engine names.
    options = RunOptions.model_validate(
        {"home": str(settings.home), "only": only, "from_stage": from_stage, "until_stage": until_stage,
         "paths": paths or [], "configured_sources": configured_sources, "engine": engine, "model": model,
         "since": since_at, "dry_run": dry_run})
    if dry_run:
        return execute(options)
    with _terminal_without_tracebacks():
        return nightly(options)


class _MemvaultErrorFilter(logging.Filter):
    """Drops log records carrying a MemvaultError: the CLI prints that error's message itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        from memvault.errors import MemvaultError

        return not (record.exc_info and isinstance(record.exc_info[1], MemvaultError))


@contextmanager
def _terminal_without_tracebacks() -> Iterator[None]:
    """Prefect logs a failed flow's exception with its traceback; in the terminal a MemvaultError
    (another writer holds the lock, say) is followed by our own one-line message instead. Only
    the console handler is filtered: the Prefect UI still gets the full log."""
    from prefect.logging.handlers import PrefectConsoleHandler

    handlers = [h for h in logging.getLogger().handlers if isinstance(h, PrefectConsoleHandler)]
    quiet = _MemvaultErrorFilter()
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)


def print_plan(plan: dict[str, Any]) -> None:
    """The dry run's plan: what a run would process and the model calls it would make."""
    console.print(f"dry run (nothing changed): stages {', '.join(plan['stages'])}; engine {plan['engine']}"
                  + (f"; since {plan['since']}" if plan.get("since") else ""))
    console.print(f"  transcript files changed: {plan.get('transcript_files_changed', 0)}")
    console.print(f"  conversations to chunk: {plan['conversations_to_chunk']}")
    console.print(f"  chunks to cluster: {plan['chunks_to_cluster']}")
    buckets = plan["buckets_to_synthesize"]
    console.print(f"  buckets to synthesize: {len(buckets)} ({sum(buckets.values())} chunks)")
    calls = plan["estimated_model_calls"]
    console.print(f"  estimated model calls: {calls['total']} (chunk {calls['chunk']}, cluster {calls['cluster']}, "
                  f"synthesize {calls['synthesize']})")
    if plan.get("note"):
        console.print(f"  note: {plan['note']}", highlight=False)


def print_report(report: dict[str, Any]) -> None:
    console.print(f"run {report['run_id']}: [bold]{report['status']}[/bold] (engine {report['engine']})")
    for name, s in report["stages"].items():
        counts = ", ".join(f"{k} {v}" for k, v in s.items()
                           if k not in ("status", "seconds") and not isinstance(v, (dict, list)) and v is not None)
        console.print(f"  {name:<10} {s.get('status'):<10} {s.get('seconds', 0):6.1f}s  {counts}", highlight=False)
    for key in ("articles_created", "articles_updated"):
        if report[key]:
            console.print(f"  {key.replace('_', ' ')}: {', '.join(report[key])}")
    for r in report["articles_rejected"]:
        plain(f"  rejected {r['article']}: {'; '.join(r['reasons'])}")
    left = report.get("backlog")
    if left and (left.get("conversations_left") or left.get("chunks_unassigned") or left.get("chunks_pending")):
        runs = left.get("estimated_runs_to_finish")
        console.print(f"  left: {left['conversations_left']} conversation(s) to chunk, {left['chunks_unassigned']} "
                      f"chunk(s) to cluster, {left['chunks_pending']} chunk(s) in {left['buckets_pending']} bucket(s) "
                      "to synthesize; " + (f"about {runs} more run(s) at this run's rate" if runs is not None
                                           else "no estimate yet: this run made no progress on it"))
    if (report.get("budget") or {}).get("stopped"):
        console.print(f"  budget: {report['budget']['stopped']} — the rest waits for the next run")
    for e in report["stages"].get("ingest", {}).get("errors", [])[:20]:
        console.print(f"  [yellow]{escape(str(e['file']))}:{e.get('line') or '-'}[/yellow]: {escape(str(e['error']))}",
                      highlight=False)

"""The nightly flow: ingest → chunk → cluster → synthesize → wikify → normalize → changelog → index.

Each stage is a Prefect task; the order is `tasks.pipeline.STAGES`, which the CLI slices.
The flow holds a writing session (the writer lock and the open ledger, memvault/ops/session.py)
for the whole run and writes the run report.
"""

import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import (create_markdown_artifact, create_progress_artifact, create_table_artifact,
                               update_progress_artifact)
from pydantic import BaseModel, Field

from memvault.budget import Budget, parse_since
from memvault.ops.plan import backlog, dry_run_plan
from memvault.embeddings import Embedder
from memvault.ops.home import require_home
from memvault.ops.session import writing
from memvault.settings import load_settings
from tasks.changelog import changelog
from tasks.chunk import chunk
from tasks.cluster import cluster
from tasks.context import StageContext, build_engine
from tasks.index import index
from tasks.ingest import ingest
from tasks.normalize import normalize
from tasks.pipeline import select_stages
from memvault.reports import build_report, markdown, save_report
from tasks.synthesize import synthesize
from tasks.wikify import wikify

TASKS = {"ingest": ingest, "chunk": chunk, "cluster": cluster, "synthesize": synthesize,
         "wikify": wikify, "normalize": normalize, "index": index}


class RunOptions(BaseModel):
    """Parameters of one run (validated by Prefect from the UI, a deployment or the CLI)."""

    home: str | None = Field(default=None, description="Memory home; default MEMVAULT_HOME or ~/memvault")
    only: list[str] | None = Field(default=None, description="Run only these stages")
    from_stage: str | None = Field(default=None, description="First stage to run")
    until_stage: str | None = Field(default=None, description="Last stage to run")
    paths: list[str] = Field(default_factory=list, description="Extra transcript files or folders to ingest")
    engine: str | None = Field(default=None, description="Override the configured engine for this run")
    model: str | None = Field(default=None, description="Override the configured model for this run")
    since: str | None = Field(default=None, description="Only conversations updated since this date (YYYY-MM-DD or ISO time)")
    dry_run: bool = Field(default=False, description="Report what would be processed and the model calls; change nothing")


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def execute(options: RunOptions, log: Any, progress: Any = None, engine: Any = None) -> dict[str, Any]:
    """Run the selected stages in a writing session (under the writer lock); returns the run report.

    ``progress(done, total, stage)`` is called before each stage and at the end (the flow
    turns it into a Prefect progress artifact). ``engine`` replaces the configured one (tests
    and benchmarks pass a FakeEngine or a loaded MlxEngine). With ``options.dry_run`` nothing
    runs and nothing is written: the plan is returned instead of a report.
    """
    overrides: dict[str, Any] = {"engine": options.engine}
    settings = load_settings(options.home, **overrides)
    require_home(settings.home)
    stages = select_stages(options.only, options.from_stage, options.until_stage)
    since = parse_since(options.since)
    if options.dry_run:
        from tasks.ingest import configured_roots, discover

        roots = configured_roots(settings) + [("auto", Path(p).expanduser().resolve()) for p in options.paths]
        return dry_run_plan(settings, since, discover(roots)[0], stages)
    run_id = new_run_id()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with writing(settings, f"memvault run {run_id}") as session:
        engine, reason = (engine, f"engine {engine.name} (given by the caller)") if engine is not None \
            else build_engine(settings, options.model)
        log.info("run %s: stages %s; engine %s (%s)", run_id, ", ".join(stages), engine.name, reason)
        ledger = session.ledger
        ctx = StageContext(settings=settings, ledger=ledger, vault=session.vault,
                           embedder=Embedder(settings.embeddings.batch_size), run_id=run_id, engine=engine,
                           extra_paths=[Path(p).expanduser().resolve() for p in options.paths],
                           since=since, budget=Budget(settings.budget.max_tokens, settings.budget.max_seconds))
        ledger.start_run(run_id, engine.name)
        results: dict[str, dict[str, Any]] = {}
        try:
            for done, name in enumerate(stages):
                if progress:
                    progress(done, len(stages), name)
                t0 = time.perf_counter()
                try:
                    if name == "changelog":
                        seconds = {k: v["seconds"] for k, v in results.items()}
                        tokens = sum(int(v.get("tokens", 0)) for v in results.values())
                        out = changelog(ctx, seconds, tokens)
                    else:
                        out = TASKS[name](ctx)
                    out = {"status": "completed", **out}
                except Exception as exc:  # noqa: BLE001 - recorded in the report, then re-raised
                    results[name] = {"status": "failed", "seconds": round(time.perf_counter() - t0, 3),
                                     "error": f"{type(exc).__name__}: {exc}"}
                    raise
                out["seconds"] = round(time.perf_counter() - t0, 3)
                results[name] = out
                ledger.record_stage(run_id, name, out["status"], out["seconds"], out)
            if progress:
                progress(len(stages), len(stages), None)
        finally:
            finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
            report = build_report(run_id, engine.name, reason, results, ctx.touched_articles, ctx.rejected,
                                  started, finished)
            report["embedded_texts"] = ctx.embedder.texts
            report["budget"] = ctx.budget.summary()
            report["backlog"] = backlog(ledger, since, ctx.units_done, results)
            ledger.finish_run(run_id, report["status"], report)
            # Prefect keeps task parameters alive; drop the context's reference so no DuckDB
            # handle outlives the run (the session closes it; DuckDB warns about leaks at exit).
            ctx.ledger = None  # type: ignore[assignment]
            save_report(settings.runs_dir, report)
    return report


def publish(report: dict[str, Any]) -> None:
    """The run report as Prefect artifacts (Markdown + a table of stage counts)."""
    key = "memvault-run-report"
    create_markdown_artifact(markdown(report), key=key, description=f"memvault run {report['run_id']}")
    rows = [{"stage": n, "status": s.get("status"), "seconds": s.get("seconds", 0),
             **{k: v for k, v in s.items() if isinstance(v, (int, float)) and k != "seconds"}}
            for n, s in report["stages"].items()]
    create_table_artifact(rows, key="memvault-stage-counts", description="Counts per stage")


@flow(name="nightly", log_prints=False)
def nightly(options: RunOptions = RunOptions()) -> dict[str, Any]:
    """The whole pipeline (or a slice of it) over one memory home."""
    artifact = create_progress_artifact(0.0, key="memvault-run-progress", description="nightly: starting")

    def progress(done: int, total: int, stage: str | None) -> None:
        # One progress artifact per run, updated as each stage starts: the UI shows where a long run is.
        update_progress_artifact(artifact, 100.0 * done / max(total, 1),
                                 description=f"nightly: stage {stage} ({done + 1}/{total})" if stage else "nightly: done")

    report = execute(options, get_run_logger(), progress)
    publish(report)
    return report

"""The nightly flow: ingest → chunk → cluster → synthesize → wikify → normalize → changelog → index.

Each stage is a Prefect task; the order is `tasks.pipeline.STAGES`, which the CLI slices.
The flow holds a writing session (the writer lock and the open ledger, memvault/ops/session.py)
for the whole run and writes the run report.
"""

import logging
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

from prefect import flow
from prefect.context import FlowRunContext
from prefect.settings import PREFECT_LOGGING_LEVEL
from prefect.client.schemas.objects import State
from prefect.states import Completed
from prefect.artifacts import (create_markdown_artifact, create_progress_artifact, create_table_artifact,
                               update_progress_artifact)
from pydantic import BaseModel, Field, field_validator

from memvault.budget import Budget
from memvault.ops.plan import backlog, dry_run_plan
from memvault.embeddings.select import embedder_for
from stores.vector_cache import cached
from memvault.engines.base import Engine
from memvault.engines.settings import EngineName
from memvault.ops.home import require_home
from memvault.lock import wait_for_drainer
from memvault.logs import show_info
from memvault.ops.session import writing
from memvault.progress import Progress
from memvault.settings import load_settings
from tasks.changelog import changelog
from tasks.chunk import chunk
from tasks.cluster import cluster
from tasks.context import StageContext, build_engine
from tasks.index import index
from tasks.ingest import ingest
from tasks.normalize import normalize
from tasks.pipeline import STAGES, VAULT_STAGES, StageName, select_stages
from memvault.reports import build_report, key_counts, markdown, save_report
from tasks.synthesize import synthesize
from tasks.wikify import wikify

log = logging.getLogger(__name__)


class StageTask(Protocol):
    """A stage's Prefect task as the flow calls it: the context in, the report's dict out."""

    def __call__(self, ctx: StageContext) -> dict[str, Any]: ...


TASKS: dict[str, StageTask] = {"ingest": ingest, "chunk": chunk, "cluster": cluster, "synthesize": synthesize,
         "wikify": wikify, "normalize": normalize, "index": index}


class RunOptions(BaseModel):
    """Parameters of one run (validated by Prefect from the UI, a deployment or the CLI).

    Stage and engine names are Literals and `since` a datetime, so the Prefect UI offers the
    choices and refuses a typo before a run starts; a deployment's JSON strings validate too.
    """

    home: str | None = Field(default=None, description="Memory home; default MEMVAULT_HOME or ~/memvault")
    only: list[StageName] | None = Field(default=None, description="Run only these stages")
    from_stage: StageName | None = Field(default=None, description="First stage to run")
    until_stage: StageName | None = Field(default=None, description="Last stage to run")
    paths: list[str] = Field(default_factory=list, description="Extra transcript files or folders to ingest")
    configured_sources: bool = Field(
        default=True, description="Also read the [[sources]] of memvault.toml (false: only `paths`)"
    )
    engine: EngineName | None = Field(default=None, description="Override the configured engine for this run")
    model: str | None = Field(default=None, description="Override the configured model for this run")
    since: datetime | None = Field(
        default=None, description="Only conversations updated since this date or time (a date means its midnight, UTC)"
    )
    dry_run: bool = Field(default=False, description="Report what would be processed and the model calls; change nothing")

    @field_validator("since")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        # A date or a time without zone is read as UTC, as `--since` always has been.
        return value.replace(tzinfo=timezone.utc) if value is not None and value.tzinfo is None else value


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a random suffix."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def execute(options: RunOptions, progress: Progress | None = None, engine: Engine | None = None) -> dict[str, Any]:
    """Run the selected stages in a writing session (under the writer lock); returns the run report.

    ``progress`` counts stages: labelled with each stage as it starts, advanced as it ends
    (the flow shows it as a Prefect progress artifact). ``engine`` replaces the configured one
    (tests and benchmarks pass a FakeEngine or a loaded MlxEngine). With ``options.dry_run``
    nothing runs and nothing is written: the plan is returned instead of a report.

    Long because it is the run's one try/finally: whatever happens to a stage, the report is
    built, recorded in the ledger and saved, and the ledger closed.
    """
    overrides: dict[str, Any] = {"engine": options.engine}
    if not options.configured_sources:
        overrides["sources"] = []
    settings = load_settings(options.home, **overrides)
    require_home(settings.home)
    stages = select_stages(options.only, options.from_stage, options.until_stage)
    since = options.since
    if options.dry_run:
        from tasks.ingest import configured_roots, discover

        roots = configured_roots(settings) + [("auto", Path(p).expanduser().resolve()) for p in options.paths]
        return dry_run_plan(settings, since, discover(roots)[0], stages)
    # A scheduled run that starts while the live drainer stores a capture waits for it.
    wait_for_drainer(settings.state_dir, settings.live.drain_wait_s, log.info)
    run_id = new_run_id()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with writing(settings, f"memvault run {run_id}") as session:
        if set(stages) & VAULT_STAGES:
            # Before any stage writes: a run on the wrong branch would strand its commit there.
            session.vault.check_writable()
        engine, reason = (engine, f"engine {engine.name} (given by the caller)") if engine is not None \
            else build_engine(settings, options.model)
        log.info("run %s: stages %s; engine %s (%s)", run_id, ", ".join(stages), engine.name, reason)
        ledger = session.ledger
        budget = Budget(settings.budget.max_tokens, settings.budget.max_seconds)
        ctx = StageContext(settings=settings, ledger=ledger, vault=session.vault,
                           embedder=cached(embedder_for(settings), settings.state_dir), run_id=run_id, engine=engine,
                           extra_paths=[Path(p).expanduser().resolve() for p in options.paths],
                           since=since, budget=budget)
        ledger.start_run(run_id, engine.name)
        results: dict[str, dict[str, Any]] = {}
        try:
            if progress:
                progress.begin(len(stages))
            for done, name in enumerate(stages):
                if progress:
                    progress.advance(0, f"stage {name} ({done + 1}/{len(stages)})")
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
                    progress.advance(1)
            if progress:
                progress.done()
        finally:
            finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
            report = build_report(run_id, engine.name, reason, results, ctx.touched_articles, ctx.rejected,
                                  started, finished)
            report["embedded_texts"] = ctx.embedder.texts  # what reached the model; the cache answered the rest
            report["embedding_cache_hits"] = getattr(ctx.embedder, "hits", 0)
            report["budget"] = budget.summary()
            report["backlog"] = backlog(ledger, since, ctx.units_done, results)
            ledger.finish_run(run_id, report["status"], report)
            # Prefect keeps task parameters alive; drop the context's reference so no DuckDB
            # handle outlives the run (the session closes it; DuckDB warns about leaks at exit).
            ctx.ledger = None  # type: ignore[assignment]
            save_report(settings.runs_dir, report)
    return report


def publish(report: dict[str, Any]) -> None:
    """The run report as Prefect artifacts: the whole report in Markdown, and a narrow table
    (stage, status, seconds, the few counts that say what the stage did)."""
    key = "memvault-run-report"
    create_markdown_artifact(markdown(report), key=key, description=f"memvault run {report['run_id']}")
    rows = [{"stage": n, "status": s.get("status"), "seconds": s.get("seconds", 0), "counts": key_counts(n, s)}
            for n, s in report["stages"].items()]
    create_table_artifact(rows, key="memvault-stage-counts", description=f"Key counts per stage, run {report['run_id']}")


# Names of the Completed states a run ends in when it did not go cleanly (the Prefect UI shows
# the name on the run's badge; the type stays COMPLETED: the run finished, and what it did stands).
COMPLETED_WITH_ERRORS = "Completed with errors"
COMPLETED_WITH_REJECTIONS = "Completed with rejections"


def run_summary(report: dict[str, Any]) -> str:
    """One line for the state message: the run id, then what went wrong (or what it did)."""
    errors = sum(len(s.get("errors") or []) for s in report["stages"].values())
    rejected = len(report.get("articles_rejected") or [])
    parts = [f"{errors} error(s)" if errors else "",
             f"{rejected} article(s) rejected" if rejected else "",
             f"{len(report.get('articles_created') or [])} created, {len(report.get('articles_updated') or [])} updated"]
    return f"run {report['run_id']}: " + "; ".join(p for p in parts if p)


def final_state(report: dict[str, Any]) -> State:
    """The flow run's final state: Completed, or a named Completed state when there were errors
    (unreadable transcript lines, failed units) or rejected articles. A stage that raised
    makes the run Failed before this is reached."""
    name = None
    if report["status"] == "completed_with_errors":
        name = COMPLETED_WITH_ERRORS
    elif report.get("articles_rejected"):
        name = COMPLETED_WITH_REJECTIONS
    if name is None:
        return Completed(data=report, message=run_summary(report))
    return Completed(data=report, message=run_summary(report), name=name)


def run_name() -> str:
    """The flow run's name: `nightly 2026-12-01 03:00` (its scheduled or start time, local),
    plus the slice when it is not the whole pipeline (`· ingest`, `· chunk…index`, `· dry run`)."""
    ctx = FlowRunContext.get()
    when = ctx.flow_run.expected_start_time if ctx and ctx.flow_run else None
    stamp = (when or datetime.now(timezone.utc)).astimezone().strftime("%Y-%m-%d %H:%M")
    raw = (ctx.parameters or {}).get("options") if ctx else None
    options = raw if isinstance(raw, RunOptions) else RunOptions.model_validate(raw or {})
    suffix = []
    if options.only:
        suffix.append("+".join(options.only))
    elif options.from_stage or options.until_stage:
        suffix.append(f"{options.from_stage or STAGES[0]}…{options.until_stage or STAGES[-1]}")
    if options.dry_run:
        suffix.append("dry run")
    return " · ".join([f"nightly {stamp}", *suffix])


class ArtifactProgress:
    """One Prefect progress artifact per run, updated as each stage starts: the UI shows where a long run is."""

    def __init__(self) -> None:
        # Called from sync code, Prefect's sync-compatible helper returns the UUID itself.
        self._artifact: UUID = create_progress_artifact(0.0, key="memvault-run-progress",  # type: ignore[assignment]
                                                        description="nightly: starting")
        self._total = 0
        self._done = 0

    def begin(self, total: int, label: str = "") -> None:
        self._total, self._done = total, 0

    def advance(self, amount: int, label: str = "") -> None:
        self._done += amount
        if label:
            update_progress_artifact(self._artifact, 100.0 * self._done / max(self._total, 1),
                                     description=f"nightly: {label}")

    def done(self) -> None:
        update_progress_artifact(self._artifact, 100.0, description="nightly: done")


@flow(name="nightly", log_prints=False, flow_run_name=run_name)
def nightly(options: RunOptions = RunOptions()) -> dict[str, Any]:
    """The whole pipeline (or a slice of it) over one memory home; returns the run report.

    The flow returns a state (see `final_state`): Prefect makes it the run's final state, and
    its data (the report) what calling the flow returns — hence the ignores below.
    """
    show_info(PREFECT_LOGGING_LEVEL.value())
    report = execute(options, ArtifactProgress())
    if options.dry_run:  # a plan, not a report: nothing ran, nothing to publish
        return Completed(data=report, message="dry run: nothing changed")  # type: ignore[return-value]
    publish(report)
    return final_state(report)  # type: ignore[return-value]

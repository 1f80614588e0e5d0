"""The nightly flow: ingest → chunk → cluster → synthesize → wikify → normalize → changelog → index.

Each stage is a Prefect task (tasks/stages.py) over its core function; the order is
`tasks.pipeline.STAGES`, which the CLI slices. The run's bookkeeping — the writer lock, the
stage context and the run report — is memvault/ops/run.py; this module only loops the stages.
"""

import logging
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect import flow
from prefect.context import FlowRunContext
from prefect.settings import PREFECT_LOGGING_LEVEL
from prefect.client.schemas.objects import State
from prefect.states import Completed
from prefect.artifacts import (create_markdown_artifact, create_progress_artifact, create_table_artifact,
                               update_progress_artifact)
from pydantic import BaseModel, Field, field_validator

from memvault.engines.base import Engine
from memvault.engines.settings import EngineName
from memvault.logs import show_info
from memvault.ops.home import require_home
from memvault.ops.plan import dry_run_plan
from memvault.ops.run import Run, running
from memvault.runs.progress import Progress
from memvault.runs.reports import key_counts, markdown
from memvault.config.settings import Settings, load_settings
from tasks.pipeline import STAGES, VAULT_STAGES, StageName, select_stages
from tasks.stages import TASKS

log = logging.getLogger(__name__)


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

    def settings(self) -> Settings:
        """The home's settings with this run's overrides (engine, sources); the home must exist."""
        overrides: dict[str, Any] = {"engine": self.engine}
        if not self.configured_sources:
            overrides["sources"] = []
        settings = load_settings(self.home, **overrides)
        require_home(settings.home)
        return settings

    def extra_paths(self) -> list[Path]:
        """The ad hoc paths to ingest, absolute."""
        return [Path(p).expanduser().resolve() for p in self.paths]


def execute(options: RunOptions, progress: Progress | None = None, engine: Engine | None = None) -> dict[str, Any]:
    """Run the selected stages in a writing session (under the writer lock); returns the run report.

    ``progress`` counts stages: labelled with each stage as it starts, advanced as it ends
    (the flow shows it as a Prefect progress artifact). ``engine`` replaces the configured one
    (tests and benchmarks pass a FakeEngine or a loaded MlxEngine). With ``options.dry_run``
    nothing runs and nothing is written: the plan is returned instead of a report.
    """
    settings = options.settings()
    stages = select_stages(options.only, options.from_stage, options.until_stage)
    if options.dry_run:
        return dict(dry_run_plan(settings, options.since, options.extra_paths(), stages))
    with running(settings, stages, writes_vault=bool(set(stages) & VAULT_STAGES), paths=options.extra_paths(),
                 since=options.since, model=options.model, engine=engine) as run:
        run_stages(run, stages, progress)
    return run.report


def run_stages(run: Run, stages: list[str], progress: Progress | None = None) -> None:
    """Run ``stages`` in order as Prefect tasks, recording each one's report on ``run``; a
    stage that raises is recorded as failed and ends the run."""
    if progress:
        progress.begin(len(stages))
    for done, name in enumerate(stages):
        if progress:
            progress.advance(0, f"stage {name} ({done + 1}/{len(stages)})")
        t0 = time.perf_counter()
        try:
            result = TASKS[name](run.ctx)
        except Exception as exc:  # noqa: BLE001 - recorded in the report, then re-raised
            run.failed(name, time.perf_counter() - t0, exc)
            raise
        run.completed(name, result.report(), time.perf_counter() - t0)
        if progress:
            progress.advance(1)
    if progress:
        progress.done()


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

"""One nightly run's bookkeeping: its context built in one place, its report in another.

`running` waits for the live drainer, takes the writer lock (memvault/ops/session.py), builds
the run's `StageContext` — settings, open stores, embedder, engine, budget, run id — and
starts the run in the ledger; whatever happens to the stages, it then builds the report,
records it in the ledger, saves it under .memvault/runs/ and closes the ledger. The flow
(flows/nightly.py) runs the stages in between and records each one's result on the `Run`.
"""

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memvault.runs.budget import Budget
from memvault.embeddings.select import embedder_for, topic_embedder_for
from memvault.engines import make_engine
from memvault.engines.base import Engine
from memvault.lock import wait_for_drainer
from memvault.ops.plan import backlog
from memvault.ops.session import writing
from memvault.runs.reports import build_report, save_report
from memvault.config.settings import Settings
from memvault.stages.context import StageContext
from stores.vector_cache import cached

log = logging.getLogger(__name__)


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a random suffix."""
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def build_engine(settings: Settings, model_override: str | None = None) -> tuple[Engine, str]:
    """The run's model engine and a one-line reason for the choice (for the run report)."""
    model = settings.model
    if model_override:
        # `--model` names the model of whichever engine is chosen.
        model = model.model_copy(update={"mlx_model": model_override, "openai_model": model_override})
    return make_engine(model, settings.engine, record_to=settings.state_dir)


@dataclass
class Run:
    """A run under way: the context every stage receives, and what its report adds."""

    ctx: StageContext
    budget: Budget
    engine_reason: str
    started: str
    report: dict[str, Any] = field(default_factory=dict)  # set when `running` ends

    def completed(self, name: str, out: dict[str, Any], seconds: float) -> None:
        """Record a stage's report (its counts) in the run and in the ledger."""
        out = {"status": "completed", **out, "seconds": round(seconds, 3)}
        self.ctx.reports[name] = out
        self.ctx.ledger.record_stage(self.ctx.run_id, name, out["status"], out["seconds"], out)

    def failed(self, name: str, seconds: float, exc: BaseException) -> None:
        """Record a stage that raised (the report says so; the run then fails)."""
        self.ctx.reports[name] = {"status": "failed", "seconds": round(seconds, 3),
                                  "error": f"{type(exc).__name__}: {exc}"}


@contextmanager
def running(settings: Settings, stages: list[str], *, writes_vault: bool, paths: list[Path],
            since: datetime | None = None, model: str | None = None, engine: Engine | None = None) -> Iterator[Run]:
    """Hold the writer lock for one run of ``stages`` and yield it; its report is built,
    recorded and saved when the block ends, whatever happened in it (``Run.report``).

    ``engine`` replaces the configured one (tests and benchmarks); ``writes_vault``: some of
    the stages write the vault, which must then be on its branch before any of them runs.
    """
    # A scheduled run that starts while the live drainer stores a capture waits for it.
    wait_for_drainer(settings.state_dir, settings.live.drain_wait_s, log.info)
    run_id, started = new_run_id(), _now()
    with writing(settings, f"memvault run {run_id}") as session:
        if writes_vault:
            # Before any stage writes: a run on the wrong branch would strand its commit there.
            session.vault.check_writable()
        engine, reason = (engine, f"engine {engine.name} (given by the caller)") if engine is not None \
            else build_engine(settings, model)
        log.info("run %s: stages %s; engine %s (%s)", run_id, ", ".join(stages), engine.name, reason)
        budget = Budget(settings.budget.max_tokens, settings.budget.max_seconds)
        topics = topic_embedder_for(settings)
        ctx = StageContext(settings=settings, ledger=session.ledger, vault=session.vault,
                           embedder=cached(embedder_for(settings), settings.state_dir), run_id=run_id, engine=engine,
                           extra_paths=paths, since=since, budget=budget,
                           topic_embedder=cached(topics, settings.state_dir) if topics is not None else None)
        run = Run(ctx, budget, reason, started)
        ctx.ledger.start_run(run_id, engine.name)
        try:
            yield run
        finally:
            _finish(run)


def _finish(run: Run) -> None:
    """Build the run's report (``run.report``), record it in the ledger and save it; the
    context lets go of the ledger."""
    ctx = run.ctx
    report = build_report(ctx.run_id, ctx.engine.name, run.engine_reason, ctx.reports, ctx.touched_articles,
                          ctx.rejected, run.started, _now())
    # What reached the models (the topic stages' MiniLM too, when the home embeds with another); the cache answered the rest.
    embedders = [ctx.embedder, *([ctx.topic_embedder] if ctx.topic_embedder is not None else [])]
    report["embedded_texts"] = sum(e.texts for e in embedders)
    report["embedding_cache_hits"] = sum(getattr(e, "hits", 0) for e in embedders)
    report["budget"] = run.budget.summary()
    report["backlog"] = backlog(ctx.ledger, ctx.since, ctx.units_done, ctx.reports)
    ctx.ledger.finish_run(ctx.run_id, report["status"], report)
    # Prefect keeps task parameters alive; drop the context's reference so no DuckDB handle
    # outlives the run (the session closes it; DuckDB warns about leaks at exit).
    ctx.ledger = None  # type: ignore[assignment]
    save_report(ctx.settings.runs_dir, report)
    run.report = report

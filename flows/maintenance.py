"""The weekly maintenance flow: compaction, a full edge rebuild, near-duplicate merging,
age tiers, retired index directories and a ledger checkpoint, under the writer lock.

Each step is a named task over a pure function of memvault/ops/maintenance.py; the flow publishes
a Markdown artifact (key "memvault-maintenance-report") and a progress artifact as it goes.
"""

import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple
from uuid import UUID

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NONE
from pydantic import BaseModel, Field, field_validator

from memvault.ops import maintenance as ops
from memvault.ops.home import require_home
from memvault.ops.session import Session, writing
from memvault.config.settings import Settings, load_settings
from stores.nodes import NodeIndex

STEPS = ("merge", "edges", "tiers", "compact", "retire", "checkpoint")
INDEX_STEPS = ("merge", "edges", "tiers", "compact")


class MaintenanceOptions(BaseModel):
    """Parameters of one maintenance run (validated by Prefect from the UI, a deployment or the CLI)."""

    home: str | None = Field(default=None, description="Memory home; default MEMVAULT_HOME or ~/memvault")
    steps: list[str] | None = Field(default=None, description=f"Run only these steps, of {', '.join(STEPS)}")
    cleanup_after_hours: float | None = Field(
        default=None, ge=0, description="Override index.cleanup_after_hours for this run")

    @field_validator("steps")
    @classmethod
    def _known(cls, value: list[str] | None) -> list[str] | None:
        unknown = sorted(set(value or []) - set(STEPS))
        if unknown:
            raise ValueError(f"unknown step(s) {', '.join(unknown)}; choose from {', '.join(STEPS)}")
        return value


# Each step: its task name, what it does (a pure function of memvault/ops/maintenance.py over
# the step's inputs) and the log line its result makes.
Work = Callable[["StepInputs"], Mapping[str, Any]]


class StepInputs(NamedTuple):
    session: Session
    nodes: NodeIndex | None  # None before the first run built the index
    settings: Settings
    margin_hours: float

    def node_index(self) -> NodeIndex:
        assert self.nodes is not None  # the flow skips the index steps without an index
        return self.nodes


STEP_WORK: dict[str, tuple[str, Work, Callable[[Mapping[str, Any]], str]]] = {
    "merge": ("merge-duplicates", lambda s: ops.merge_duplicates(s.node_index(), s.settings.index.duplicate_similarity),
              lambda out: f"merged {out['merged']} near-duplicate node(s)"),
    "edges": ("rebuild-edges",
              lambda s: ops.rebuild_edges(s.node_index(), s.settings.index.similar_threshold, s.settings.index.max_similar),
              lambda out: f"similar edges: {out['edges_before']} before, {out['edges_after']} after the full rebuild"),
    "tiers": ("age-tiers", lambda s: ops.age_tiers(s.node_index(), s.settings.index.cold_after_days),
              lambda out: f"{out['cold']} node(s) moved to the cold tier (full text only)"),
    "compact": ("compact-index", lambda s: ops.compact(s.node_index(), s.margin_hours),
                lambda out: f"index compacted; versions kept per table: {out['versions_left']}"),
    "retire": ("retire-indexes", lambda s: ops.retire_old_indexes(s.session, s.margin_hours),
               lambda out: f"retired index directories: {', '.join(out['retired_indexes']) or 'none'}"),
    "checkpoint": ("checkpoint-ledger", lambda s: ops.checkpoint_ledger(s.session),
                   lambda out: "ledger checkpointed" if out["checkpointed"] else ""),
}


@task(name="maintenance-step", cache_policy=NONE)
def step_task(name: str, inputs: StepInputs) -> Mapping[str, Any]:
    """One step, run and logged (``cache_policy=NONE``: the inputs hold live handles)."""
    _, work, says = STEP_WORK[name]
    out = work(inputs)
    if line := says(out):
        get_run_logger().info("%s", line)
    return out


def report_markdown(report: dict[str, Any]) -> str:
    lines = ["# memvault maintenance", "", "| step | seconds | result |", "|---|---|---|"]
    for name, out in report["steps"].items():
        result = ", ".join(f"{k}={v}" for k, v in out.items() if k != "seconds")
        lines.append(f"| {name} | {out['seconds']:.1f} | {result} |")
    return "\n".join(lines) + "\n"


@flow(name="maintenance", log_prints=False)
def maintenance(options: MaintenanceOptions = MaintenanceOptions()) -> dict[str, Any]:
    """Keep the node index fast and tidy; recall answers the same before and after."""
    settings = load_settings(options.home)
    require_home(settings.home)
    steps = [s for s in STEPS if options.steps is None or s in options.steps]
    margin = settings.index.cleanup_after_hours if options.cleanup_after_hours is None else options.cleanup_after_hours
    progress: UUID = create_progress_artifact(0.0, key="memvault-maintenance-progress",  # type: ignore[assignment]
                                              description="maintenance steps done")  # sync call: a UUID
    report: dict[str, Any] = {"home": str(settings.home), "steps": {}}
    with writing(settings, "memvault maintenance") as session:
        # A home whose first run has not built the index yet has nothing to maintain there.
        nodes = session.nodes() if any(s in steps for s in INDEX_STEPS) else None
        for done, name in enumerate(steps, start=1):
            t0 = time.perf_counter()
            out: Mapping[str, object]  # one step's typed result (memvault.ops.admin_results)
            if name in INDEX_STEPS and nodes is None:
                out = {"skipped": "no node index yet"}
            else:
                out = step_task.with_options(name=STEP_WORK[name][0])(name, StepInputs(session, nodes, settings, margin))
            report["steps"][name] = {**out, "seconds": round(time.perf_counter() - t0, 3)}
            update_progress_artifact(progress, 100.0 * done / len(steps), description=f"{name} done")
    create_markdown_artifact(report_markdown(report), key="memvault-maintenance-report",
                             description="memvault maintenance")
    return report

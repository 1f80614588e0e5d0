"""The weekly maintenance flow: compaction, a full edge rebuild, near-duplicate merging,
age tiers, retired index directories and a ledger checkpoint, under the writer lock.

Each step is a named task over a pure function of memvault/ops/maintenance.py; the flow publishes
a Markdown artifact (key "memvault-maintenance-report") and a progress artifact as it goes.
"""

import time
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NONE
from pydantic import BaseModel, Field, field_validator

from memvault.ops import maintenance as ops
from memvault.ops import admin_results as ops_results
from memvault.ops.home import require_home
from memvault.ops.session import Session, writing
from memvault.settings import Settings, load_settings
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


@task(name="merge-duplicates", cache_policy=NONE)
def merge_task(nodes: NodeIndex, settings: Settings) -> ops_results.Merged:
    out = ops.merge_duplicates(nodes, settings.index.duplicate_similarity)
    get_run_logger().info("merged %d near-duplicate node(s)", out["merged"])
    return out


@task(name="rebuild-edges", cache_policy=NONE)
def edges_task(nodes: NodeIndex, settings: Settings) -> ops_results.EdgesRebuilt:
    out = ops.rebuild_edges(nodes, settings.index.similar_threshold, settings.index.max_similar)
    get_run_logger().info("similar edges: %d before, %d after the full rebuild", out["edges_before"], out["edges_after"])
    return out


@task(name="age-tiers", cache_policy=NONE)
def tiers_task(nodes: NodeIndex, settings: Settings) -> ops_results.Tiered:
    out = ops.age_tiers(nodes, settings.index.cold_after_days)
    get_run_logger().info("%d node(s) moved to the cold tier (full text only)", out["cold"])
    return out


@task(name="compact-index", cache_policy=NONE)
def compact_task(nodes: NodeIndex, margin_hours: float) -> ops_results.Compacted:
    out = ops.compact(nodes, margin_hours)
    get_run_logger().info("index compacted; versions kept per table: %s", out["versions_left"])
    return out


@task(name="retire-indexes", cache_policy=NONE)
def retire_task(session: Session, margin_hours: float) -> ops_results.Retired:
    out = ops.retire_old_indexes(session, margin_hours)
    get_run_logger().info("retired index directories: %s", ", ".join(out["retired_indexes"]) or "none")
    return out


@task(name="checkpoint-ledger", cache_policy=NONE)
def checkpoint_task(session: Session) -> ops_results.Checkpointed:
    out = ops.checkpoint_ledger(session)
    if out["checkpointed"]:
        get_run_logger().info("ledger checkpointed")
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
            out: Mapping[str, object]  # one step's typed result (memvault.ops.results)
            if name in INDEX_STEPS and nodes is None:
                out = {"skipped": "no node index yet"}
            elif nodes is not None and name == "merge":
                out = merge_task(nodes, settings)
            elif nodes is not None and name == "edges":
                out = edges_task(nodes, settings)
            elif nodes is not None and name == "tiers":
                out = tiers_task(nodes, settings)
            elif nodes is not None and name == "compact":
                out = compact_task(nodes, margin)
            elif name == "retire":
                out = retire_task(session, margin)
            else:
                out = checkpoint_task(session)
            report["steps"][name] = {**out, "seconds": round(time.perf_counter() - t0, 3)}
            update_progress_artifact(progress, 100.0 * done / len(steps), description=f"{name} done")
    create_markdown_artifact(report_markdown(report), key="memvault-maintenance-report",
                             description="memvault maintenance")
    return report

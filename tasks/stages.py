"""The nightly stages as Prefect tasks, every one made by `stage_task` from its core function.

The stages themselves are `memvault.stages.<stage>.run_<stage>(ctx) -> StageResult`, free of
Prefect, so the live drainer, `memvault watch` and `memvault reindex` call them without
loading it. This module only adds Prefect's retries, names and tags, in one place.
"""

from collections.abc import Callable
from typing import TypeVar

from prefect import Task, task
from prefect.cache_policies import NONE

from memvault.stages.changelog import run_changelog
from memvault.stages.chunk import run_chunk
from memvault.stages.cluster import run_cluster
from memvault.stages.context import StageContext
from memvault.stages.index import run_index
from memvault.stages.ingest import run_ingest
from memvault.stages.normalize import run_normalize
from memvault.stages.result import StageResult
from memvault.stages.synthesize import run_synthesize
from memvault.stages.wikify import run_wikify
from tasks.pipeline import STAGES, StageName

R = TypeVar("R", bound=StageResult)

RETRIES = 1
RETRY_DELAY_S = 2
TAGS = ("memvault",)

RUNS: dict[StageName, Callable[[StageContext], StageResult]] = {
    "ingest": run_ingest, "chunk": run_chunk, "cluster": run_cluster, "synthesize": run_synthesize,
    "wikify": run_wikify, "normalize": run_normalize, "changelog": run_changelog, "index": run_index,
}


def stage_task(name: str, run: Callable[[StageContext], R]) -> Task[[StageContext], R]:
    """``run`` as the Prefect task named ``name``.

    ``cache_policy=NONE``: the context holds live handles (the open ledger), which Prefect
    must neither hash nor persist (docs/architecture.md, "Why the stages run in one process").
    """
    return task(name=name, retries=RETRIES, retry_delay_seconds=RETRY_DELAY_S, cache_policy=NONE,
                tags=list(TAGS))(run)


# In pipeline order (tasks/pipeline.py): the flow looks each stage up by name.
TASKS: dict[str, Task[[StageContext], StageResult]] = {name: stage_task(name, RUNS[name]) for name in STAGES}

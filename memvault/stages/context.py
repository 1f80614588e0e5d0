"""What every stage receives: `run_<stage>(ctx: StageContext) -> StageResult`.

`StageContext` holds the settings, the open stores, the engines and the run's identity. It is
built once per run by the flow (the composition root) and passed to each stage; stages never
open stores themselves. It lives in the flow's process: a live DuckDB handle cannot cross one
(see docs/architecture.md, "Why the stages run in one process").

The results live in `memvault/stages/result.py`, which the live drainer can import without
the stores this module names.
"""

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memvault.runs.budget import Budget
from memvault.embeddings import Embedder
from memvault.engines.base import Completion, Engine
from memvault.engines.none import NoneEngine
from memvault.errors import EmbedderMismatchError
from memvault.config.settings import Settings
from stores.ledger import Ledger
from stores.nodes import NodeIndex
from stores.vault import Vault


@dataclass
class StageContext:
    """The run's settings, stores, engines and identity, plus what the stages did so far."""

    settings: Settings
    ledger: Ledger
    vault: Vault
    embedder: Embedder
    run_id: str
    engine: Engine = field(default_factory=NoneEngine)  # NoneEngine: no model, the no-model paths
    topic_embedder: Embedder | None = None  # the topic stages' embedder when not `embedder` (select.topic_embedder_for)
    extra_paths: list[Path] = field(default_factory=list)  # ad hoc `memvault ingest PATH`
    since: datetime | None = None  # model-backed stages take only conversations updated since then
    budget: Budget | None = None  # None means unlimited (tests calling stages directly)
    _nodes: NodeIndex | None = None
    # What this run did, accumulated across stages for the changelog and the report.
    touched_articles: dict[str, str] = field(default_factory=dict)  # stem -> "created" | "updated"
    rejected: dict[str, list[str]] = field(default_factory=dict)  # stem -> reasons
    conversations_ingested: int = 0
    talk_notes: int = 0
    # Units each model-backed stage finished this run (for the backlog estimate in the report).
    units_done: dict[str, int] = field(default_factory=dict)
    # The report of each stage run so far, by name (its `seconds` and `status` added by the
    # flow): the changelog's digest and the run report read them.
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def topics(self) -> Embedder:
        """The embedder of chunk vectors, bucket centroids and synthesis (`embedder` unless the
        home embeds with another model than MiniLM: memvault.embeddings.select.topic_embedder_for)."""
        return self.topic_embedder if self.topic_embedder is not None else self.embedder

    @property
    def uses_model(self) -> bool:
        """Whether model-backed stages take their model path (False: the `none` engine)."""
        return self.engine.name != "none"

    def out_of_budget(self) -> str | None:
        """Why a model-backed stage must not take another unit now (None: go on)."""
        return self.budget.exhausted() if self.budget is not None else None

    def charge(self, stage: str, completions: list[Completion]) -> None:
        """Count a unit's model calls against the run's budget."""
        if self.budget is not None:
            self.budget.charge(stage, completions)

    def stage_cost(self, stage: str) -> dict[str, Any]:
        """`calls`, `tokens` and model seconds of a stage so far (zeros without a budget)."""
        if self.budget is None:
            return {"calls": 0, "tokens": 0, "model_seconds": 0.0}
        return self.budget.stage_counts(stage)

    def nodes_for_deletes(self) -> NodeIndex:
        """The live index for writes that touch no vector (deleting nodes): also one that
        another embedder built and that waits for `memvault reindex`."""
        try:
            return self.nodes
        except EmbedderMismatchError:
            return NodeIndex.open_stored(self.settings)

    @property
    def nodes(self) -> NodeIndex:
        if self._nodes is None:
            self._nodes = NodeIndex.open_or_create(self.settings, embedder=self.embedder)
        return self._nodes

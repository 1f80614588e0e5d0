"""What every stage receives: settings, the open stores, the engines and the run's identity.

Built once per run by the flow (the composition root) and passed to each stage; stages
never open stores themselves.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.embeddings import Embedder
from memvault.settings import Settings
from stores.ledger import Ledger
from stores.nodes import NodeIndex
from stores.vault import Vault


@dataclass
class StageContext:
    settings: Settings
    ledger: Ledger
    vault: Vault
    embedder: Embedder
    run_id: str
    engine: Any = None  # memvault.engines Engine; `none` engine when no model is used
    extra_paths: list[Path] = field(default_factory=list)  # ad hoc `memvault ingest PATH`
    since: Any = None  # datetime: model-backed stages take only conversations updated since then
    budget: Any = None  # memvault.budget.Budget; None means unlimited (tests calling stages directly)
    _nodes: NodeIndex | None = None
    # What this run did, accumulated across stages for the changelog and the report.
    touched_articles: dict[str, str] = field(default_factory=dict)  # stem -> "created" | "updated"
    rejected: dict[str, list[str]] = field(default_factory=dict)  # stem -> reasons
    conversations_ingested: int = 0
    talk_notes: int = 0
    # Units each model-backed stage finished this run (for the backlog estimate in the report).
    units_done: dict[str, int] = field(default_factory=dict)

    def out_of_budget(self) -> str | None:
        """Why a model-backed stage must not take another unit now (None: go on)."""
        return self.budget.exhausted() if self.budget is not None else None

    def charge(self, stage: str, completions: list[Any]) -> None:
        """Count a unit's model calls against the run's budget."""
        if self.budget is not None:
            self.budget.charge(stage, completions)

    def stage_cost(self, stage: str) -> dict[str, Any]:
        """`calls`, `tokens` and model seconds of a stage so far (zeros without a budget)."""
        if self.budget is None:
            return {"calls": 0, "tokens": 0, "model_seconds": 0.0}
        return self.budget.stage_counts(stage)

    @property
    def nodes(self) -> NodeIndex:
        if self._nodes is None:
            self._nodes = NodeIndex.open_or_create(self.settings)
        return self._nodes


def build_engine(settings: Settings, model_override: str | None = None) -> tuple[Any, str]:
    """The run's model engine and a one-line reason for the choice (for the run report)."""
    from memvault.engines import EngineSettings, make_engine

    model = settings.model.model_dump()
    if model_override:
        # `--model` names the model of whichever engine is chosen.
        model["mlx_model"] = model_override
        model["openai_model"] = model_override
    return make_engine(EngineSettings(engine=settings.engine, **model))

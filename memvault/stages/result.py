"""The shape of what a stage returns: a typed result whose `report()` is the dict the run
report, `Ledger.record_stage` and the Prefect artifacts read."""

from typing import Any, ClassVar

from pydantic import BaseModel


class StageResult(BaseModel):
    """What one stage did this run, as counts and short lists (never whole texts)."""

    # Fields only one path of a stage fills (the model path's prompt hash, a budget stop):
    # left out of the report when None, so the report keys say which path ran.
    omit_when_none: ClassVar[frozenset[str]] = frozenset()

    def report(self) -> dict[str, Any]:
        """The result as the JSON-ready dict of the run report."""
        out = self.model_dump(mode="json")
        return {k: v for k, v in out.items() if not (v is None and k in self.omit_when_none)}


class ModelStageResult(StageResult):
    """A stage that may call the model: its calls, tokens and model time this run."""

    calls: int = 0
    tokens: int = 0
    model_seconds: float = 0.0

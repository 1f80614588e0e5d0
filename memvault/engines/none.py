"""The engine used when no model is available: stages take their no-model path."""

from typing import Any

from memvault.engines.base import Completion, EngineError


class NoneEngine:
    """No model. Stages check `StageContext.uses_model` before calling it."""

    name = "none"
    model: str | None = None

    def complete(
        self,
        system: str,
        prompt: str,
        *,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
        cache_prefix: str | None = None,
    ) -> Completion:
        """Always fail: a stage reached for a model while none is configured."""
        raise EngineError(
            "no model engine configured — set `engine` (mlx or openai) in memvault.toml, "
            "or use the stage's no-model path"
        )

"""The engine used when no model is available: stages take their no-model path."""

from memvault.engines.base import Call, Completion, Engine, EngineError


class NoneEngine(Engine):
    """No model. Stages check `StageContext.uses_model` before calling it."""

    name = "none"
    model: str | None = None

    def answer(self, call: Call) -> Completion:
        """Always fail: a stage reached for a model while none is configured."""
        raise EngineError(
            "no model engine configured — set `engine` (mlx or openai) in memvault.toml, "
            "or use the stage's no-model path"
        )

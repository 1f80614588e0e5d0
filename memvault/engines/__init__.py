"""Model engines behind one interface, and the choice of engine from settings.

`make_engine` is called once in the composition root; stages receive the engine and take
their no-model path when `StageContext.uses_model` is False (the `none` engine).
"""

from pathlib import Path
from typing import TYPE_CHECKING

from memvault.engines.base import Completion, Engine, EngineError, Structured, extract_json, structured
from memvault.engines.fake import FakeEngine
from memvault.engines.none import NoneEngine
from memvault.engines.recording import RecordingEngine
from memvault.engines.settings import EngineName, EngineSettings

if TYPE_CHECKING:  # the real modules import lazily: mlx is heavy, httpx needless for `none`
    from memvault.engines.mlx import MlxEngine
    from memvault.engines.openai import OpenAIEngine

__all__ = [
    "Completion",
    "Engine",
    "EngineError",
    "EngineName",
    "EngineSettings",
    "FakeEngine",
    "NoneEngine",
    "RecordingEngine",
    "Structured",
    "extract_json",
    "make_engine",
    "structured",
]

if TYPE_CHECKING:  # every engine satisfies the protocol stages are typed against (checked by mypy)
    _ENGINES: tuple[type[Engine], ...] = (FakeEngine, NoneEngine, MlxEngine, OpenAIEngine)

_NO_MODEL = "stages use embedding-based segmentation and clustering and extractive synthesis"


def _mlx(settings: EngineSettings) -> "MlxEngine":
    from memvault.engines.mlx import MlxEngine

    return MlxEngine(str(settings.mlx_model), temperature=settings.temperature, top_p=settings.top_p,
                     constrain=settings.json_schema != "off")


def _openai(settings: EngineSettings) -> "OpenAIEngine":
    from memvault.engines.openai import OpenAIEngine

    return OpenAIEngine(
        settings.openai_base_url,
        settings.openai_model,
        api_key_env=settings.api_key_env,
        timeout=settings.timeout_s,
        retries=settings.retries,
        temperature=settings.temperature,
        top_p=settings.top_p,
        json_schema=settings.json_schema,
    )


def make_engine(settings: EngineSettings, engine: EngineName = "auto",
                record_to: Path | None = None) -> tuple[Engine, str]:
    """Build the ``engine`` named (the top-level `engine` setting) and say, in one line, which one and why.

    With ``record_to`` (the home's state folder), every prompt the engine sends is recorded
    there first (memvault.hygiene.selfcalls), so ingest recognises transcripts of memvault's own calls.

    An explicit `mlx` or `openai` is built without probing (the model loads on first use);
    `auto` probes: mlx if `mlx_model` is set and loads, else openai if the server answers
    `GET /v1/models`, else none.
    """
    chosen, why = _choose(settings, engine)
    if record_to is not None and chosen.name != "none":
        from memvault.hygiene.selfcalls import self_call_log

        chosen = RecordingEngine(chosen, self_call_log(record_to))
    return chosen, why


def _choose(settings: EngineSettings, engine: EngineName) -> tuple[Engine, str]:
    """The ``engine`` named (probing for ``auto``) and why it was chosen."""
    if engine == "none":
        return NoneEngine(), f"engine none (set in settings): {_NO_MODEL}"
    if engine == "mlx":
        if not settings.mlx_model:
            raise EngineError("engine = mlx but `mlx_model` is not set — set it to a model folder or cached repo id")
        return _mlx(settings), f"engine mlx (set in settings): {settings.mlx_model}, loaded on first use"
    if engine == "openai":
        return _openai(settings), f"engine openai (set in settings): {settings.openai_base_url}"

    tried: list[str] = []
    if settings.mlx_model:
        mlx = _mlx(settings)
        try:
            mlx.load()
        except EngineError as exc:
            tried.append(f"mlx model did not load ({exc})")
        else:
            return mlx, f"engine mlx (auto): model {settings.mlx_model} loaded"
    else:
        tried.append("no `mlx_model` configured")
    server = _openai(settings)
    if server.health():
        return server, f"engine openai (auto): server at {settings.openai_base_url} answers"
    server.close()
    tried.append(f"no OpenAI-compatible server answers at {settings.openai_base_url}")
    return NoneEngine(), f"engine none (auto): {'; '.join(tried)}; {_NO_MODEL}"

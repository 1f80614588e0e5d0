"""make_engine: explicit choices, and what `auto` picks and why."""

from pathlib import Path

import pytest

from memvault.engines import EngineError, EngineSettings, make_engine
from memvault.engines.mlx import MlxEngine
from memvault.engines.openai import OpenAIEngine
from tests.helpers import free_port


def _nowhere() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


def test_auto_without_model_or_server_is_none() -> None:
    engine, reason = make_engine(EngineSettings(openai_base_url=_nowhere()))
    assert engine.name == "none"
    assert "auto" in reason and "no `mlx_model`" in reason and "no OpenAI-compatible server" in reason


def test_auto_with_unloadable_model_says_why(tmp_path: Path) -> None:
    engine, reason = make_engine(EngineSettings(mlx_model=str(tmp_path / "gone"), openai_base_url=_nowhere()))
    assert engine.name == "none"
    assert "mlx model did not load" in reason and "no model folder" in reason


def test_auto_with_server_up_is_openai(mlx_server: str) -> None:
    engine, reason = make_engine(EngineSettings(openai_base_url=mlx_server))
    assert isinstance(engine, OpenAIEngine)
    assert "openai (auto)" in reason


def test_auto_with_tiny_model_is_mlx(tiny_model: Path) -> None:
    engine, reason = make_engine(EngineSettings(mlx_model=str(tiny_model), openai_base_url=_nowhere()))
    assert isinstance(engine, MlxEngine)
    assert "mlx (auto)" in reason and "loaded" in reason


def test_explicit_choices() -> None:
    assert make_engine(EngineSettings(), "none")[0].name == "none"
    assert make_engine(EngineSettings(openai_base_url=_nowhere()), "openai")[0].name == "openai"
    engine, reason = make_engine(EngineSettings(mlx_model="/nowhere"), "mlx")
    assert engine.name == "mlx" and "first use" in reason  # explicit: not probed
    with pytest.raises(EngineError, match="mlx_model"):
        make_engine(EngineSettings(), "mlx")


def test_every_setting_is_described() -> None:
    assert all(field.description for field in EngineSettings.model_fields.values())

"""Settings precedence: defaults < memvault.toml < MEMVAULT_* environment < CLI flags."""

from pathlib import Path

import pytest

from memvault.errors import ConfigError
from memvault.settings import load_settings


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMVAULT_ENGINE", raising=False)
    s = load_settings(tmp_path)
    assert s.engine == "auto" and s.recall.max_nodes == 8 and s.home == tmp_path.resolve()
    assert s.ledger_path == tmp_path.resolve() / ".memvault" / "ledger.duckdb"


def test_toml_then_env_then_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMVAULT_ENGINE", raising=False)
    (tmp_path / "memvault.toml").write_text(
        'engine = "openai"\n[recall]\nmax_nodes = 5\nmax_chars = 999\n[[sources]]\nkind = "claude-code"\npath = "~/x"\n'
    )
    s = load_settings(tmp_path)
    assert (s.engine, s.recall.max_nodes, s.recall.max_chars) == ("openai", 5, 999)
    assert s.sources[0].kind == "claude-code"
    monkeypatch.setenv("MEMVAULT_ENGINE", "none")
    monkeypatch.setenv("MEMVAULT_RECALL__MAX_NODES", "3")
    s = load_settings(tmp_path)
    assert (s.engine, s.recall.max_nodes, s.recall.max_chars) == ("none", 3, 999)
    s = load_settings(tmp_path, engine="mlx")
    assert s.engine == "mlx"


def test_home_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "h"))
    assert load_settings().home == (tmp_path / "h").resolve()


def test_invalid_value_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_ENGINE", "gpt-9")
    with pytest.raises(ConfigError, match="engine"):
        load_settings(tmp_path)

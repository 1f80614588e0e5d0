"""Settings precedence (defaults < memvault.toml < MEMVAULT_* environment < CLI flags), and
strictness: an unknown key, a TOML syntax error or an out-of-range value is an error naming it."""

import os
import tomllib
from datetime import time
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from memvault.engines.settings import EngineSettings
from memvault.errors import ConfigError
from memvault.config.settings import Section, Settings, SourceSettings, load_settings


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


# --- strict settings: typos, syntax errors and out-of-range values are errors naming the key ---

@pytest.fixture
def toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write memvault.toml in a fresh home and return a loader for it (no MEMVAULT_* leaks in)."""
    for name in [n for n in os.environ if n.upper().startswith("MEMVAULT_")]:
        monkeypatch.delenv(name)

    def write(text: str):
        (tmp_path / "memvault.toml").write_text(text)
        return tmp_path / "memvault.toml"

    return write


def test_unknown_key_names_the_key_the_file_and_the_closest_one(toml, tmp_path: Path) -> None:
    path = toml("[recall]\nmax_node = 3\n")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    message = str(info.value)
    assert "unknown setting `max_node` in [recall]" in message
    assert str(path) in message and "did you mean `max_nodes`?" in message


def test_unknown_top_level_key_and_section_are_errors_too(toml, tmp_path: Path) -> None:
    toml('engin = "none"\n[recal]\nmax_nodes = 3\n')
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert "unknown setting `engin` at the top level — did you mean `engine`?" in str(info.value)
    assert "unknown section [recal] — did you mean [recall]?" in str(info.value)


def test_unknown_key_in_a_sources_entry(toml, tmp_path: Path) -> None:
    toml('[[sources]]\nkind = "codex"\npth = "~/x"\n')
    with pytest.raises(ConfigError, match=r"unknown setting `pth` in \[\[sources\]\] entry 1 — did you mean `path`\?"):
        load_settings(tmp_path)


def test_toml_syntax_error_gives_file_line_and_column(toml, tmp_path: Path) -> None:
    path = toml('engine = "none"\n[recall]\nmax_nodes = \n')
    with pytest.raises(ConfigError, match=rf"^{path}, line 3, column 13: Invalid value"):
        load_settings(tmp_path)


def test_duplicate_table_gives_file_line_and_column(toml, tmp_path: Path) -> None:
    path = toml("[recall]\nmax_nodes = 3\n\n[recall]\nmax_chars = 10\n")
    with pytest.raises(ConfigError, match=rf"^{path}, line 4, column 8: \[recall\] is declared twice"):
        load_settings(tmp_path)


def test_negative_value_from_the_environment_is_an_error(toml, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    toml("")
    monkeypatch.setenv("MEMVAULT_RECALL__MAX_NODES", "-3")
    with pytest.raises(ConfigError, match=r"environment variable MEMVAULT_RECALL__MAX_NODES: `recall.max_nodes` = '-3': "
                                          r"Input should be greater than or equal to 1"):
        load_settings(tmp_path)


def test_unknown_key_from_the_environment_is_an_error(toml, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    toml("")
    monkeypatch.setenv("MEMVAULT_RECALL__MAX_NODE", "3")
    with pytest.raises(ConfigError, match=r"MEMVAULT_RECALL__MAX_NODE: unknown setting `max_node` in \[recall\]"):
        load_settings(tmp_path)
    monkeypatch.delenv("MEMVAULT_RECALL__MAX_NODE")
    monkeypatch.setenv("MEMVAULT_UNIT_DIR", "/elsewhere")  # not a setting, and not in a section: still fine
    assert load_settings(tmp_path).recall.max_nodes == 8


@pytest.mark.parametrize("text", [
    "[recall]\ndiversity = 1.5\n", "[index]\nsimilar_threshold = 1.01\n", "[cluster]\nassign_similarity = -0.1\n",
    "[chunk]\nboundary_similarity = 2\n", "[recall]\nw_cos = -1\n", "[budget]\nmax_tokens = 0\n",
    "[model]\ntop_p = 1.5\n", "[model]\nretries = -1\n", "lock_timeout_s = -1\n", "[index]\ncold_after_days = 0\n",
])
def test_out_of_range_values_in_the_file_are_errors(toml, tmp_path: Path, text: str) -> None:
    path = toml(text)
    with pytest.raises(ConfigError, match="Input should be (greater|less) than") as info:
        load_settings(tmp_path)
    assert str(path) in str(info.value)


def test_every_section_refuses_unknown_keys() -> None:
    sections = [f.annotation for f in Settings.model_fields.values()
                if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)] + [SourceSettings]
    assert len(sections) == 14 and EngineSettings in sections
    for section in sections:
        assert section.model_config.get("extra") == "forbid", section.__name__
        assert section is EngineSettings or issubclass(section, Section)
        with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
            section.model_validate({"no_such_key": 1, **({"path": "x"} if "path" in section.model_fields else {})})


def test_schedule_at_is_a_time(toml, tmp_path: Path) -> None:
    toml('[schedule]\nat = "03:00"\n')
    assert load_settings(tmp_path).schedule.at == time(3, 0)
    toml('[schedule]\nat = "3:30"\n')  # accepted before `at` was a time, so still accepted
    assert load_settings(tmp_path).schedule.at == time(3, 30)
    toml("[schedule]\nat = 23:15:00\n")  # a TOML local time
    assert load_settings(tmp_path).schedule.at == time(23, 15)
    for bad in ('"25:00"', '"03:00:30"', '"noon"'):
        toml(f"[schedule]\nat = {bad}\n")
        with pytest.raises(ConfigError, match="schedule.at"):
            load_settings(tmp_path)


def test_embedding_model_is_the_shipped_one(toml, tmp_path: Path) -> None:
    from memvault.embeddings.minilm import MiniLMEmbedder
    from memvault.embeddings.select import embedder_for

    settings = load_settings(tmp_path)
    # The default is the int8 graph of the bundled MiniLM, and the embedder it names says so.
    assert settings.embeddings.model == "all-MiniLM-L6-v2-int8" == embedder_for(settings).name
    assert MiniLMEmbedder.name == "all-MiniLM-L6-v2"
    toml('[embeddings]\nmodel = "bge-small"\n')
    with pytest.raises(ConfigError, match=r"embeddings.model.*all-MiniLM-L6-v2"):
        load_settings(tmp_path)


def test_model_section_is_the_engine_settings(toml, tmp_path: Path) -> None:
    toml('engine = "openai"\n[model]\nopenai_model = "qwen"\ntimeout_s = 30\n')
    settings = load_settings(tmp_path)
    assert isinstance(settings.model, EngineSettings)
    assert (settings.engine, settings.model.openai_model, settings.model.timeout_s) == ("openai", "qwen", 30)


def test_the_template_is_valid(toml, tmp_path: Path) -> None:
    from importlib import resources

    text = (resources.files("vault_template") / "memvault.toml").read_text()
    tomllib.loads(text)
    toml(text)
    assert load_settings(tmp_path).engine == "auto"


def test_live_prompt_defaults_are_the_gates() -> None:
    """The prompt gate's thresholds are written once, in the gate; `[live]` reads them."""
    from memvault.live.prompt_gate import SERVE_TIMEOUT_S, GateParams
    from memvault.config.settings import LiveSettings

    live, gate = LiveSettings(), GateParams()
    assert (live.prompt_min_words, live.prompt_coverage_weight, live.prompt_top_weight, live.prompt_min_evidence,
            live.prompt_min_cos, live.prompt_min_margin) == (gate.min_words, gate.w_coverage, gate.w_top,
                                                             gate.min_evidence, gate.min_cos, gate.min_margin)
    assert live.prompt_timeout_s == SERVE_TIMEOUT_S

"""Helpers for the editorial tests: a mini vault from fixture articles, golden files, the CLI.

Set UPDATE_GOLDEN=1 to rewrite the expected files after a deliberate change (then review them).
"""

import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GOLDEN = FIXTURES / "editorial"
LUCIEN = FIXTURES / "lucien_vault"


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}: run with UPDATE_GOLDEN=1 and review it"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


@pytest.fixture
def golden():
    return check_golden


@pytest.fixture
def messy_home(home: Path) -> Path:
    """An initialised home whose articles are the messy fixture articles, committed."""
    from stores.vault import Vault

    articles = FIXTURES / "articles"
    shutil.copy(articles / "footnotes_messy.md", home / "articles" / "Archie_Project.md")
    shutil.copy(articles / "messy_links.md", home / "articles" / "Messy_Links.md")
    (home / "articles" / "Agent_Platforms.md").write_text(
        "# Agent Platforms\n\nAgent platforms run tools for models, like [[archie]].[^1]\n\n"
        "## References\n\n[^1]: `conv:bbbbbbbb` (2026-05-02, codex) — Archie design overview\n")
    vault = Vault(home)
    vault.record([f"articles/{n}" for n in ("Archie_Project.md", "Messy_Links.md", "Agent_Platforms.md")])
    vault.commit("fixture articles")
    return home


def stage_ctx(home: Path, run_id: str = "run-test-1", touched: dict[str, str] | None = None) -> SimpleNamespace:
    """What the wikify and normalize stages read from their StageContext."""
    from stores.vault import Vault

    return SimpleNamespace(vault=Vault(home), run_id=run_id, touched_articles=dict(touched or {}), talk_notes=0)


def cli(*args: str):
    from memvault.cli import app

    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def lucien_home(tmp_path: Path) -> Path:
    """The invented lucien-style vault, imported as a memory home (`memvault init` on it)."""
    from memvault.ops.home import init_home

    home = tmp_path / "lucien"
    shutil.copytree(LUCIEN, home)
    init_home(home)
    return home

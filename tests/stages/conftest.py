"""Fixtures for the stage tests: a fresh ledger for ingest, a home with a few sample
conversations ingested and stage contexts over it for the model-backed stages, and a vault of
messy fixture articles with golden files for wikify and normalize."""

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import FIXTURES, check_golden, copy_subset

GOLDEN = FIXTURES / "editorial"


@pytest.fixture
def ingest_env(home: Path) -> Iterator[tuple[Any, Any]]:
    """(ledger, settings) of a fresh memory home; the ledger is closed afterwards."""
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    settings = load_settings(home)
    ledger = Ledger(settings.ledger_path)
    yield ledger, settings
    ledger.close()


@pytest.fixture
def stage_home(tmp_path: Path) -> Path:
    """A fresh home with the subset ingested into its ledger (no Prefect involved)."""
    from memvault.ops.home import init_home
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from memvault.stages.ingest import ingest_roots

    home = tmp_path / "home"
    init_home(home)
    src = copy_subset(tmp_path / "src")
    settings = load_settings(home)
    ledger = Ledger(settings.ledger_path)
    try:
        ingest_roots(ledger, settings, [("auto", src)])
    finally:
        ledger.close()
    return home


@pytest.fixture
def make_ctx(stage_home: Path, embedder) -> Iterator[Any]:
    """`make_ctx(engine, **setting_overrides)` → a StageContext on `stage_home` (closed after)."""
    from memvault.runs.budget import Budget
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from stores.vault import Vault
    from memvault.stages.context import StageContext

    opened: list[Ledger] = []

    def make(engine: Any, max_tokens: int = 10**9, **overrides: Any) -> StageContext:
        for ledger in opened:
            ledger.close()
        opened.clear()
        settings = load_settings(stage_home, **overrides)
        ledger = Ledger(settings.ledger_path)
        opened.append(ledger)
        return StageContext(settings=settings, ledger=ledger, vault=Vault(stage_home), embedder=embedder,
                            run_id="test-run", engine=engine, budget=Budget(max_tokens, 3600))

    yield make
    for ledger in opened:
        ledger.close()


@pytest.fixture
def golden():
    """`golden(name, actual)`: compare with `fixtures/editorial/<name>` (UPDATE_GOLDEN=1 rewrites)."""
    return lambda name, actual: check_golden(GOLDEN / name, actual)


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

"""`read --section` (CLI, MCP, HTTP) finds a section by its title, its path, or its title
without the date its heading carries, and says which sections a bare title could mean."""

from pathlib import Path

import pytest

from memvault.errors import NotFoundError
from memvault.ops.memory import MemoryService
from memvault.config.settings import load_settings
from stores.vault import Vault

ARTICLE = """# Tidepool

Lead sentence.

## Day count (2026-09-14)

Ninety days.

## Release (2026-09-20)

First cut.

## Release (2026-10-02)

Second cut.
"""


@pytest.fixture
def service(home: Path) -> MemoryService:
    settings = load_settings(home)
    vault = Vault(settings.home)
    vault.articles_dir.mkdir(parents=True, exist_ok=True)
    (vault.articles_dir / "Tidepool.md").write_text(ARTICLE, encoding="utf-8")
    return MemoryService(settings, embedder=object())  # type: ignore[arg-type]  # never embeds


def test_a_section_is_found_by_its_title_without_its_date(service: MemoryService) -> None:
    bare = service.read_section("Tidepool", "day count")
    assert bare["section"] == "Day count (2026-09-14)"
    assert bare["text"] == "## Day count (2026-09-14)\n\nNinety days.\n"
    assert service.read_section("Tidepool", "Day count (2026-09-14)") == bare


def test_a_bare_title_of_two_sections_names_both(service: MemoryService) -> None:
    with pytest.raises(NotFoundError, match=r"names 2 sections.*'Release \(2026-09-20\)', 'Release \(2026-10-02\)'"):
        service.read_section("Tidepool", "Release")
    assert service.read_section("Tidepool", "Release (2026-10-02)")["text"].endswith("Second cut.\n")


def test_an_unknown_section_points_at_the_toc(service: MemoryService) -> None:
    with pytest.raises(NotFoundError, match="memvault toc Tidepool"):
        service.read_section("Tidepool", "Nothing")

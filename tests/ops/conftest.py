"""Fixtures for the operations tests: an invented lucien-style vault imported as a home."""

import shutil
from pathlib import Path

import pytest

from tests.helpers import FIXTURES


@pytest.fixture
def lucien_home(tmp_path: Path) -> Path:
    """The invented lucien-style vault, imported as a memory home (`memvault init` on it)."""
    from memvault.ops.home import init_home

    home = tmp_path / "lucien"
    shutil.copytree(FIXTURES / "lucien_vault", home)
    init_home(home)
    return home

"""Shared helpers for the markdown tests: fixture articles and golden files.

Set UPDATE_GOLDEN=1 to rewrite the expected files after a deliberate change.
"""

import os
from pathlib import Path

import pytest

ARTICLES = Path(__file__).resolve().parent.parent / "fixtures" / "articles"


def check_golden(name: str, actual: str) -> None:
    """Compare ``actual`` with ``fixtures/articles/<name>`` (or write it under UPDATE_GOLDEN=1)."""
    path = ARTICLES / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}: run with UPDATE_GOLDEN=1 and review it"
    assert actual == path.read_text(encoding="utf-8")


@pytest.fixture
def golden():
    """The golden-file comparison, as a fixture (test modules here are not a package)."""
    return check_golden


@pytest.fixture
def article():
    """Read a fixture article by file name."""
    return lambda name: (ARTICLES / name).read_text(encoding="utf-8")

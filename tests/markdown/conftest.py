"""Fixtures for the markdown tests: fixture articles and golden files.

Set UPDATE_GOLDEN=1 to rewrite the expected files after a deliberate change.
"""

import pytest

from tests.helpers import FIXTURES, check_golden

ARTICLES = FIXTURES / "articles"


@pytest.fixture
def golden():
    """`golden(name, actual)`: compare with `fixtures/articles/<name>` (UPDATE_GOLDEN=1 rewrites)."""
    return lambda name, actual: check_golden(ARTICLES / name, actual)


@pytest.fixture
def article():
    """Read a fixture article by file name."""
    return lambda name: (ARTICLES / name).read_text(encoding="utf-8")

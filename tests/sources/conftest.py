"""Shared fixtures for the source-parser tests: paths to the format samples."""

from pathlib import Path

import pytest

from tests.helpers import FORMATS


@pytest.fixture
def formats() -> Path:
    """Directory of the copied transcript samples (licences beside them)."""
    return FORMATS

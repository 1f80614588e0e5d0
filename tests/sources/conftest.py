"""Shared fixtures for the source-parser tests: paths to the format samples."""

from pathlib import Path

import pytest

FORMATS = Path(__file__).resolve().parents[1] / "fixtures" / "formats"


@pytest.fixture
def formats() -> Path:
    """Directory of the copied transcript samples (licences beside them)."""
    return FORMATS

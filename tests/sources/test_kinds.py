"""The registry of source kinds is the one list every other place reads."""

import subprocess
import sys
from pathlib import Path
from typing import get_args

from memvault.models import Conversation
from memvault.ops import capture
from memvault.recall import scope
from memvault.config.settings import SourceSettings
from memvault.sources import PARSERS
from memvault.sources.kinds import (
    CAPTURE_KINDS,
    CONFIGURED_KINDS,
    EXPORT_KINDS,
    FILE_KINDS,
    KINDS,
    SCOPE_KINDS,
    SOURCE_KINDS,
    listed,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_literal_types_name_the_registered_formats() -> None:
    assert FILE_KINDS == tuple(KINDS)
    assert EXPORT_KINDS == tuple(name for name, kind in KINDS.items() if kind.export)
    assert SOURCE_KINDS == (*FILE_KINDS, "note")
    assert CONFIGURED_KINDS == (*FILE_KINDS, "auto")


def test_every_place_reads_the_registry() -> None:
    assert set(PARSERS) == set(FILE_KINDS)
    assert scope.SOURCES == SCOPE_KINDS and "article" in SCOPE_KINDS
    assert capture.KINDS == CAPTURE_KINDS
    assert get_args(SourceSettings.model_fields["kind"].annotation) == CONFIGURED_KINDS
    assert get_args(Conversation.model_fields["source"].annotation) == SOURCE_KINDS


def test_each_format_is_documented() -> None:
    ingest = (DOCS / "ingest.md").read_text(encoding="utf-8")
    missing = [name for name in FILE_KINDS if f"`{name}`" not in ingest]
    assert not missing, f"docs/ingest.md does not describe {missing}"
    cli = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert not [name for name in SCOPE_KINDS if f"`{name}`" not in cli], "docs/cli.md's --source lists miss a kind"


def test_listed_joins_names_as_prose() -> None:
    assert listed(("a", "b", "c")) == "a, b or c"
    assert listed(("a",)) == "a"


def test_the_registry_is_light_enough_for_the_hook_path() -> None:
    code = ("import sys, memvault.sources.kinds; "
            "print(sorted(m for m in ('pydantic', 'memvault.models', 'dataclasses') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

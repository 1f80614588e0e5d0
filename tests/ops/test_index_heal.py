"""An index that lost data says so and heals: after `nodes.lance` is deleted, status warns that
the index lacks conversations the ledger marks indexed, and the next run's index stage
rebuilds every one of them (not only the articles)."""

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from memvault.config.settings import load_settings
from stores.location import index_uri
from memvault.stages.index import missing_conversations


def _status(home: Path) -> dict:
    from memvault.cli import app

    result = CliRunner().invoke(app, ["--home", str(home), "status", "--json"], env={"PREFECT_API_URL": None})
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_missing_conversations_are_those_marked_indexed_but_absent() -> None:
    docs = {"conv:aa": "conversation", "Tides": "article"}
    assert missing_conversations(["aa", "bb"], docs) == ["bb"]
    assert missing_conversations([], docs) == []


def test_a_deleted_index_is_reported_and_rebuilt_whole(demo_copy: Path, prefect) -> None:
    from tests.helpers import run_flow

    home = demo_copy
    before = _status(home)
    assert before["warnings"] == [] and before["nodes"] > 0
    shutil.rmtree(Path(index_uri(load_settings(home))))
    warned = _status(home)
    assert warned["nodes"] == 0
    assert any(f"lacks {before['conversations']} of the {before['conversations']} conversation" in w
               for w in warned["warnings"]), warned["warnings"]
    report = run_flow(home, only=["index"])
    stage = report["stages"]["index"]
    assert stage["conversations_recovered"] == before["conversations"]
    after = _status(home)
    assert after["nodes"] == before["nodes"] and after["warnings"] == []
    # Healed means healed: the next run finds nothing missing and rewrites nothing.
    again = run_flow(home, only=["index"])["stages"]["index"]
    assert again["conversations_recovered"] == 0 and again["nodes_written"] == 0


def test_a_table_left_without_a_manifest_is_rebuilt_by_the_next_run(demo_copy: Path, prefect, embedder) -> None:
    # What a SIGKILL during the index's first creation leaves: the table's folder without the
    # manifest that names its versions (LanceDB then says "Table 'nodes' was not found").
    import pytest

    from memvault.errors import IndexMismatchError
    from memvault.ops.memory import MemoryService
    from tests.helpers import run_flow

    home = demo_copy
    before = _status(home)
    table = Path(index_uri(load_settings(home))) / "nodes.lance"
    shutil.rmtree(table / "_versions")
    with pytest.raises(IndexMismatchError, match="unreadable.*`memvault run` rebuilds it"):
        MemoryService(load_settings(home), embedder).recall("postgres backups on the NAS")
    report = run_flow(home, only=["index"])
    stage = report["stages"]["index"]
    assert "created anew" in stage["index_rebuilt"] and stage["conversations_recovered"] == before["conversations"]
    after = _status(home)
    assert after["nodes"] == before["nodes"] and after["warnings"] == []
    assert MemoryService(load_settings(home), embedder).recall("postgres backups on the NAS")["hits"]

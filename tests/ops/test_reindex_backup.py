"""`memvault reindex` swaps a complete new index in atomically (recall works before, during
and after); `memvault backup` makes a copy that restores to a working home."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from memvault.errors import UsageError
from memvault.config.settings import load_settings
from stores.location import INDEX_POINTER, index_uri

QUERY = "when does the postgres backup run and how long is it kept"


class _Result:
    def __init__(self, returncode: int, stdout: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stdout


def _cli(home: Path, *args: str, env: dict | None = None) -> _Result:
    """The real command line, in process (a subprocess would pay for loading torch each time)."""
    from typer.testing import CliRunner

    from memvault.cli import app

    result = CliRunner().invoke(app, ["--home", str(home), *args], env={"PREFECT_API_URL": None, **(env or {})})
    return _Result(result.exit_code, result.output)


def test_reindex_builds_beside_the_old_index_and_swaps(demo_copy: Path, embedder) -> None:
    from memvault.ops.maintenance import retire_old_indexes
    from memvault.ops.memory import MemoryService
    from memvault.ops.reindex import rebuild_index
    from memvault.ops.session import writing
    from stores.nodes import NodeIndex

    home = demo_copy
    settings = load_settings(home)
    old_uri = index_uri(settings)
    old_files = sorted(p.relative_to(old_uri) for p in Path(old_uri).rglob("*"))
    before = MemoryService(settings, embedder).recall(QUERY)["hits"]
    assert before
    during: list[list[str]] = []

    class MidBuild:
        """At each finished batch: mid-build, a fresh reader still opens and queries the old, complete index."""

        def begin(self, total: int, label: str = "") -> None:
            pass

        def advance(self, amount: int, label: str = "") -> None:
            if not during:
                assert index_uri(load_settings(home)) == old_uri
                during.append([h["path"] for h in MemoryService(load_settings(home), embedder).recall(QUERY)["hits"]])

        def done(self) -> None:
            pass

    progress = MidBuild()

    result = rebuild_index(settings, embedder, progress=progress)
    assert during and during[0] == [h["path"] for h in before]
    new_uri = index_uri(load_settings(home))
    assert new_uri == result["new_index"] != old_uri
    assert Path(new_uri).parent == home / ".memvault"
    assert (home / ".memvault" / INDEX_POINTER).read_text().strip() == Path(new_uri).name  # relative: portable
    assert result["nodes"] == NodeIndex(old_uri, embedder.name, embedder.dim, create=False).count()  # the old one
    after = MemoryService(load_settings(home), embedder).recall(QUERY)["hits"]
    assert [h["path"] for h in after][:3] == [h["path"] for h in before][:3]
    # The old directory is left untouched for readers that opened it, then retired past the margin.
    assert sorted(p.relative_to(old_uri) for p in Path(old_uri).rglob("*")) == old_files
    with writing(load_settings(home), "test: retire") as session:
        assert retire_old_indexes(session, margin_hours=0) == {"retired_indexes": ["nodes.lance"]}
    assert not Path(old_uri).exists() and Path(new_uri).is_dir()


def test_reindex_command_on_an_object_store_uri(demo_copy: Path, tmp_path: Path) -> None:
    """An index at a URI (file:// here; s3:// goes the same way through LanceDB) that does not
    exist yet is built from the ledger and the vault; the pointer then holds the full URI."""
    home = demo_copy
    uri = f"file://{tmp_path}/bucket/memvault/nodes.lance"
    env = {"MEMVAULT_INDEX__URI": uri}
    result = _cli(home, "reindex", "--json", env=env)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["old_index"] == uri and data["nodes"] > 0 and data["model"] == "all-MiniLM-L6-v2-int8"
    assert data["new_index"].startswith(f"file://{tmp_path}/bucket/memvault/nodes-")
    assert (home / ".memvault" / INDEX_POINTER).read_text().strip() == data["new_index"]
    recall = _cli(home, "recall", QUERY, "--json", env=env)
    assert recall.returncode == 0 and json.loads(recall.stdout)["hits"]
    status = json.loads(_cli(home, "status", "--json", env=env).stdout)
    assert status["index_uri"] == data["new_index"] and status["index_bytes"] is None
    assert status["nodes"] == data["nodes"]


def test_backup_refuses_destinations_inside_the_home(home: Path, tmp_path: Path) -> None:
    from memvault.ops.backup import backup_home

    settings = load_settings(home)
    for bad in (home, home / "articles" / "copy", tmp_path):
        with pytest.raises(UsageError):
            backup_home(settings, bad)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(UsageError, match="not empty"):
        backup_home(settings, tmp_path / "full")


def test_backup_restores_to_a_working_home(demo_copy: Path, tmp_path: Path) -> None:
    home = demo_copy
    dest = tmp_path / "backups" / "memvault-copy"
    result = _cli(home, "backup", str(dest), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["index_copied"] and data["files"] > 10
    for part in (".git", ".memvault/ledger.duckdb", ".memvault/runs", "articles", "memvault.toml"):
        assert (dest / part).exists(), part
    assert not (dest / ".memvault" / "writer.lock").exists()
    assert not list(dest.parent.glob(".memvault-copy.partial-*"))
    # Restore: copy the backup back to a new place and use it as a home.
    restored = tmp_path / "restored"
    shutil.copytree(dest, restored, symlinks=True)
    status = _cli(restored, "status", "--json")
    assert status.returncode == 0, status.stderr
    original = json.loads(_cli(home, "status", "--json").stdout)
    copy = json.loads(status.stdout)
    for key in ("conversations", "messages", "chunks", "buckets", "articles", "nodes"):
        assert copy[key] == original[key] > 0, key
    recall = _cli(restored, "recall", QUERY, "--json")
    assert recall.returncode == 0 and json.loads(recall.stdout)["hits"]
    log = subprocess.run(["git", "-C", str(restored), "log", "--oneline"], capture_output=True, text=True)
    assert log.returncode == 0 and len(log.stdout.splitlines()) >= 2

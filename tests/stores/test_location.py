"""Where the node index lives: the live pointer reindex swaps, rebuild locations, remote URIs."""

from pathlib import Path

from memvault.config.settings import load_settings
from stores.location import (INDEX_POINTER, index_bytes, index_uri, inside_home, is_remote, next_index_uri,
                             retire_replaced_indexes, set_live_index)


def test_the_pointer_names_the_live_index_relative_inside_the_home_absolute_outside(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "home")
    state = settings.state_dir
    assert index_uri(settings) == str(state / "nodes.lance")  # no pointer yet: the configured default
    fresh = next_index_uri(settings)
    assert Path(fresh).parent == state and Path(fresh).name.startswith("nodes-") and fresh != index_uri(settings)
    set_live_index(settings, fresh)
    assert (state / INDEX_POINTER).read_text() == Path(fresh).name + "\n"  # relative: a copied home stays whole
    assert index_uri(settings) == fresh and inside_home(settings, fresh)
    remote = "s3://bucket/memvault/nodes-1.lance"
    set_live_index(settings, remote)
    assert index_uri(settings) == remote and is_remote(remote) and not inside_home(settings, remote)
    assert index_bytes(remote) is None and index_bytes(str(tmp_path / "missing.lance")) == 0


def test_a_remote_index_is_rebuilt_beside_its_configured_uri(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "home", index={"uri": "s3://bucket/memvault/nodes.lance"})
    assert next_index_uri(settings).startswith("s3://bucket/memvault/nodes-")
    assert next_index_uri(settings).endswith(".lance")


def test_replaced_folders_are_retired_and_the_live_one_is_kept(tmp_path: Path) -> None:
    settings = load_settings(tmp_path / "home")
    for name in ("nodes.lance", "nodes-2.lance"):
        (settings.state_dir / name).mkdir(parents=True)
    set_live_index(settings, str(settings.state_dir / "nodes-2.lance"))
    assert retire_replaced_indexes(settings, older_than_s=3600) == []  # younger than the margin
    assert retire_replaced_indexes(settings, older_than_s=0) == ["nodes.lance"]
    assert (settings.state_dir / "nodes-2.lance").is_dir()

"""The live path's small parts: the spool, the hook command line, scope filters, project match."""

import json
from datetime import datetime
from pathlib import Path

import pytest

from memvault.live import spool
from memvault.cli.live_fast import is_hook_process, parse_hook
from memvault.errors import UsageError
from memvault.recall.scope import Scope, in_project
from stores.nodes import scope_filter


def test_spool_entries_are_whole_ordered_and_removable(tmp_path: Path) -> None:
    state = tmp_path / ".memvault"
    paths = [spool.append(state, {"op": "transcript", "path": f"/t{n}.jsonl"}) for n in range(5)]
    (spool.spool_dir(state) / "garbage.json").write_text("{half")
    got = spool.entries(state)
    assert [p for p, _ in got][:5] == paths and got[-1][1] is None  # unreadable: None, for the drainer to drop
    assert [e["path"] for _, e in got[:5]] == [f"/t{n}.jsonl" for n in range(5)]
    assert not list(spool.spool_dir(state).glob(".*.tmp"))  # nothing half-written is left
    spool.remove(paths[:2])
    assert spool.pending(state) == 4


def test_one_drainer_at_a_time(tmp_path: Path) -> None:
    state = tmp_path / ".memvault"
    first, second = spool.DrainLock(state), spool.DrainLock(state)
    assert not spool.drainer_running(state) and first.acquire()
    assert spool.drainer_running(state) and not second.acquire()
    first.release()
    assert not spool.drainer_running(state)


def test_serve_info_names_only_a_live_server(tmp_path: Path) -> None:
    state = tmp_path / ".memvault"
    state.mkdir()
    spool.write_serve_info(state, "127.0.0.1", 8765, True, 0.8)
    assert spool.serve_info(state)["port"] == 8765
    (state / spool.SERVE_INFO).write_text(json.dumps({"pid": 2 ** 22 + 12345, "port": 1}))
    assert spool.serve_info(state) is None  # a dead pid is no server


def test_hook_command_lines() -> None:
    assert parse_hook(["--home", "/h", "capture"]) == ("capture", "/h", "claude-code", None)
    assert parse_hook(["capture", "--source", "codex", "{}"]) == ("capture", None, "codex", "{}")
    assert parse_hook(["--home=/h", "prompt-recall"]) == ("prompt-recall", "/h", "", None)
    assert parse_hook(["capture", "--help"]) is None and parse_hook(["recall", "x"]) is None
    assert is_hook_process(["/venv/bin/memvault", "capture"]) and not is_hook_process(["pytest", "capture"])


def test_scope_filters() -> None:
    assert scope_filter() is None
    assert scope_filter(project="tidepool") == "(project = 'tidepool' OR project LIKE '%/tidepool')"
    assert scope_filter(project="/Users/sam/src/tidepool/") == "project = '/Users/sam/src/tidepool'"
    where = scope_filter(source="note", since=datetime(2026, 11, 1), until=datetime(2026, 11, 30, 23, 59))
    assert where == ("source = 'note' AND doc_date >= TIMESTAMP '2026-11-01 00:00:00.000000' "
                     "AND doc_date <= TIMESTAMP '2026-11-30 23:59:00.000000'")
    assert "''" in scope_filter(project="o'brien")  # quoted, never injected
    s = Scope.of(until="2026-11-30")
    assert s.until == datetime(2026, 11, 30, 23, 59, 59, 999999) and bool(s) and not Scope.of()
    with pytest.raises(UsageError, match="YYYY-MM-DD"):
        Scope.of(since="yesterday")
    with pytest.raises(UsageError, match="unknown source"):
        Scope.of(source="slack")
    with pytest.raises(UsageError, match="after"):
        Scope.of(since="2026-12-01", until="2026-11-01")


def test_project_match() -> None:
    assert in_project("/Users/sam/src/homelab", "/Users/sam/src/homelab")
    assert in_project("/Users/sam/src/homelab", "/Users/sam/src/homelab/scripts/x")
    assert not in_project("/Users/sam/src/homelab", "/Users/sam/src/homelab2")
    assert not in_project("/Users/sam/src/homelab", "/Users/sam/src")
    assert in_project("homelab", "/Users/sam/src/homelab/scripts") and not in_project("homelab", "/tmp")
    assert not in_project(None, "/x") and not in_project("/x", None)


def test_hub_table_reads_the_hub_section_and_skips_homes_without_one(tmp_path: Path) -> None:
    # Every hook asks whether its home is a hub client; a file that never says "hub" is
    # answered without parsing it, one that does is parsed as TOML.
    from memvault.live.hub_wire import hub_table

    assert hub_table(tmp_path) is None  # no memvault.toml at all
    (tmp_path / "memvault.toml").write_text('[[sources]]\nkind = "codex"\npath = "/src/github/x"\n')
    assert hub_table(tmp_path) is None  # "hub" inside a path is no [hub] table
    (tmp_path / "memvault.toml").write_text('[hub]\nurl = "https://mini.lan:8765"\nmachine = "laptop"\n')
    assert hub_table(tmp_path) == {"url": "https://mini.lan:8765", "machine": "laptop"}
    (tmp_path / "memvault.toml").write_text('[hub\nurl = "https://mini.lan:8765"\n')
    assert hub_table(tmp_path) is None  # unreadable TOML: the settings loader reports it, not the hook

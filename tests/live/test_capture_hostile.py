"""Hostile capture payloads (issue 26 §3): none jams the drainer, and none makes memvault read
a file outside the configured sources and the agent folders agent-setup registered."""

import json
from pathlib import Path

from memvault.live import spool
from memvault.ops.capture import capture
from memvault.ops.capture_paths import register_agent_folder
from tests.helpers import cc_session


def settings_of(home: Path):
    from memvault.config.settings import load_settings

    return load_settings(home)


def spooled(home: Path, path: str) -> None:
    out = capture(home, json.dumps({"session_id": "s", "transcript_path": path, "hook_event_name": "Stop"}), spawn=False)
    assert out["spooled"], out


def quarantined(home: Path) -> list[str]:
    folder = spool.spool_dir(home / ".memvault") / spool.QUARANTINE
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


def test_a_300_character_transcript_path_is_reported_and_the_next_capture_drains(home: Path, tmp_path: Path,
                                                                                   embedder) -> None:
    from memvault.ops.drain import run_drainer

    projects = tmp_path / "projects"
    projects.mkdir()
    register_agent_folder(home / ".memvault", "claude-code", projects)
    spooled(home, str(projects / ("a" * 300 + ".jsonl")))
    good = projects / "good.jsonl"
    good.write_text(cc_session("good", ["the boiler service is booked for Tuesday", "noted"]))
    spooled(home, str(good))
    totals = run_drainer(settings_of(home), wait=False, embedder=embedder)
    assert spool.pending(home / ".memvault") == 0 and totals["messages_new"] == 2, totals
    assert "File name too long" in " ".join(totals["errors"])
    # Later captures do not pile up behind it.
    good.write_text(good.read_text() + cc_session("good2", ["and the chimney sweep on Friday", "ok"]))
    spooled(home, str(good))
    assert run_drainer(settings_of(home), wait=False, embedder=embedder)["messages_new"] == 2


def test_a_capture_outside_every_source_is_refused_and_logged_not_read(home: Path, tmp_path: Path, embedder) -> None:
    from memvault.ops.drain import run_drainer
    from stores.ledger import Ledger

    secret = tmp_path / "elsewhere" / "private.jsonl"
    secret.parent.mkdir()
    secret.write_text(cc_session("priv", ["my bank PIN reminder lives here", "ok"]))
    spooled(home, str(secret))
    # A symlink inside a registered folder pointing out of it is no way around the rule.
    projects = tmp_path / "projects"
    projects.mkdir()
    register_agent_folder(home / ".memvault", "claude-code", projects)
    (projects / "link.jsonl").symlink_to(secret)
    spooled(home, str(projects / "link.jsonl"))
    totals = run_drainer(settings_of(home), wait=False, embedder=embedder)
    assert totals["messages_new"] == 0 and len(quarantined(home)) == 2 and spool.pending(home / ".memvault") == 0
    log = (home / ".memvault" / spool.LIVE_LOG).read_text()
    assert log.count("outside every configured source") == 2 and "[[sources]]" in log
    settings = settings_of(home)
    if settings.ledger_path.exists():
        with Ledger.open(settings, read_only=True) as ledger:
            assert ledger.counts().messages == 0


def test_an_entry_whose_drain_keeps_failing_is_set_aside_after_three_tries(home: Path, tmp_path: Path,
                                                                           monkeypatch, embedder) -> None:
    import pytest

    import memvault.ops.drain as drain
    from memvault.ops.drain import drain_once

    projects = tmp_path / "projects"
    projects.mkdir()
    register_agent_folder(home / ".memvault", "claude-code", projects)
    poison = projects / "poison.jsonl"
    poison.write_text(cc_session("p", ["x", "y"]))
    spooled(home, str(poison))

    def broken(*_a, **_k):
        raise RuntimeError("an index write that always fails")

    monkeypatch.setattr(drain, "index_conversations", broken)
    for _ in range(spool.MAX_ATTEMPTS):
        with pytest.raises(RuntimeError):
            drain_once(settings_of(home), embedder)
    result = drain_once(settings_of(home), embedder)
    assert "failed 3 times" in " ".join(result.errors) and len(quarantined(home)) == 1
    assert spool.pending(home / ".memvault") == 0

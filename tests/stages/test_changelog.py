"""The changelog stage: one digest and exactly one commit per run that changed something, none
for a run that changed nothing."""

import re
from pathlib import Path
from types import SimpleNamespace

import git

from stores.vault import Vault
from memvault.stages.changelog import run_changelog


def _ctx(home: Path, **kw) -> SimpleNamespace:
    base = {"vault": Vault(home), "run_id": "run-x", "conversations_ingested": 0, "touched_articles": {},
            "rejected": {}, "reports": {}}
    return SimpleNamespace(**{**base, **kw})


def test_real_runs_one_digest_one_commit_then_none(demo_runs) -> None:
    home, first, second = demo_runs["home"], demo_runs["first"], demo_runs["second"]
    log = (home / "Meta" / "Changelog.md").read_text()
    entries = re.findall(r"^## \d{4}-\d\d-\d\d \d\d:\d\d UTC — run (\S+)$", log, re.M)
    assert entries == [first["run_id"]]  # the no-op second run wrote no entry
    assert "- Conversations ingested or updated: 11" in log
    created = sorted(first["articles_created"])
    assert "- Articles created: " + ", ".join(f"[[{s}]]" for s in created) in log
    assert re.search(r"^- Model tokens: \d+; time: [\d.]+s \(ingest [\d.]+s, ", log, re.M)
    repo = git.Repo(home)
    messages = [c.message for c in repo.iter_commits()]
    assert len(messages) == demo_runs["commits_after_first"] == 2
    assert messages[0].startswith(f"memvault run {first['run_id']}: {len(created)} created, 0 updated, "
                                  "0 rejected, 11 conversations")
    assert second["stages"]["changelog"] == {**second["stages"]["changelog"], "committed": None, "digest": False}
    assert not repo.is_dirty(untracked_files=True)


def test_nothing_changed_means_no_digest_and_no_commit(home: Path) -> None:
    commits = Vault(home).commit_count()
    out = run_changelog(_ctx(home, reports={"ingest": {"seconds": 0.1}}))
    assert out.report() == {"committed": None, "digest": False}
    assert Vault(home).commit_count() == commits and not (home / "Meta" / "Changelog.md").exists()


def test_rejections_and_hand_edits_are_recorded_in_one_commit(home: Path) -> None:
    # A person's uncommitted article, which memvault then updates (as synthesize would).
    (home / "articles" / "Tides.md").write_text("# Tides\n\nA person wrote this.\n")
    Vault(home).write(home / "articles" / "Tides.md", "# Tides\n\nA person wrote this. memvault added this.\n")
    ctx = _ctx(home, run_id="run-y", conversations_ingested=2, touched_articles={"Tides": "updated"},
               rejected={"Backups": ["shrank: 10 words is below 70% of the previous 40"]},
               reports={"ingest": {"seconds": 1.0}, "synthesize": {"seconds": 2.5, "tokens": 1234}})
    out = run_changelog(ctx)
    assert out.digest and out.committed
    log = (home / "Meta" / "Changelog.md").read_text()
    assert "run run-y" in log and "- Conversations ingested or updated: 2" in log
    assert "- Articles updated: [[Tides]]" in log and "- Articles created: none" in log
    assert "  - [[Backups]]: shrank: 10 words is below 70% of the previous 40" in log
    assert "- Model tokens: 1234; time: 3.5s (ingest 1.0s, synthesize 2.5s)" in log
    head = git.Repo(home).head.commit
    assert head.message.startswith("memvault run run-y: 0 created, 1 updated, 1 rejected, 2 conversations")
    assert {"articles/Tides.md", "Meta/Changelog.md"} <= set(head.stats.files)
    assert "Includes uncommitted edits a person made" in head.message and "articles/Tides.md" in head.message
    assert run_changelog(_ctx(home, run_id="run-z")).committed is None

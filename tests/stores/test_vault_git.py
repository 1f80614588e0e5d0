"""The vault's git discipline: memvault commits only the files it wrote, only on its own branch,
and refuses a detached HEAD, another branch, a merge or rebase in progress and a stale
index lock with a message that says what to do."""

import json
import logging
import os
import subprocess
import time
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from memvault.errors import VaultStateError
from stores.vault import Vault


def _git(home: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(home), "-c", "user.name=Sam", "-c", "user.email=sam@example.org", *args],
                          check=True, capture_output=True, text=True).stdout


def _cli(home: Path, *args: str):
    from memvault.cli import app

    return CliRunner().invoke(app, ["--home", str(home), *args], catch_exceptions=False)


def test_commit_stages_only_what_memvault_wrote(home: Path) -> None:
    (home / "scratch.txt").write_text("password: hunter2\n")
    (home / "articles" / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (home / "My_Note.md").write_text("a new note, not finished\n")
    (home / "staged.txt").write_text("the person staged this\n")
    _git(home, "add", "staged.txt")
    vault = Vault(home)
    vault.write(home / "articles" / "Tides.md", "# Tides\n\nThe moon pulls the sea.\n")
    sha = vault.commit("memvault run test")
    files = set(git.Repo(home).commit(sha).stats.files)
    assert files == {"articles/Tides.md"}
    status = _git(home, "status", "--porcelain")
    assert "?? scratch.txt" in status and "?? My_Note.md" in status and "?? articles/img.png" in status
    assert "A  staged.txt" in status  # still staged, never committed by memvault
    assert vault.commit("again") is None  # nothing of memvault's is left to commit


def test_removals_are_committed_and_a_killed_run_is_finished_by_the_next(home: Path) -> None:
    vault = Vault(home)
    vault.write(home / "articles" / "Old.md", "# Old\n\nText.\n")
    vault.commit("add")
    vault.remove(home / "articles" / "Old.md")
    vault.write(home / "articles" / "New.md", "# New\n\nText.\n")
    # A new process (the rerun of a killed one) finds what the first recorded before writing.
    sha = Vault(home).commit("next run")
    assert set(git.Repo(home).commit(sha).stats.files) == {"articles/Old.md", "articles/New.md"}
    assert not git.Repo(home).is_dirty(untracked_files=True)


def test_a_persons_uncommitted_edit_is_integrated_and_named_in_the_commit(home: Path) -> None:
    vault = Vault(home)
    path = home / "articles" / "Tides.md"
    vault.write(path, "# Tides\n\nThe moon pulls the sea.\n")
    vault.commit("memvault run 1")
    path.write_text("# Tides\n\nThe moon pulls the sea, as Sam noted.\n")
    vault.write(path, path.read_text() + "\nMore from memvault.\n")
    (home / "articles" / "Other.md").write_text("# Other\n\nSam's draft.\n")  # not memvault's: stays out
    sha = vault.commit("memvault run 2")
    message = git.Repo(home).commit(sha).message
    assert "Includes uncommitted edits a person made" in message and "articles/Tides.md" in message
    assert "Other.md" not in message and "as Sam noted" in git.Repo(home).git.show(f"{sha}:articles/Tides.md")


def test_init_records_the_branch_and_an_older_home_adopts_its_current_one(home: Path) -> None:
    assert _git(home, "config", "memvault.branch").strip() == "main"
    _git(home, "config", "--unset", "memvault.branch")
    _git(home, "checkout", "-q", "-b", "trunk")
    assert Vault(home).check_writable() == "trunk"
    assert _git(home, "config", "memvault.branch").strip() == "trunk"


def test_another_branch_or_a_detached_head_is_refused_before_anything_is_written(home: Path) -> None:
    vault = Vault(home)
    vault.write(home / "articles" / "Tides.md", "# Tides\n\nThe moon pulls the sea.\n")
    vault.commit("memvault run 1")
    _git(home, "checkout", "-q", "-b", "experiment")
    with pytest.raises(VaultStateError, match="on branch 'experiment'.*only to its branch 'main'"):
        vault.check_writable()
    vault.write(home / "articles" / "Tides.md", "# Tides\n\nChanged.\n")
    with pytest.raises(VaultStateError):
        vault.commit("stranded")  # the commit itself checks again
    _git(home, "checkout", "-q", "--", "articles/Tides.md")
    _git(home, "checkout", "-q", "--detach", "main")
    with pytest.raises(VaultStateError, match="detached"):
        vault.check_writable()
    before = _git(home, "log", "--all", "--oneline")
    result = _cli(home, "lint", "--fix")
    assert result.exit_code == 1 and "detached" in result.output
    result = _cli(home, "forget", "Tides", "--yes", "--json")
    assert result.exit_code == 1 and json.loads(result.output)["type"] == "VaultStateError"
    assert (home / "articles" / "Tides.md").is_file() and _git(home, "log", "--all", "--oneline") == before


def test_a_run_on_another_branch_is_refused_before_any_stage(home: Path) -> None:
    from flows.nightly import RunOptions, execute

    _git(home, "checkout", "-q", "-b", "experiment")
    with pytest.raises(VaultStateError, match="experiment"):
        execute(RunOptions(home=str(home), engine="none"), logging.getLogger("test"))
    assert not (home / ".memvault" / "ledger.duckdb").exists()  # no stage ran
    result = _cli(home, "run")
    assert result.exit_code == 1 and "memvault commits only to its branch 'main'" in result.output


def test_a_merge_in_progress_is_refused(home: Path) -> None:
    vault = Vault(home)
    vault.write(home / "articles" / "Tides.md", "# Tides\n\nOne.\n")
    vault.commit("memvault run 1")
    _git(home, "checkout", "-q", "-b", "side")
    (home / "articles" / "Tides.md").write_text("# Tides\n\nSide.\n")
    _git(home, "commit", "-qam", "side")
    _git(home, "checkout", "-q", "main")
    (home / "articles" / "Tides.md").write_text("# Tides\n\nMain.\n")
    _git(home, "commit", "-qam", "main")
    # Its own identity: a machine without a global git identity must run this test too.
    subprocess.run(["git", "-C", str(home), "-c", "user.name=Sam", "-c", "user.email=sam@example.org",
                    "merge", "side"], capture_output=True)
    with pytest.raises(VaultStateError, match="a merge is in progress"):
        vault.check_writable()


def test_a_lock_a_live_git_process_may_hold_is_named_with_what_to_do(home: Path) -> None:
    # A git command of this home, started before the lock, may be the lock's owner: refused.
    running = subprocess.Popen(["git", "-C", str(home), "cat-file", "--batch"], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.5)  # the lock is made later than the process started (start times count in ticks)
        lock = home / ".git" / "index.lock"
        lock.write_text("")
        vault = Vault(home)
        vault.write(home / "articles" / "Tides.md", "# Tides\n\nOne.\n")
        with pytest.raises(VaultStateError, match=r"index\.lock exists.*rm "):
            vault.commit("blocked")
        result = _cli(home, "lint", "--fix")
        assert result.exit_code == 1 and "index.lock" in result.output and "Traceback" not in result.output
    finally:
        running.kill()
        running.wait()


def _commit_past_a_killed_git(home: Path, caplog, age_s: float) -> None:
    """What a SIGKILL of git leaves: the lock, ``age_s`` old, and no git process that could own
    it; the next commit removes it and says so."""
    lock = home / ".git" / "index.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - age_s, time.time() - age_s))
    vault = Vault(home)
    vault.write(home / "articles" / "Tides.md", "# Tides\n\nOne.\n")
    with caplog.at_level(logging.WARNING, logger="stores.vault"):
        assert vault.commit("after the kill") is not None
    assert not lock.exists() and "removed the stale git index lock" in caplog.text


def test_a_lock_older_than_every_git_process_of_the_home_is_removed_and_logged(home: Path, caplog) -> None:
    _commit_past_a_killed_git(home, caplog, age_s=60)


def test_without_proc_ps_lists_every_live_git_process(tmp_path: Path) -> None:
    """macOS has no /proc: `ps` gives each live git process's elapsed time, so a lock made
    after a running git started is kept, and one older than every git process is stale."""
    from stores.vault import _etime_seconds, ps_git_starts

    assert [_etime_seconds(t) for t in ("00:07", "12:34", "01:02:03", "2-01:00:00", "x", "1:2:3:4")] == \
        [7.0, 754.0, 3723.0, 176400.0, None, None]
    before = time.time()
    running = subprocess.Popen(["git", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.2)
        starts = ps_git_starts()
        assert starts is not None and any(before - 3 <= s <= time.time() for s in starts)
    finally:
        running.kill()
        running.wait()
    assert ps_git_starts(ps=str(tmp_path / "no-such-ps")) is None  # cannot tell: never stale on a guess


def test_a_machine_without_proc_removes_a_stale_lock_through_ps(home: Path, monkeypatch, caplog) -> None:
    import stores.vault as vault_module

    monkeypatch.setattr(vault_module, "git_process_starts", lambda _home: vault_module.ps_git_starts())
    _commit_past_a_killed_git(home, caplog, age_s=3600)

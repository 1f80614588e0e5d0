"""`redact --rescan --rewrite-history` on a real git vault: every commit of the vault's branch is
written again without the secrets, authors and dates kept, the old tip kept under a backup ref,
the working tree left clean; without the flag history is left alone and the report says so."""

import json
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from memvault.cli import app
from stores.vault import Vault

PASSWORD = "Kw9xTr42Lm"
MYSQL = f"Restore with `mysql -h db.internal -u shop -p{PASSWORD} shop < dump.sql`."
PGPASS = "db.internal:5432:shop:shop_rw:Pg7hQ2zX9wLm"


def _git(home: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(home), *args], capture_output=True, text=True, check=True).stdout


def _history_text(home: Path, ref: str) -> str:
    """Every file version and message reachable from ``ref``."""
    return _git(home, "log", "-p", "--format=%H %an <%ae> %ad%n%B", ref)


def _seed(home: Path) -> None:
    """Three commits: two by memvault that hold secrets, one by a person in between."""
    vault = Vault(home)
    article = home / "articles" / "Database_Restore.md"
    vault.write(article, f"# Database Restore\n\n{MYSQL}\n")
    vault.commit(f"run: restore notes ({PGPASS})")
    (home / "articles" / "Notes.md").write_text("# Notes\n\nplain text a person wrote\n")
    _git(home, "add", "articles/Notes.md")
    _git(home, "-c", "user.name=Sam", "-c", "user.email=sam@example.org", "commit", "-q", "-m", "my notes")
    vault.write(article, f"# Database Restore\n\n{MYSQL}\n\nThe `.pgpass` line: `{PGPASS}`\n")
    vault.commit("run: pgpass")


def _rescan(home: Path, *flags: str) -> dict:
    out = CliRunner().invoke(app, ["--home", str(home), "redact", "--rescan", *flags, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_rewrite_history_purges_every_commit_and_keeps_a_backup(home: Path) -> None:
    _seed(home)
    before = _git(home, "log", "--format=%an|%ae|%ad|%s", "main").splitlines()
    old_tip = _git(home, "rev-parse", "main").strip()

    plain = _rescan(home)  # no flag: the working tree is cleaned, history is not
    assert plain["history"] is None and "rewritten only on request" in plain["note"]
    assert PASSWORD in _history_text(home, "main")

    report = _rescan(home, "--rewrite-history")
    history = report["history"]
    assert history["commits"] == len(before) + 1  # the plain rescan's own commit too
    assert history["commits_changed"] >= 3 and history["blobs_changed"] >= 2
    assert history["old_tip"] != history["new_tip"] and history["worktree_differs"] == []
    backup = history["backup_ref"]
    assert backup.startswith("refs/memvault/backup/") and backup in report["note"]

    rewritten = _history_text(home, "main")
    assert PASSWORD not in rewritten and "Pg7hQ2zX9wLm" not in rewritten
    assert "[REDACTED:mysql_password]" in rewritten and "[REDACTED:pgpass_line]" in rewritten
    assert "plain text a person wrote" in rewritten
    # Same shape, authors and dates; the person's commit is unchanged apart from its parent.
    after = _git(home, "log", "--format=%an|%ae|%ad|%s", "main").splitlines()
    assert [a.split("|")[:3] for a in after[1:]] == [b.split("|")[:3] for b in before]
    assert "run: restore notes (db.internal:5432:shop:shop_rw:[REDACTED:pgpass_line])" in after[-2]
    # The old history is kept under the backup ref, the working tree is clean.
    assert _git(home, "rev-parse", backup).strip() != _git(home, "rev-parse", "main").strip()
    assert old_tip in _git(home, "rev-list", backup)
    assert PASSWORD in _history_text(home, backup)
    assert _git(home, "status", "--porcelain") == ""
    assert _git(home, "fsck", "--no-dangling") == ""

    again = _rescan(home, "--rewrite-history")  # idempotent: nothing left to rewrite
    assert again["history"]["backup_ref"] == "" and again["history"]["commits_changed"] == 0

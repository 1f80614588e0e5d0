"""`memvault init`: creates the home from vault_template/, idempotent, never clobbers edits."""

from pathlib import Path

import git

from memvault.ops.home import init_home


def tree(root: Path) -> dict[str, bytes]:
    # Not .memvault/: the writer lock's note there says when the last writer started.
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and not {".git", ".memvault"} & set(p.relative_to(root).parts)}


def test_init_creates_the_vault_layout_and_one_commit(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = init_home(home)
    for rel in ("articles", "Talk", "Meta/Editorial_Guidelines.md", "Meta/Article_Conventions.md",
                "Meta/Buckets.md", "Meta/Topics_to_Ignore.md", "Meta/Synthesis_Pipeline.md",
                "README.md", "memvault.toml", ".gitignore"):
        assert (home / rel).exists(), rel
    assert ".memvault/" in (home / ".gitignore").read_text()
    repo = git.Repo(home)
    assert len(list(repo.iter_commits())) == 1
    assert result.committed == repo.head.commit.hexsha
    assert not any(p.endswith("__init__.py") for p in result.created)


def test_second_init_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    init_home(home)
    before = tree(home)
    head = git.Repo(home).head.commit.hexsha
    again = init_home(home)
    assert again.created == [] and again.committed is None
    assert tree(home) == before
    assert git.Repo(home).head.commit.hexsha == head


def test_init_keeps_an_edited_meta_page_and_restores_a_missing_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    init_home(home)
    edited = home / "Meta" / "Editorial_Guidelines.md"
    edited.write_text("# My own rules\n\nWrite like me.\n")
    (home / "Meta" / "Buckets.md").unlink()
    result = init_home(home)
    assert edited.read_text() == "# My own rules\n\nWrite like me.\n"
    assert result.created == ["Meta/Buckets.md"]
    assert (home / "Meta" / "Buckets.md").exists()

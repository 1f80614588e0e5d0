"""The vault: Markdown articles, Talk and Meta pages in a git repository.

Writes are atomic (temp file + rename); each run makes at most one commit through GitPython,
so `git log` is the audit trail. Paths derived from titles always resolve inside the vault.
"""

from pathlib import Path

import git

from memvault.files import atomic_write_text
from memvault.markdown.names import safe_path, stem_to_title, title_to_stem

AUTHOR = git.Actor("memvault", "memvault@localhost")


class Vault:
    """Narrow interface over the vault folder (the memory home's git-tracked part)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.articles_dir = home / "articles"
        self.talk_dir = home / "Talk"
        self.meta_dir = home / "Meta"

    # -- git --------------------------------------------------------------------------------
    @property
    def _repo(self) -> git.Repo:
        return git.Repo(self.home)

    def init_repo(self) -> bool:
        """``git init`` when the home is not a repository yet; returns True when it created one."""
        if (self.home / ".git").exists():
            return False
        git.Repo.init(self.home, initial_branch="main")
        return True

    def commit(self, message: str) -> str | None:
        """Stage every vault change and commit it; None when nothing changed."""
        repo = self._repo
        repo.git.add(A=True)
        if repo.head.is_valid() and not repo.index.diff("HEAD"):
            return None
        if not repo.head.is_valid() and not repo.index.entries:
            return None
        commit = repo.index.commit(message, author=AUTHOR, committer=AUTHOR)
        return commit.hexsha

    def dirty_paths(self) -> list[str]:
        repo = self._repo
        changed = {d.a_path for d in repo.index.diff(None) if d.a_path} | set(repo.untracked_files)
        if repo.head.is_valid():
            changed |= {d.a_path for d in repo.index.diff("HEAD") if d.a_path}
        return sorted(changed)

    def untracked_paths(self) -> set[str]:
        """Files git does not know yet (relative to the home, `/`-separated)."""
        return set(self._repo.untracked_files)

    def edited_by_hand(self, rel: str) -> bool:
        """Whether the last commit touching ``rel`` was made by someone other than memvault
        (False when it was never committed)."""
        repo = self._repo
        if not repo.head.is_valid():
            return False
        last = next(repo.iter_commits(paths=rel, max_count=1), None)
        return last is not None and last.author.email != AUTHOR.email

    def commit_count(self) -> int:
        repo = self._repo
        return int(repo.git.rev_list("--count", "HEAD")) if repo.head.is_valid() else 0

    # -- articles ---------------------------------------------------------------------------
    def article_path(self, title_or_stem: str) -> Path:
        return safe_path(self.articles_dir, title_to_stem(title_or_stem))

    def talk_path(self, title_or_stem: str) -> Path:
        return safe_path(self.talk_dir, title_to_stem(title_or_stem))

    def list_articles(self) -> list[Path]:
        if not self.articles_dir.is_dir():
            return []
        return sorted(p for p in self.articles_dir.glob("*.md") if p.is_file())

    def read(self, path: Path) -> str | None:
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def write(self, path: Path, text: str) -> bool:
        """Atomically write ``text``; returns False (and writes nothing) when it is unchanged."""
        resolved = path.resolve()
        if not resolved.is_relative_to(self.home.resolve()):
            raise ValueError(f"refusing to write outside the memory home: {path}")
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return False
        atomic_write_text(path, text)
        return True

    def remove(self, path: Path) -> None:
        """Delete a vault file (a symlink itself, never its target); only inside the home."""
        if not path.parent.resolve().is_relative_to(self.home.resolve()):
            raise ValueError(f"refusing to remove a file outside the memory home: {path}")
        path.unlink(missing_ok=True)

    def find_article(self, name: str) -> Path | None:
        """An article by title or file stem, case-insensitively."""
        key = title_to_stem(name).casefold()
        for path in self.list_articles():
            if path.stem.casefold() == key:
                return path
        return None

    @staticmethod
    def title_of(path: Path) -> str:
        return stem_to_title(path.stem)

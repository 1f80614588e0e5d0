"""The vault: Markdown articles, Talk and Meta pages in a git repository.

Writes are atomic (temp file + rename); each run makes at most one commit through GitPython,
so `git log` is the audit trail. Paths derived from titles always resolve inside the vault.

memvault commits only what it wrote: every path written or removed through this class is
recorded in `.memvault/vault-pending.json` *before* the file changes (so a killed run's
writes are committed by the next one), and `commit` stages exactly those paths — never a
person's unrelated files. It commits only on the vault's own branch (recorded in the
repository's git config as `memvault.branch` at init; an older home adopts its current
branch once) and refuses a detached HEAD, another branch, a merge or rebase in progress or
a stale `.git/index.lock`.
"""

import hashlib
import json
import logging
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memvault.errors import VaultStateError
from memvault.files import atomic_write_text
from memvault.markdown.names import safe_path, stem_to_title, title_to_stem

if TYPE_CHECKING:  # GitPython is imported on first git use: reading articles (recall) never needs it
    import git

log = logging.getLogger(__name__)
AUTHOR_NAME, AUTHOR_EMAIL = "memvault", "memvault@localhost"
PENDING = ".memvault/vault-pending.json"
BRANCH_KEY = "memvault.branch"
DEFAULT_BRANCH = "main"
# Files git leaves in .git/ while an operation waits for the person to finish it.
_IN_PROGRESS = {"MERGE_HEAD": "a merge", "rebase-merge": "a rebase", "rebase-apply": "a rebase (or `git am`)",
                "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert", "BISECT_LOG": "a bisect"}


class Vault:
    """Narrow interface over the vault folder (the memory home's git-tracked part)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.articles_dir = home / "articles"
        self.talk_dir = home / "Talk"
        self.meta_dir = home / "Meta"

    # -- git --------------------------------------------------------------------------------
    @property
    def _repo(self) -> "git.Repo":
        import git

        return git.Repo(self.home)

    def init_repo(self) -> bool:
        """``git init`` when the home is not a repository yet; returns True when it created one."""
        if (self.home / ".git").exists():
            return False
        import git

        git.Repo.init(self.home, initial_branch="main")
        return True

    def keep_owner_only(self) -> None:
        """Have git itself create owner-only files in this repository (objects 0400, the rest
        0600, folders 0700), whoever runs git in it and with whatever umask: git writes objects
        0444 otherwise, readable by every account."""
        repo = self._repo
        with repo.config_reader() as cfg:
            if cfg.has_option("core", "sharedRepository") and str(cfg.get_value("core", "sharedRepository")) == "0600":
                return
        with repo.config_writer() as cfg:
            cfg.set_value("core", "sharedRepository", "0600")

    def record_branch(self) -> str:
        """The vault's own branch, recorded once (init, or the first write of an older home):
        the branch HEAD is on, ``main`` for a repository with no commit yet."""
        repo = self._repo
        with repo.config_reader() as cfg:
            if cfg.has_option("memvault", "branch"):
                return str(cfg.get_value("memvault", "branch"))
        if repo.head.is_detached:
            raise VaultStateError(
                f"the vault at {self.home} has a detached HEAD and no recorded branch — check out the branch "
                f"memvault should commit to (`git -C {self.home} checkout main`) and run again")
        branch = repo.active_branch.name or DEFAULT_BRANCH
        with repo.config_writer() as cfg:
            cfg.set_value("memvault", "branch", branch)
        return branch

    def check_writable(self) -> str:
        """Raise VaultStateError unless memvault may commit now; returns the vault's branch.

        Called before a run, `lint --fix`, `forget` or `redact --rescan` writes anything, and
        again before each commit (a person may switch branches while a run works).
        """
        git_dir = self.home / ".git"
        if not git_dir.exists():
            raise VaultStateError(f"{self.home} is not a git repository — run `memvault init`")
        repo = self._repo
        gd = Path(repo.git_dir)
        for name, what in _IN_PROGRESS.items():
            if (gd / name).exists():
                raise VaultStateError(
                    f"{what} is in progress in the vault ({gd / name} exists) — finish or abort it "
                    f"(e.g. `git -C {self.home} merge --abort` / `rebase --abort`), then run memvault again; "
                    "nothing was changed")
        lock = gd / "index.lock"
        if lock.exists() and not self._remove_stale_lock(lock):
            raise VaultStateError(
                f"git's index lock {lock} exists: another git command is running in the vault, or one crashed. "
                f"If no git command is running, delete the file (`rm {lock}`) and run memvault again; "
                "nothing was changed")
        branch = self.record_branch()
        if repo.head.is_detached:
            raise VaultStateError(
                f"the vault's HEAD is detached; memvault commits only to its branch '{branch}' — "
                f"`git -C {self.home} checkout {branch}` and run again; nothing was changed")
        current = repo.active_branch.name
        if current != branch:
            raise VaultStateError(
                f"the vault is on branch '{current}', but memvault commits only to its branch '{branch}' — "
                f"`git -C {self.home} checkout {branch}` (merge your branch later if you like) and run again; "
                f"nothing was changed. To make '{current}' memvault's branch instead: "
                f"`git -C {self.home} config {BRANCH_KEY} {current}`")
        return branch

    def _remove_stale_lock(self, lock: Path) -> bool:
        """Remove ``lock`` when it is older than every live git process working in this home
        (so none of them can hold it: its git was killed); True when it was removed."""
        try:
            made = lock.stat().st_mtime
        except FileNotFoundError:
            return True
        starts = git_process_starts(self.home)
        if starts is None or any(start <= made + 1.0 for start in starts):
            return False  # cannot tell, or a git process that may hold it still runs
        try:
            lock.unlink()
        except FileNotFoundError:
            pass
        log.warning("removed the stale git index lock %s (left at %s by a git process that no longer runs)",
                    lock, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(made)))
        return True

    # -- what memvault wrote ----------------------------------------------------------------
    def _pending_file(self) -> Path:
        return self.home / PENDING

    def pending(self) -> dict[str, dict[str, bool]]:
        """Paths memvault wrote or removed since its last commit (relative → {"hand": …}).

        ``hand`` marks a file that held a person's uncommitted edit when memvault first wrote
        it: the edit is integrated (memvault worked from the working-tree text) and the commit
        says so.
        """
        path = self._pending_file()
        if not path.is_file():
            return {}
        return dict(json.loads(path.read_text(encoding="utf-8")).get("paths", {}))

    def pending_paths(self) -> list[str]:
        return sorted(self.pending())

    def record(self, paths: Sequence[Path | str]) -> None:
        """Note files memvault is about to write or remove (before it does, so a kill loses nothing)."""
        pending = self.pending()
        added = False
        for p in paths:
            rel = self._rel(Path(p))
            if rel in pending:
                continue
            pending[rel] = {"hand": self._differs_from_head(rel)}
            added = True
        if added:
            atomic_write_text(self._pending_file(), json.dumps({"paths": pending}, indent=1, sort_keys=True) + "\n")

    def _rel(self, path: Path) -> str:
        full = path if path.is_absolute() else self.home / path
        return full.parent.resolve().joinpath(full.name).relative_to(self.home.resolve()).as_posix()

    def _differs_from_head(self, rel: str) -> bool:
        """Whether the working-tree file holds something HEAD does not (a person's uncommitted edit)."""
        path = self.home / rel
        if not path.is_file():
            return False
        repo = self._repo
        if not repo.head.is_valid():
            return False
        data = path.read_bytes()
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        try:
            return (repo.head.commit.tree / rel).hexsha != blob
        except KeyError:
            return True  # a file a person created that memvault now writes over

    def commit(self, message: str) -> str | None:
        """Commit exactly the paths memvault wrote or removed since its last commit, on the
        vault's branch; None when they hold no change. A person's other files, staged or not,
        stay as they are."""
        self.check_writable()
        pending = self.pending()
        if not pending:
            return None
        import git

        repo = self._repo
        in_head: set[str] = set()
        if repo.head.is_valid():
            in_head = {rel for rel in pending if self._in_tree(repo, rel)}
        on_disk = [rel for rel in pending if (self.home / rel).is_file()]
        ignored = set(repo.ignored(*on_disk)) if on_disk else set()
        present = [rel for rel in on_disk if rel not in ignored]
        gone = [rel for rel in pending if rel not in present]
        paths = sorted(set(present) | (set(gone) & in_head))
        try:
            if present:
                repo.git.add("--", *present)
            if gone:
                repo.git.rm("--cached", "--quiet", "--ignore-unmatch", "--", *gone)
            changed = bool(paths) and (repo.git.diff("--cached", "--name-only", "HEAD", "--", *paths).strip() != ""
                                       if repo.head.is_valid() else bool(present))
            if not changed:
                self._pending_file().unlink(missing_ok=True)
                return None
            hand = sorted(rel for rel, v in pending.items() if v.get("hand") and rel in paths)
            if hand:
                message += ("\n\nIncludes uncommitted edits a person made before memvault wrote these files "
                            "(memvault worked from the working-tree text): " + ", ".join(hand))
            env = {"GIT_AUTHOR_NAME": AUTHOR_NAME, "GIT_AUTHOR_EMAIL": AUTHOR_EMAIL,
                   "GIT_COMMITTER_NAME": AUTHOR_NAME, "GIT_COMMITTER_EMAIL": AUTHOR_EMAIL}
            # --only: commit these paths alone, whatever else a person has staged.
            repo.git.commit("--only", "--no-gpg-sign", "--quiet", "-m", message, "--", *paths, env=env)
        except git.GitCommandError as exc:
            if "index.lock" in str(exc):
                self.check_writable()  # names the lock file and what to do
            raise VaultStateError(f"git could not commit the vault at {self.home}: {exc.stderr.strip() or exc} — "
                                  "memvault's changes are kept and committed by the next run") from None
        self._pending_file().unlink(missing_ok=True)
        return repo.head.commit.hexsha

    @staticmethod
    def _in_tree(repo: "git.Repo", rel: str) -> bool:
        try:
            repo.head.commit.tree / rel
            return True
        except KeyError:
            return False

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
        return last is not None and last.author.email != AUTHOR_EMAIL

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

    def read_articles(self) -> dict[str, tuple[Path, str]]:
        """Every article: stem → (its file, its text). Files are written back where they are (an
        imported file name may not be the sanitized form of its stem)."""
        out = {}
        for path in self.list_articles():
            try:
                out[path.stem] = (path, path.read_text(encoding="utf-8"))
            except UnicodeDecodeError:
                continue  # not text memvault can edit; `memvault lint` reports it (not-utf8)
        return out

    def read(self, path: Path) -> str | None:
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def write(self, path: Path, text: str) -> bool:
        """Atomically write ``text``; returns False (and writes nothing) when it is unchanged."""
        resolved = path.resolve()
        if not resolved.is_relative_to(self.home.resolve()):
            raise ValueError(f"refusing to write outside the memory home: {path}")
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return False
        self.record([path])
        atomic_write_text(path, text)
        return True

    def remove(self, path: Path) -> None:
        """Delete a vault file (a symlink itself, never its target); only inside the home."""
        if not path.parent.resolve().is_relative_to(self.home.resolve()):
            raise ValueError(f"refusing to remove a file outside the memory home: {path}")
        self.record([path])
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


def git_process_starts(home: Path) -> list[float] | None:
    """Start times (epoch seconds) of the live git processes working in ``home`` (Linux's
    /proc: their working folder is in the home, or `-C` names it). Without /proc (macOS, the
    BSDs) `ps` gives every live git process of the machine, wherever it works: more than the
    home's, so a lock is taken for stale only when no git process at all may hold it. None
    where processes cannot be inspected, so a lock is never taken for stale on a guess."""
    proc = Path("/proc")
    try:
        boot = next(float(line.split()[1]) for line in (proc / "stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration, ValueError, IndexError):
        return ps_git_starts()
    tick = os.sysconf("SC_CLK_TCK")
    home_s = str(home.resolve())
    starts: list[float] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "comm").read_text().startswith("git"):
                continue
            cwd = os.readlink(entry / "cwd")
            args = (entry / "cmdline").read_bytes().split(b"\0")
            stat_fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if cwd == home_s or cwd.startswith(home_s + "/") or os.fsencode(home_s) in args:
            starts.append(boot + int(stat_fields[19]) / tick)
    return starts


def ps_git_starts(ps: str = "ps") -> list[float] | None:
    """Start times of every live git process, from `ps -A -o etime= -o comm=` (POSIX: elapsed
    time ``[[dd-]hh:]mm:ss`` and the command name); None when `ps` cannot be run or read."""
    try:
        out = subprocess.run([ps, "-A", "-o", "etime=", "-o", "comm="], capture_output=True, text=True,
                             timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    now = time.time()
    starts: list[float] = []
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) != 2 or not Path(parts[1].strip()).name.startswith("git"):
            continue
        elapsed = _etime_seconds(parts[0])
        if elapsed is None:
            return None  # a line we cannot read: no guess
        starts.append(now - elapsed - 1.0)  # etime counts whole seconds: start no later than this
    return starts


def _etime_seconds(etime: str) -> float | None:
    """``[[dd-]hh:]mm:ss`` → seconds; None for anything else."""
    days, _, clock = etime.rpartition("-")
    try:
        fields = [int(f) for f in clock.split(":")]
        seconds = int(days) * 86400 if days else 0
    except ValueError:
        return None
    if not 2 <= len(fields) <= 3:
        return None
    hms = 0
    for f in fields:
        hms = hms * 60 + f
    return float(seconds + hms)

"""Rewrite the vault branch's history with every blob and commit message passed through a cleaner.

`memvault redact --rescan --rewrite-history` uses it to purge secrets from old commits: every
commit of the vault's branch is written again with the same author, committer, dates and
shape, its files and message redacted; unchanged blobs and trees keep their ids. The old tip
is kept under ``refs/memvault/backup/<UTC timestamp>`` until the user deletes it (the report
says how), so nothing is lost if the rewrite is not what they wanted.

Plain git plumbing (``cat-file --batch``, ``hash-object``, ``mktree``, ``update-ref``) through
one long-lived reader: no extra tool to install, and linear in the number of distinct objects.
"""

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memvault.errors import VaultStateError

BACKUP_PREFIX = "refs/memvault/backup/"


@dataclass
class HistoryRewrite:
    """What a rewrite changed."""

    branch: str
    commits: int = 0
    commits_changed: int = 0
    blobs_changed: int = 0
    old_tip: str = ""
    new_tip: str = ""
    backup_ref: str = ""
    worktree_differs: list[str] = field(default_factory=list)


class _Git:
    """git plumbing for one repository, with a persistent ``cat-file --batch`` reader."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._reader = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def close(self) -> None:
        assert self._reader.stdin is not None
        self._reader.stdin.close()
        self._reader.wait()

    def run(self, *args: str, data: bytes | None = None) -> str:
        proc = subprocess.run(["git", "-C", str(self.repo), *args], input=data, capture_output=True)
        if proc.returncode:
            raise VaultStateError(f"git {' '.join(args[:2])} failed in {self.repo}: "
                                  f"{proc.stderr.decode(errors='replace').strip()} — nothing was changed")
        return proc.stdout.decode()

    def read(self, sha: str) -> tuple[str, bytes]:
        """(type, raw content) of object ``sha``."""
        assert self._reader.stdin is not None and self._reader.stdout is not None
        self._reader.stdin.write(sha.encode() + b"\n")
        self._reader.stdin.flush()
        header = self._reader.stdout.readline().split()
        size = int(header[2])
        body = self._reader.stdout.read(size)
        self._reader.stdout.read(1)  # the newline after each object
        return header[1].decode(), body

    def write(self, kind: str, data: bytes) -> str:
        return self.run("hash-object", "-t", kind, "-w", "--stdin", data=data).strip()


def _tree_entries(raw: bytes) -> list[tuple[bytes, bytes, str]]:
    """(mode, name, sha) of a raw tree object: ``<mode> <name>\\0<20-byte sha>`` repeated."""
    out, i = [], 0
    while i < len(raw):
        space = raw.index(b" ", i)
        nul = raw.index(b"\0", space)
        out.append((raw[i:space], raw[space + 1:nul], raw[nul + 1:nul + 21].hex()))
        i = nul + 21
    return out


class _Rewriter:
    def __init__(self, git: _Git, clean: Callable[[str], str], result: HistoryRewrite) -> None:
        self.git, self.clean, self.result = git, clean, result
        self.objects: dict[str, str] = {}  # old id → new id, for blobs, trees and commits

    def blob(self, sha: str) -> str:
        if sha not in self.objects:
            _, raw = self.git.read(sha)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                self.objects[sha] = sha  # binary (an image): no text secret to find
                return sha
            new = self.clean(text)
            if new == text:
                self.objects[sha] = sha
            else:
                self.objects[sha] = self.git.write("blob", new.encode("utf-8"))
                self.result.blobs_changed += 1
        return self.objects[sha]

    def tree(self, sha: str) -> str:
        if sha not in self.objects:
            _, raw = self.git.read(sha)
            entries, changed = [], False
            for mode, name, child in _tree_entries(raw):
                if mode == b"160000":  # a submodule's commit: not ours
                    new = child
                elif mode == b"40000":
                    new = self.tree(child)
                else:
                    new = self.blob(child)
                changed |= new != child
                entries.append(mode + b" " + name + b"\0" + bytes.fromhex(new))
            self.objects[sha] = self.git.write("tree", b"".join(entries)) if changed else sha
        return self.objects[sha]

    def commit(self, sha: str) -> str:
        _, raw = self.git.read(sha)
        head, _, message = raw.partition(b"\n\n")
        lines = []
        for line in head.split(b"\n"):
            key, _, value = line.partition(b" ")
            if key == b"tree":
                line = b"tree " + self.tree(value.decode()).encode()
            elif key == b"parent":
                line = b"parent " + self.objects.get(value.decode(), value.decode()).encode()
            elif key in (b"gpgsig", b"gpgsig-sha256") or line.startswith(b" "):
                continue  # a signature (and its continuation lines) would no longer verify
            lines.append(line)
        try:
            message = self.clean(message.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            pass
        new_raw = b"\n".join(lines) + b"\n\n" + message
        new = sha if new_raw == raw else self.git.write("commit", new_raw)
        self.objects[sha] = new
        self.result.commits += 1
        self.result.commits_changed += new != sha
        return new


def rewrite_branch(repo: Path, branch: str, clean: Callable[[str], str]) -> HistoryRewrite:
    """Rewrite every commit of ``branch`` with ``clean`` applied to each text blob and message.

    The branch moves only when something changed; then the old tip is kept under a backup
    ref and the index entries that pointed at rewritten blobs point at their new versions, so
    a working tree that already holds the redacted text stays clean.
    """
    result = HistoryRewrite(branch=branch)
    git = _Git(repo)
    try:
        ref = f"refs/heads/{branch}"
        old_tip = git.run("rev-parse", "--verify", "--quiet", ref).strip()
        result.old_tip = result.new_tip = old_tip
        rewriter = _Rewriter(git, clean, result)
        for sha in git.run("rev-list", "--reverse", "--topo-order", ref).split():
            rewriter.commit(sha)
        new_tip = rewriter.objects[old_tip]
        if new_tip == old_tip:
            return result
        result.new_tip = new_tip
        result.backup_ref = BACKUP_PREFIX + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        git.run("update-ref", "-m", "memvault redact: backup before rewriting history", result.backup_ref, old_tip)
        git.run("update-ref", "-m", "memvault redact --rewrite-history", ref, new_tip, old_tip)
        _follow_index(git, rewriter.objects)
        result.worktree_differs = sorted(p for p in git.run("diff", "--name-only", "-z").split("\0") if p)
    finally:
        git.close()
    return result


def _follow_index(git: _Git, objects: dict[str, str]) -> None:
    """Point index entries at the rewritten blobs (a person's own staged changes stay staged)."""
    updates = []
    for line in git.run("ls-files", "--stage", "-z").split("\0"):
        if not line:
            continue
        meta, _, path = line.partition("\t")
        mode, sha, stage = meta.split()
        new = objects.get(sha, sha)
        if new != sha and stage == "0":
            updates.append(f"{mode} {new}\t{path}")
    if updates:
        git.run("update-index", "-z", "--index-info", data="\0".join(updates).encode() + b"\0")

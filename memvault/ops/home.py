"""The memory home: creating it from vault_template/ and checking that it exists.

``init`` is idempotent: it adds only missing files, never overwrites one (a person may have
edited it), and makes the initial commit (of the files it created, nothing else) only when
the repository has no commit yet. It records the branch memvault commits to (`main` for a new
repository, the current branch of an existing one).
"""

import json
import os
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from memvault.errors import NoHomeError
from memvault.files import narrow_permissions, owner_only_umask, wide_paths
from memvault.lock import writer_lock
from memvault.sources.kinds import KINDS
from stores.vault import Vault

# Template files whose names cannot be stored as-is in a Python package.
RENAMES = {"gitignore": ".gitignore"}
SKIP = {"__init__.py", "__pycache__"}

# Where each assistant writes transcripts by default; `standard_sources` applies $CODEX_HOME.
STANDARD_SOURCES = tuple((name, kind.home) for name, kind in KINDS.items() if kind.home)


@dataclass
class InitResult:
    home: Path
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    committed: str | None = None
    detected_sources: list[tuple[str, str]] = field(default_factory=list)
    narrowed: list[str] = field(default_factory=list)


def _template_files() -> list[tuple[str, bytes]]:
    root = resources.files("vault_template")
    out: list[tuple[str, bytes]] = []

    def walk(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name in SKIP or child.name.endswith(".pyc"):
                continue
            rel = f"{prefix}{RENAMES.get(child.name, child.name)}"
            if child.is_dir():
                walk(child, rel + "/")
            else:
                out.append((rel, child.read_bytes()))

    walk(root, "")
    return out


def standard_sources() -> list[tuple[str, str]]:
    """Where each assistant keeps its transcripts here; Codex honours `$CODEX_HOME` as Codex does."""
    codex_home = os.environ.get("CODEX_HOME", "").strip()
    return [(kind, f"{codex_home.rstrip('/')}/sessions" if kind == "codex" and codex_home else path)
            for kind, path in STANDARD_SOURCES]


def detect_sources() -> list[tuple[str, str]]:
    """Standard transcript locations that exist on this machine."""
    return [(kind, path) for kind, path in standard_sources() if Path(path).expanduser().is_dir()]


def sources_snippet(sources: list[tuple[str, str]]) -> str:
    """`[[sources]]` tables for memvault.toml, ready to paste (valid TOML, strings escaped)."""
    # A JSON string is a TOML basic string: quotes, backslashes and controls escaped. Non-ASCII
    # stays as is, since TOML refuses the surrogate pairs JSON would write for an emoji.
    def quoted(text: str) -> str:
        return json.dumps(text, ensure_ascii=False)

    return "".join(f"\n[[sources]]\nkind = {quoted(kind)}\npath = {quoted(path)}\n" for kind, path in sources)


def init_home(home: Path, lock_timeout_s: float = 5.0, fix_permissions: bool = False) -> InitResult:
    """Create or complete the memory home at ``home``, under the writer lock (waiting up to
    ``lock_timeout_s``, the settings' `lock_timeout_s`); with ``fix_permissions``, narrow
    what is wider than owner-only in an existing home too (``InitResult.narrowed``).

    The lock is taken directly, not through a writing session: there are no settings to
    load before the home (and its memvault.toml) exists.
    """
    owner_only_umask()
    home.mkdir(parents=True, exist_ok=True)
    with writer_lock(home / ".memvault", "memvault init", lock_timeout_s):
        result = _init(home)
        if fix_permissions:
            result.narrowed = [str(p.relative_to(home)) or "." for p in narrow_permissions(home)]
        return result


def permission_warnings(home: Path) -> list[str]:
    """What `status` (and `doctor`) say when the home is wider than owner-only: other accounts
    on this machine could read the memory."""
    wide = wide_paths(home, limit=1000)
    if not wide:
        return []
    first = wide[0]
    mode = oct(first.lstat().st_mode & 0o777)[2:]
    more = "1000 or more" if len(wide) >= 1000 else str(len(wide))
    return [f"the memory home is readable by other accounts: {more} folder(s) or file(s) are wider than owner-only "
            f"(e.g. {first} is {mode}) — `memvault init --fix-permissions` narrows them to 0700/0600"]


def _init(home: Path) -> InitResult:
    result = InitResult(home=home)
    for rel, data in _template_files():
        target = home / rel
        if target.exists():
            result.kept.append(rel)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        result.created.append(rel)
    for folder in ("articles", "Talk", "Meta", ".memvault/runs"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    vault = Vault(home)
    created_repo = vault.init_repo()
    vault.keep_owner_only()
    # The branch memvault commits to from now on: main for a new repository, else the current one.
    vault.record_branch()
    if created_repo or vault.commit_count() == 0:
        # The template files init wrote, and the vault pages of a folder being imported as a
        # home (articles/, Talk/, Meta/ Markdown, README, settings); other files stay the person's.
        vault.record(result.created + [rel for rel in result.kept if _vault_page(rel)] + _existing_pages(home))
        result.committed = vault.commit("memvault init: create the memory home")
    result.detected_sources = detect_sources()
    return result


def _vault_page(rel: str) -> bool:
    return rel in {"README.md", "memvault.toml", ".gitignore"} or (
        rel.split("/")[0] in {"articles", "Talk", "Meta"} and rel.endswith(".md"))


def _existing_pages(home: Path) -> list[str]:
    return [f"{folder}/{p.name}" for folder in ("articles", "Talk", "Meta")
            for p in sorted((home / folder).glob("*.md")) if p.is_file()]


def require_home(home: Path) -> None:
    """Raise the user-facing error when ``home`` is not an initialised memory home."""
    if not (home / "memvault.toml").is_file() or not (home / ".git").exists():
        raise NoHomeError(home)

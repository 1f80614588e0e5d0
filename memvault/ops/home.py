"""The memory home: creating it from vault_template/ and checking that it exists.

``init`` is idempotent: it adds only missing files, never overwrites one (a person may have
edited it), and makes the initial commit only when it created the repository.
"""

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from memvault.errors import NoHomeError
from memvault.lock import writer_lock
from stores.vault import Vault

# Template files whose names cannot be stored as-is in a Python package.
RENAMES = {"gitignore": ".gitignore"}
SKIP = {"__init__.py", "__pycache__"}

STANDARD_SOURCES = (
    ("claude-code", "~/.claude/projects"),
    ("codex", "~/.codex/sessions"),
    ("pi", "~/.pi/agent/sessions"),
)


@dataclass
class InitResult:
    home: Path
    created: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    committed: str | None = None
    detected_sources: list[tuple[str, str]] = field(default_factory=list)


def _template_files() -> list[tuple[str, bytes]]:
    root = resources.files("vault_template")
    out: list[tuple[str, bytes]] = []

    def walk(node, prefix: str) -> None:  # noqa: ANN001 - importlib Traversable
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


def detect_sources() -> list[tuple[str, str]]:
    """Standard transcript locations that exist on this machine."""
    return [(kind, path) for kind, path in STANDARD_SOURCES if Path(path).expanduser().is_dir()]


def init_home(home: Path, lock_timeout_s: float = 5.0) -> InitResult:
    """Create or complete the memory home at ``home``, under the writer lock (waiting up to
    ``lock_timeout_s``, the settings' `lock_timeout_s`).

    The lock is taken directly, not through a writing session: there are no settings to
    load before the home (and its memvault.toml) exists.
    """
    home.mkdir(parents=True, exist_ok=True)
    with writer_lock(home / ".memvault", "memvault init", lock_timeout_s):
        return _init(home)


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
    if created_repo or vault.commit_count() == 0:
        result.committed = vault.commit("memvault init: create the memory home")
    result.detected_sources = detect_sources()
    return result


def require_home(home: Path) -> None:
    """Raise the user-facing error when ``home`` is not an initialised memory home."""
    if not (home / "memvault.toml").is_file() or not (home / ".git").exists():
        raise NoHomeError(home)

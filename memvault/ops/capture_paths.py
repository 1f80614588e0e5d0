"""Which transcript files a hook may ask the drainer to read (issue 26 §3).

A capture payload is written by whatever process runs the hook command, so its
``transcript_path`` is untrusted: read as given, it would let a payload make memvault store
(and recall) any file the user can read. Only files under a configured source, or under an
agent's own transcript folder that `memvault agent-setup` registered, are read; the others
are refused with the reason in ``live.log``.
"""

import json
import os
from pathlib import Path

from memvault.files import atomic_write_text
from memvault.config.settings import Settings

REGISTERED = "agent_sources.json"
MAX_PATH_CHARS = 4096  # PATH_MAX: a longer one cannot name a file


def register_agent_folder(state_dir: Path, kind: str, folder: Path) -> None:
    """Record ``folder`` as where agent ``kind`` writes its transcripts (agent-setup)."""
    known = registered_folders(state_dir)
    paths = known.setdefault(kind, [])
    if str(folder) not in paths:
        paths.append(str(folder))
        atomic_write_text(state_dir / REGISTERED, json.dumps(known, indent=2) + "\n")


def registered_folders(state_dir: Path) -> dict[str, list[str]]:
    """The transcript folders agent-setup registered, by agent kind."""
    try:
        data = json.loads((state_dir / REGISTERED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): [str(p) for p in v if isinstance(p, str)] for k, v in data.items() if isinstance(v, list)}


def allowed_roots(settings: Settings) -> list[Path]:
    """Every folder (or file) a capture may name: configured sources and registered folders."""
    roots = [Path(s.path).expanduser() for s in settings.sources]
    roots += [Path(p).expanduser() for paths in registered_folders(settings.state_dir).values() for p in paths]
    return roots


def refusal(path: str, settings: Settings) -> str | None:
    """Why the transcript at ``path`` must not be read, or None when it may."""
    if len(path) > MAX_PATH_CHARS or "\0" in path:
        return f"transcript_path of {len(path)} characters cannot name a file"
    try:
        real = Path(os.path.realpath(path))
        roots = [Path(os.path.realpath(r)) for r in allowed_roots(settings)]
    except (OSError, ValueError) as exc:
        return f"transcript_path cannot be resolved ({exc})"
    if any(real == root or real.is_relative_to(root) for root in roots):
        return None
    return ("transcript_path lies outside every configured source and every agent transcript folder "
            "registered by `memvault agent-setup` — not read; add its folder to memvault.toml as a "
            "[[sources]] entry if it should be remembered")

"""`agent-setup` for Codex CLI and OpenCode, and a client's `[hub]` table: planned as file edits.

Each setup is a list of `FileEdit` (a path, its text now, its text after): the command prints
their diffs first and writes them only with ``--apply``; an edit that changes nothing is not
written. Every file keeps what memvault does not own: JSON files are merged key by key, TOML
files are edited with tomlkit (comments and layout kept, `memvault.ops.config_edit`).

- **Codex CLI** reads hooks from ``DIR/hooks.json`` (Claude Code's events and JSON; behind
  ``[features] codex_hooks = true``) and MCP servers from ``[mcp_servers.<name>]`` in
  ``DIR/config.toml``; its transcripts (``DIR/sessions``) become a source of the home.
- **OpenCode** takes MCP servers from ``mcp`` in ``DIR/opencode.json`` and loads plugins from
  ``DIR/plugin/``: memvault's plugin captures a session when it goes idle and adds recall to a
  prompt (`memvault.ops.opencode_plugin`).
"""

import json
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.errors import ConfigError
from memvault.files import atomic_write_text
from memvault.ops import config_edit
from memvault.ops.admin_results import HookGroup
from memvault.ops.agent_setup import SERVER_NAME, merge_hooks

CODEX_TIMEOUTS = {"SessionStart": 30, "UserPromptSubmit": 15, "Stop": 10}


@dataclass
class FileEdit:
    """One file memvault would write: its text now and after."""

    path: Path
    before: str
    after: str
    mode: int | None = None  # e.g. 0o600 for a file that names a token

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        return config_edit.diff(self.path, self.before, self.after)

    def write(self) -> str:
        if not self.changed:
            return "unchanged"
        existed = self.path.exists()
        atomic_write_text(self.path, self.after)
        if self.mode is not None:
            self.path.chmod(self.mode)
        return "updated" if existed else "created"


def _json_text(path: Path) -> tuple[str, dict[str, Any]]:
    text = config_edit.read_text(path)
    if not text.strip():
        return text, {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc.msg}, line {exc.lineno}) — fix or move it, then rerun "
                          "`memvault agent-setup`; nothing was written") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object — fix or move it; nothing was written")
    return text, data


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _command(exe: str, home: Path, *args: str) -> str:
    return shlex.join([exe, "--home", str(home), *args])


def codex_edits(exe: str, home: Path, codex_dir: Path, allow_write: bool = False) -> list[FileEdit]:
    """hooks.json, config.toml (MCP server, the hooks feature) and the home's Codex source."""
    hooks_path, config_path = codex_dir / "hooks.json", codex_dir / "config.toml"
    before, hooks = _json_text(hooks_path)
    groups: dict[str, HookGroup] = {
        "SessionStart": {"matcher": "startup|resume|clear|compact",
                         "hooks": [{"type": "command", "command": _command(exe, home, "index-brief"),
                                    "timeout": CODEX_TIMEOUTS["SessionStart"]}]},
        "UserPromptSubmit": {"hooks": [{"type": "command", "command": _command(exe, home, "prompt-recall"),
                                        "timeout": CODEX_TIMEOUTS["UserPromptSubmit"]}]},
        "Stop": {"hooks": [{"type": "command", "command": _command(exe, home, "capture", "--source", "codex"),
                            "timeout": CODEX_TIMEOUTS["Stop"]}]},
    }
    merged = merge_hooks(hooks, groups)
    edits = [FileEdit(hooks_path, before, before if hooks and merged == hooks else _dump(merged))]
    text = config_edit.read_text(config_path)
    server: dict[str, Any] = {"command": exe, "args": ["--home", str(home), "mcp"]}
    if allow_write:
        server["env"] = {"MEMVAULT_MCP__ALLOW_WRITE": "true"}
    new = config_edit.with_table(text, config_path, ("mcp_servers", SERVER_NAME), server)
    new = config_edit.with_table(new, config_path, ("features",), {"codex_hooks": True})
    edits.append(FileEdit(config_path, text, new))
    edits.append(source_edit(home, "codex", str(codex_dir / "sessions")))
    return edits


def opencode_edits(exe: str, home: Path, opencode_dir: Path, allow_write: bool = False) -> list[FileEdit]:
    """opencode.json (the `mcp` entry) and the plugin file."""
    from memvault.ops.opencode_plugin import PLUGIN_NAME, plugin_source

    config_path = opencode_dir / "opencode.json"
    before, config = _json_text(config_path)
    servers = config.get("mcp", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"`mcp` in {config_path} is not an object — fix it by hand; nothing was written")
    entry: dict[str, Any] = {"type": "local", "command": [exe, "--home", str(home), "mcp"], "enabled": True}
    if allow_write:
        entry["environment"] = {"MEMVAULT_MCP__ALLOW_WRITE": "true"}
    after = before if servers.get(SERVER_NAME) == entry else _dump({**config, "mcp": {**servers, SERVER_NAME: entry}})
    plugin = opencode_dir / "plugin" / PLUGIN_NAME
    return [FileEdit(config_path, before, after),
            FileEdit(plugin, config_edit.read_text(plugin), plugin_source(exe, home))]


def source_edit(home: Path, kind: str, folder: str) -> FileEdit:
    """memvault.toml with a ``[[sources]]`` table for ``folder`` (unchanged when one names it)."""
    toml = home / "memvault.toml"
    text = config_edit.read_text(toml)
    return FileEdit(toml, text, config_edit.with_source(text, toml, kind, folder))


def hub_edit(home: Path, url: str, token_file: Path, insecure: bool = False, machine: str | None = None,
             base: str | None = None) -> FileEdit:
    """memvault.toml with the client's ``[hub]`` table (``base``: the text an earlier edit made)."""
    from memvault.live.hub_wire import check_url, read_token

    clean = check_url(url, insecure=insecure)
    path = token_file.expanduser().absolute()
    read_token(path)  # exists, is a token, is not readable by others
    toml = home / "memvault.toml"
    text = config_edit.read_text(toml) if base is None else base
    values: dict[str, Any] = {"url": clean, "token_file": str(path), "insecure": True if insecure else None,
                              "machine": machine}
    return FileEdit(toml, text, config_edit.with_table(text, toml, ("hub",), values))


def in_source_checkout(exe: str) -> Path | None:
    """The source checkout whose ``.venv`` holds ``exe`` (hooks calling it break when the clone
    moves or is deleted), or None for a tool install or a system one."""
    path = Path(exe)
    for parent in path.parents:
        if parent.name == ".venv" and ((parent.parent / "pyproject.toml").exists() or (parent.parent / ".git").exists()):
            return parent.parent
    return None


def write_all(edits: list[FileEdit]) -> dict[str, str]:
    """Write every edit (folded by path: a later edit of one file already holds the earlier one)."""
    last: dict[Path, FileEdit] = {}
    for edit in edits:
        last[edit.path] = edit
    out = {}
    for path, edit in last.items():
        first = next(e for e in edits if e.path == path)
        out[str(path)] = FileEdit(path, first.before, edit.after, edit.mode).write()
    return out


def is_private(path: Path) -> bool:
    return path.exists() and not stat.S_IMODE(path.stat().st_mode) & 0o077

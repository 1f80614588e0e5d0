"""`agent-setup claude-code` wires the live path: capture on three events, prompt recall, opt-in writes."""

import json
import shlex
from pathlib import Path

from typer.testing import CliRunner

from memvault.cli import app
from tests.live.test_live_capture import MEMVAULT

runner = CliRunner()


def setup(home: Path, claude: Path, *extra: str):
    return runner.invoke(app, ["--home", str(home), "agent-setup", "claude-code", "--claude-dir", str(claude),
                               "--exe", MEMVAULT, *extra])


def test_hooks_for_capture_and_prompt_recall(home: Path, tmp_path: Path) -> None:
    claude = tmp_path / "cl" / ".claude"
    claude.mkdir(parents=True)
    (claude / "settings.json").write_text(json.dumps(
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]},
                            {"hooks": [{"type": "command", "command": "/old/memvault --home /x capture"}]}]}}))
    result = setup(home, claude, "--apply", "--json")
    assert result.exit_code == 0, result.output
    hooks = json.loads((claude / "settings.json").read_text())["hooks"]
    for event in ("Stop", "SessionEnd", "PreCompact"):
        ours = [h["command"] for g in hooks[event] for h in g["hooks"] if "memvault" in h["command"]]
        assert [shlex.split(c) for c in ours] == [[MEMVAULT, "--home", str(home), "capture"]], event
    assert hooks["Stop"][0]["hooks"][0]["command"] == "say done"  # someone else's hook is kept
    prompt = [h["command"] for g in hooks["UserPromptSubmit"] for h in g["hooks"]]
    assert [shlex.split(c) for c in prompt] == [[MEMVAULT, "--home", str(home), "prompt-recall"]]
    assert "SessionStart" in hooks
    cfg = json.loads((claude.parent / ".claude.json").read_text())
    assert cfg["mcpServers"]["memvault"]["env"] == {}  # writes stay off unless asked
    again = setup(home, claude, "--apply", "--json")
    assert set(json.loads(again.output)["changes"].values()) == {"unchanged"}


def test_allow_write_is_an_explicit_flag(home: Path, tmp_path: Path) -> None:
    claude = tmp_path / "cl" / ".claude"
    result = setup(home, claude, "--apply", "--allow-write", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["allow_write"] is True
    cfg = json.loads((claude.parent / ".claude.json").read_text())
    assert cfg["mcpServers"]["memvault"]["env"] == {"MEMVAULT_MCP__ALLOW_WRITE": "true"}
    from memvault.config.settings import load_settings
    import os

    os.environ["MEMVAULT_MCP__ALLOW_WRITE"] = "true"
    try:
        assert load_settings(home).mcp.allow_write is True  # what the server will see
    finally:
        del os.environ["MEMVAULT_MCP__ALLOW_WRITE"]
    assert load_settings(home).mcp.allow_write is False

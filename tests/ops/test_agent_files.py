"""`agent-setup codex|opencode` and `doctor`: the files parsed back, other settings kept, and the
hook commands they register run with recorded hook JSON (OpenCode's plugin in node with a
recorded SDK answer)."""

import json
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memvault.cli import app
from memvault.sources import detect_format, parse_file
from tests.helpers import FIXTURES, MEMVAULT, child_env

runner = CliRunner()
CODEX_ROLLOUT = FIXTURES / "formats" / "codex" / "daaain_rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
OPENCODE_ANSWER = FIXTURES / "formats" / "opencode" / "session_messages.RECONSTRUCTED.json"
CODEX_CONFIG = '''# my Codex settings
model = "gpt-5"  # the default model

[mcp_servers.other]
command = "other-server"
args = ["--fast"]
'''


def setup(home: Path, *args: str) -> object:
    return runner.invoke(app, ["--home", str(home), "agent-setup", *args, "--exe", MEMVAULT])


def drained(home: Path, timeout_s: float = 300.0) -> list[dict]:
    """The home's conversations once the drainer the hook started has emptied the spool."""
    import time

    from memvault.live import spool

    state = home / ".memvault"
    deadline = time.monotonic() + timeout_s
    while spool.pending(state) or spool.drainer_running(state):
        assert time.monotonic() < deadline, "the drainer did not empty the spool"
        time.sleep(0.3)
    listed = runner.invoke(app, ["--home", str(home), "conversations", "--json"])
    assert listed.exit_code == 0, listed.output
    return json.loads(listed.output)


def test_codex_setup_keeps_the_users_files_and_its_hooks_run(home: Path, tmp_path: Path) -> None:
    codex = tmp_path / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(CODEX_CONFIG)
    (codex / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}))
    shown = setup(home, "codex", "--codex-dir", str(codex))
    assert shown.exit_code == 0, shown.output
    assert "+[mcp_servers.memvault]" in shown.output and "Nothing written" in shown.output
    assert (codex / "config.toml").read_text() == CODEX_CONFIG

    applied = setup(home, "codex", "--codex-dir", str(codex), "--apply", "--json")
    assert applied.exit_code == 0, applied.output
    text = (codex / "config.toml").read_text()
    assert text.startswith(CODEX_CONFIG)  # comments, order and the other server kept as written
    config = tomllib.loads(text)
    assert config["mcp_servers"]["memvault"] == {"command": MEMVAULT, "args": ["--home", str(home), "mcp"]}
    assert config["mcp_servers"]["other"]["args"] == ["--fast"] and config["features"]["codex_hooks"] is True
    hooks = json.loads((codex / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop"}
    assert [h["command"] for g in hooks["Stop"] for h in g["hooks"]][0] == "say done"
    sources = tomllib.loads((home / "memvault.toml").read_text())["sources"]
    assert {"kind": "codex", "path": str(codex / "sessions")} in sources
    again = setup(home, "codex", "--codex-dir", str(codex), "--apply", "--json")
    assert set(json.loads(again.output)["changes"].values()) == {"unchanged"}

    # The registered commands, run as Codex runs them, with recorded hook JSON.
    rollout = codex / "sessions" / "2026" / CODEX_ROLLOUT.name
    rollout.parent.mkdir(parents=True)
    shutil.copy(CODEX_ROLLOUT, rollout)
    by_event = {e: next(h["command"] for g in groups for h in g["hooks"] if "memvault" in h["command"])
                for e, groups in hooks.items()}
    payloads = {"SessionStart": {"hook_event_name": "SessionStart", "source": "startup", "session_id": "s1"},
                "UserPromptSubmit": {"hook_event_name": "UserPromptSubmit", "prompt": "what did we decide?",
                                     "session_id": "s1", "cwd": str(tmp_path)},
                "Stop": {"hook_event_name": "Stop", "session_id": "s1", "transcript_path": str(rollout),
                         "cwd": str(tmp_path)}}
    env = child_env()
    outputs = {e: subprocess.run(shlex.split(by_event[e]), input=json.dumps(p), capture_output=True, text=True,
                                 timeout=120, env=env) for e, p in payloads.items()}
    assert all(o.returncode == 0 for o in outputs.values())
    assert "<memvault-index>" in outputs["SessionStart"].stdout
    assert [c["source"] for c in drained(home)] == ["codex"]  # the Stop hook's capture, drained


def test_opencode_setup_plugin_and_format(home: Path, tmp_path: Path) -> None:
    oc = tmp_path / "opencode"
    oc.mkdir()
    (oc / "opencode.json").write_text(json.dumps({"$schema": "https://opencode.ai/config.json", "theme": "tokyonight",
                                                   "mcp": {"other": {"type": "remote", "url": "https://x.example"}}}))
    applied = setup(home, "opencode", "--opencode-dir", str(oc), "--apply")
    assert applied.exit_code == 0, applied.output
    config = json.loads((oc / "opencode.json").read_text())
    assert config["theme"] == "tokyonight" and config["mcp"]["other"]["url"] == "https://x.example"
    assert config["mcp"]["memvault"] == {"type": "local", "command": [MEMVAULT, "--home", str(home), "mcp"],
                                         "enabled": True}
    plugin = oc / "plugin" / "memvault.js"
    assert json.dumps(MEMVAULT) in plugin.read_text()
    export_dir = home / ".memvault" / "opencode"
    assert {"kind": "opencode", "path": str(export_dir)} in tomllib.loads((home / "memvault.toml").read_text())["sources"]

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the plugin's JavaScript cannot run here")
    # The plugin in node, with OpenCode's recorded SDK answer: session.idle exports and captures;
    # chat.message runs prompt-recall (an empty home injects nothing).
    module = tmp_path / "plugin.mjs"
    shutil.copy(plugin, module)
    driver = tmp_path / "drive.mjs"
    driver.write_text(f"""
import {{ readFileSync }} from "node:fs";
import {{ MemvaultPlugin }} from {json.dumps(str(module))};
const answer = JSON.parse(readFileSync({json.dumps(str(OPENCODE_ANSWER))}, "utf8"));
const client = {{ session: {{ messages: async ({{ path }}) => ({{ data: answer.filter((m) => m.info.sessionID === path.id) }}) }} }};
const hooks = await MemvaultPlugin({{ client, directory: "/home/ana/src/kilnctl" }});
await hooks.event({{ event: {{ type: "session.idle", properties: {{ sessionID: "ses_01JX7Q0Z" }} }} }});
const output = {{ message: {{ id: "msg_x" }}, parts: [{{ id: "prt_x", type: "text", text: "how fast is the ramp?" }}] }};
await hooks["chat.message"]({{ sessionID: "ses_01JX7Q0Z" }}, output);
console.log(JSON.stringify(output.parts.length));
""")
    ran = subprocess.run([node, str(driver)], capture_output=True, text=True, timeout=120,
                         env=child_env())
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "1"
    exported = export_dir / "ses_01JX7Q0Z.jsonl"
    assert exported.stat().st_mode & 0o777 == 0o600
    [captured] = drained(home)  # the plugin's capture, drained into the ledger
    assert captured["source"] == "opencode" and captured["messages"] == 5

    # The export parses back: order kept, tool call and result, the synthetic recall block left out.
    assert detect_format(exported) == "opencode"
    result = parse_file(exported, "opencode")
    assert not result.errors
    [conv] = result.conversations
    assert conv.native_id == "ses_01JX7Q0Z" and conv.project == "/home/ana/src/kilnctl"
    assert [(m.role, m.kind) for m in conv.messages] == [
        ("user", "text"), ("tool", "tool_call"), ("tool", "tool_result"), ("assistant", "text"), ("user", "text")]
    assert conv.messages[1].parent_native_id == conv.messages[0].native_id
    assert not any("memory-recall" in m.text for m in conv.messages)


def test_doctor_reports_each_item_and_fails_on_a_broken_hook(home: Path, tmp_path: Path) -> None:
    codex = tmp_path / ".codex"
    assert setup(home, "codex", "--codex-dir", str(codex), "--apply").exit_code == 0
    args = ["--home", str(home), "doctor", "--json", "--claude-dir", str(tmp_path / "none"), "--codex-dir", str(codex),
            "--opencode-dir", str(tmp_path / "none")]
    report = runner.invoke(app, args)
    data = json.loads(report.output)
    items = {(c["area"], c["item"]): c for c in data["checks"]}
    assert items[("agents", "codex MCP server")]["state"] == "ok"
    assert items[("agents", "codex SessionStart hook")]["state"] == "ok"
    assert {("home", "modes"), ("home", "locks"), ("home", "index"), ("home", "disk"),
            ("schedule", "deployment"), ("schedule", "last run")} <= set(items)
    assert all(c["fix"] for c in data["checks"] if c["state"] != "ok")

    hooks = json.loads((codex / "hooks.json").read_text())
    hooks["hooks"]["Stop"][0]["hooks"][0]["command"] = "/gone/.venv/bin/memvault --home x capture"
    (codex / "hooks.json").write_text(json.dumps(hooks))
    broken = runner.invoke(app, args)
    assert broken.exit_code == 1
    stop = next(c for c in json.loads(broken.output)["checks"] if c["item"] == "codex Stop hook")
    assert stop["state"] == "fail" and stop["fix"] == "memvault agent-setup codex --apply"


def test_doctor_finds_the_opencode_plugin_in_either_folder(home: Path, tmp_path: Path) -> None:
    # OpenCode's loader globs {plugin,plugins}/*.{ts,js}: agent-setup writes plugin/, a user may move it.
    oc = tmp_path / "opencode"
    assert setup(home, "opencode", "--opencode-dir", str(oc), "--apply").exit_code == 0
    args = ["--home", str(home), "doctor", "--json", "--claude-dir", str(tmp_path / "none"), "--codex-dir",
            str(tmp_path / "none"), "--opencode-dir", str(oc)]

    def items() -> dict[str, dict[str, str]]:
        return {c["item"]: c for c in json.loads(runner.invoke(app, args).output)["checks"] if c["area"] == "agents"}

    assert items()["opencode plugin (plugin/)"]["state"] == "ok"
    assert items()["opencode MCP server"]["state"] == "ok"
    (oc / "plugins").mkdir()
    (oc / "plugin" / "memvault.js").rename(oc / "plugins" / "memvault.js")
    assert items()["opencode plugin (plugins/)"]["state"] == "ok"
    moved = (oc / "plugins" / "memvault.js").read_text().replace(json.dumps(MEMVAULT), json.dumps("/gone/memvault"))
    (oc / "plugins" / "memvault.js").write_text(moved)
    assert items()["opencode plugin (plugins/)"]["state"] == "fail"
    (oc / "plugins" / "memvault.js").unlink()
    missing = items()["opencode plugin"]
    assert missing["state"] == "fail" and missing["fix"] == "memvault agent-setup opencode --apply"


def test_hub_table_written_and_plain_http_refused(tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"  # a client home needs no vault: agent-setup creates what it needs
    token = tmp_path / "hub.token"
    token.write_text("a" * 64 + "\n")
    token.chmod(0o600)
    codex = tmp_path / ".codex"
    refused = setup(laptop, "codex", "--codex-dir", str(codex), "--hub", "http://mini.lan:8765", "--token-file",
                    str(token), "--apply")
    assert refused.exit_code == 2 and "--insecure" in refused.output and not laptop.exists()
    token.chmod(0o644)
    wide = setup(laptop, "codex", "--codex-dir", str(codex), "--hub", "https://mini.lan:8765", "--token-file",
                 str(token), "--apply")
    assert wide.exit_code == 1 and "chmod 600" in wide.output
    token.chmod(0o600)
    done = setup(laptop, "codex", "--codex-dir", str(codex), "--hub", "https://mini.lan:8765/", "--token-file",
                 str(token), "--machine", "laptop", "--apply")
    assert done.exit_code == 0, done.output
    config = tomllib.loads((laptop / "memvault.toml").read_text())
    assert config["hub"] == {"url": "https://mini.lan:8765", "token_file": str(token), "machine": "laptop"}
    assert {"kind": "codex", "path": str(codex / "sessions")} in config["sources"]
    assert (laptop / ".memvault").is_dir()
    from memvault.config.settings import load_settings

    assert load_settings(laptop).hub.url == "https://mini.lan:8765"
    insecure = setup(laptop, "claude-code", "--claude-dir", str(tmp_path / ".claude"), "--hub", "http://mini.lan:8765",
                     "--token-file", str(token), "--insecure", "--apply")
    assert insecure.exit_code == 0, insecure.output
    assert tomllib.loads((laptop / "memvault.toml").read_text())["hub"]["insecure"] is True

"""Terminal controls from a transcript are shown, not acted on, by every command that prints memory.

A Claude Code transcript holds OSC 52 (rewrites the clipboard), OSC 0 (retitles the window),
BEL, CSI and a C1 CSI (U+009B) in its first message (so in its title) and in a reply. After a
real ingest and index, `show`, `read`, `recall`, `conversations`, `get` and `search` print no
control character but newline and tab, and show each as an escape; with `--json` the text is
exactly what the transcript held.
"""

import json
from pathlib import Path

import pytest

from memvault.hygiene.terminal import CONTROLS
from tests.helpers import cc_session, cli

OSC52 = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"
OSC0 = "\x1b]0;root@prod — do not close\x07"
CSI = "\x1b[2J\x9b31m"
USER = f"quokka deploy checklist {OSC0}please{OSC52} ring \x07 twice"
REPLY = f"The quokka deploy runs at 02:00 {CSI}red{OSC52}"


@pytest.fixture(scope="module")
def home_with_controls(tmp_path_factory: pytest.TempPathFactory, embedder) -> tuple[Path, str]:
    from memvault.ops.drain import index_conversations
    from memvault.ops.home import init_home
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from stores.nodes import NodeIndex
    from stores.vault import Vault
    from memvault.stages.ingest import ingest_roots

    tmp = tmp_path_factory.mktemp("controls")
    home = tmp / "home"
    init_home(home)
    src = tmp / "s.jsonl"
    src.write_text(cc_session("ctl", [USER, REPLY]))
    settings = load_settings(home)
    with Ledger.open(settings) as ledger:
        ingest_roots(ledger, settings, [("claude-code", src)])
        [cid] = ledger.conversation_ids()
        index_conversations(ledger, NodeIndex.open_or_create(settings), embedder, settings, [cid])
    # An article holding the same text (as an edit by hand or a synthesis could leave it).
    vault = Vault(home)
    vault.write(home / "articles" / "Quokka_Deploy.md", f"# Quokka Deploy\n\n{REPLY}\n")
    vault.commit("test: article")
    return home, cid


def _raw_controls(text: str) -> list[str]:
    return sorted({repr(c) for c in text if ord(c) in CONTROLS})


def _commands(home: Path, cid: str) -> dict[str, list[str]]:
    search = json.loads(cli("--home", str(home), "search", "quokka deploy", "--json").output)["hits"]
    node = next(h["id"] for h in search if h["path"].endswith("/m2"))
    h = ["--home", str(home)]
    return {"show": h + ["show", cid[:8], "--full"], "read": h + ["read", "Quokka_Deploy"],
            "recall": h + ["recall", "quokka deploy", "--explain"], "conversations": h + ["conversations"],
            "get": h + ["get", node], "search": h + ["search", "quokka deploy"]}


def test_every_command_shows_controls_as_escapes(home_with_controls: tuple[Path, str]) -> None:
    home, cid = home_with_controls
    for name, args in _commands(home, cid).items():
        out = cli(*args)
        assert out.exit_code == 0, (name, out.output)
        assert _raw_controls(out.output) == [], (name, out.output)
        if name != "search":  # search prints ids and paths only
            assert "\\x1b]" in out.output or "\\x9b" in out.output, (name, out.output)
    shown = cli(*_commands(home, cid)["show"]).output
    assert "\\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07" in shown and "\\x9b31m" in shown and "ring \\x07 twice" in shown


def test_json_keeps_the_exact_text(home_with_controls: tuple[Path, str]) -> None:
    home, cid = home_with_controls
    for name, args in _commands(home, cid).items():
        out = cli(*args, "--json")
        assert out.exit_code == 0, (name, out.output)
        assert _raw_controls(out.output.replace("\n", "")) == [], (name, "JSON escapes every control")
        data = json.dumps(json.loads(out.output), ensure_ascii=False)
        if name in ("show", "read", "get", "recall"):
            assert any(json.dumps(t, ensure_ascii=False)[1:-1] in data for t in (USER, REPLY)), name
    shown = json.loads(cli(*_commands(home, cid)["show"], "--json").output)
    assert [m["text"] for m in shown["messages"]][:2] == [USER, REPLY]

"""The planted secret corpus never reaches disk, in any transcript format or any place in it.

Every form of ``tests/secret_corpus.py`` is planted in each of the five formats, in the user's
text, a JSON-escaped string in an assistant reply, a tool call's arguments (cut at 200) and a
tool's output (cut at 600), each padded so the secret straddles the cut, and in the title
(the exports' titles hold every form of their conversation; the JSONL formats' titles are the
first user message cut at 80 characters, so each holds the straddling first form of its group
of five). After a real ingest and nightly run (engine none), the
raw bytes of every file under the home and the Prefect home (git objects decompressed), and
every string the ledger and the index hold, must contain none of the secrets.
"""

import json
import os
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from memvault.sources.base import ARG_SUMMARY_CHARS, RESULT_CHARS, TITLE_CHARS
from tests.helpers import run_flow
from tests.secret_corpus import FORMS, Form

MARKER = "wombatquasar"  # ordinary text beside the secrets: proves the search sees stored text
LOCATIONS = ("text", "title", "json_escaped", "tool_input", "tool_output")
GROUP = 5  # forms per conversation: each form gets its own messages, the group shares a title
GROUPS = [FORMS[i:i + GROUP] for i in range(0, len(FORMS), GROUP)]


def _straddle(form: Form, limit: int, lead: str = "") -> str:
    """Padding that puts the middle of the secret on the ``limit``-th character."""
    at = form.text.find(form.needle) + len(form.needle) // 2
    return lead + "w " * max((limit - len(lead) - at) // 2, 0)


def _pieces(form: Form, n: int) -> dict[str, str]:
    """What each location of conversation ``n`` holds."""
    return {
        "text": f"{_straddle(form, TITLE_CHARS, f'{MARKER} {n} ')}{form.text} about the {MARKER} deploy",
        "json_escaped": "config: " + json.dumps(json.dumps({"note": form.text, "n": n})),
        "tool_input": _straddle(form, ARG_SUMMARY_CHARS, f"echo {n} ") + form.text,
        "tool_output": _straddle(form, RESULT_CHARS, f"out {n} ").replace("w w w ", "w\nw ", 2) + form.text + "\nend",
    }


def _claude_code(folder: Path) -> None:
    for g, group in enumerate(GROUPS):
        sid = f"cc-{g}"
        lines: list[dict[str, Any]] = []
        for n, form in enumerate(group):
            p = _pieces(form, n)
            lines += [
                {"type": "user", "message": {"role": "user", "content": p["text"]}},
                {"type": "assistant", "message": {"role": "assistant", "id": f"m{g}-{n}", "content": [
                    {"type": "text", "text": p["json_escaped"]},
                    {"type": "tool_use", "id": f"t{g}-{n}", "name": "Bash", "input": {"command": p["tool_input"]}}]}},
                {"type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": f"t{g}-{n}", "content": p["tool_output"]}]}},
            ]
        out, parent = [], None
        for i, line in enumerate(lines):
            line.update(sessionId=sid, uuid=f"{sid}-{i}", parentUuid=parent, cwd="/w",
                        timestamp=f"2025-03-01T10:00:{i:02d}Z")
            out.append(json.dumps(line))
            parent = f"{sid}-{i}"
        (folder / f"{sid}.jsonl").write_text("\n".join(out) + "\n")


def _codex(folder: Path) -> None:
    ts = "2025-03-02T10:00:00Z"
    for g, group in enumerate(GROUPS):
        lines: list[dict[str, Any]] = [{"type": "session_meta", "payload": {"id": f"codex-{g}", "cwd": "/w", "timestamp": ts}}]
        for n, form in enumerate(group):
            p, call = _pieces(form, n), f"c{g}-{n}"
            lines += [
                {"type": "event_msg", "payload": {"type": "user_message", "message": p["text"]}},
                {"type": "event_msg", "payload": {"type": "agent_message", "message": p["json_escaped"]}},
                {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "call_id": call,
                                                      "arguments": json.dumps({"command": ["bash", "-lc", p["tool_input"]]})}},
                {"type": "response_item", "payload": {"type": "function_call_output", "call_id": call,
                                                      "output": json.dumps({"output": p["tool_output"]})}},
            ]
        body = "".join(json.dumps({"timestamp": ts, **line}) + "\n" for line in lines)
        (folder / f"rollout-2025-03-02T10-00-00-codex-{g}.jsonl").write_text(body)


def _pi(folder: Path) -> None:
    ts = "2025-03-03T10:00:00.000Z"
    for g, group in enumerate(GROUPS):
        lines: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": f"pi-{g}", "cwd": "/w"}]
        parent = None
        for n, form in enumerate(group):
            p, base = _pieces(form, n), f"{g}-{n}"
            lines += [
                {"type": "message", "id": f"{base}a", "parentId": parent, "message": {"role": "user", "content": [
                    {"type": "text", "text": p["text"]}]}},
                {"type": "message", "id": f"{base}b", "parentId": f"{base}a", "message": {"role": "assistant", "content": [
                    {"type": "text", "text": p["json_escaped"]},
                    {"type": "toolCall", "id": f"t{base}", "name": "bash", "arguments": {"command": p["tool_input"]}}]}},
                {"type": "message", "id": f"{base}c", "parentId": f"{base}b", "message": {
                    "role": "toolResult", "toolCallId": f"t{base}", "toolName": "bash",
                    "content": [{"type": "text", "text": p["tool_output"]}]}},
            ]
            parent = f"{base}c"
        (folder / f"pi-{g}.jsonl").write_text("".join(json.dumps({"timestamp": ts, **x}) + "\n" for x in lines))


def _chatgpt(folder: Path) -> None:
    conversations = []
    for g, group in enumerate(GROUPS):
        nodes = []
        for n, form in enumerate(group):
            p = _pieces(form, n)
            nodes += [("user", {"content_type": "text", "parts": [p["text"]]}),
                      ("assistant", {"content_type": "text", "parts": [p["json_escaped"]]}),
                      ("assistant", {"content_type": "code", "language": "python", "text": p["tool_input"]}),
                      ("tool", {"content_type": "execution_output", "text": p["tool_output"]})]
        mapping: dict[str, Any] = {}
        parent = None
        for i, (role, content) in enumerate(nodes):
            node = f"g{g}-{i}"
            mapping[node] = {"id": node, "parent": parent, "children": [f"g{g}-{i + 1}"] if i + 1 < len(nodes) else [],
                             "message": {"id": node, "author": {"role": role, "name": "python" if role == "tool" else None},
                                         "create_time": 1740000000 + i, "content": content, "metadata": {}}}
            parent = node
        conversations.append({"conversation_id": f"gpt-{g}", "title": " ".join(f.text for f in group),
                              "create_time": 1740000000, "update_time": 1740000100, "mapping": mapping,
                              "current_node": parent})
    (folder / "chatgpt-conversations.json").write_text(json.dumps(conversations))


def _claude_ai(folder: Path) -> None:
    conversations = []
    for g, group in enumerate(GROUPS):
        messages: list[dict[str, Any]] = []
        parent = None
        for n, form in enumerate(group):
            p, base = _pieces(form, n), f"ca{g}-{n}"
            messages += [
                {"uuid": f"{base}-0", "sender": "human", "parent_message_uuid": parent, "text": p["text"],
                 "content": [{"type": "text", "text": p["text"]}]},
                {"uuid": f"{base}-1", "sender": "assistant", "parent_message_uuid": f"{base}-0", "content": [
                    {"type": "text", "text": p["json_escaped"]},
                    {"type": "tool_use", "id": f"tu{base}", "name": "run", "input": {"command": p["tool_input"]}},
                    {"type": "tool_result", "tool_use_id": f"tu{base}", "content": [{"type": "text", "text": p["tool_output"]}]}]},
            ]
            parent = f"{base}-1"
        for m in messages:
            m["created_at"] = "2025-03-04T10:00:00Z"
        conversations.append({"uuid": f"cai-{g}", "name": " ".join(f.text for f in group),
                              "created_at": "2025-03-04T10:00:00Z", "updated_at": "2025-03-04T10:01:00Z",
                              "chat_messages": messages})
    (folder / "claude-ai-conversations.json").write_text(json.dumps(conversations))


def _git_objects(home: Path) -> bytes:
    out = [subprocess.run(["git", "log", "-p", "--all"], cwd=home, capture_output=True, check=True).stdout]
    for obj in (home / ".git" / "objects").rglob("*"):
        if obj.is_file() and len(obj.parent.name) == 2:
            out.append(zlib.decompress(obj.read_bytes()))
    return b"\n".join(out)


def _ledger_strings(path: Path) -> bytes:
    """Every string value of every table of the ledger, as DuckDB returns it (compression undone)."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        out = []
        for (table,) in con.execute("select table_name from information_schema.tables").fetchall():
            for row in con.execute(f'select * from "{table}"').fetchall():
                out.append(repr(row))
        return "\n".join(out).encode()
    finally:
        con.close()


def _index_strings(path: Path) -> bytes:
    """Every row of every table of the node index, as LanceDB returns it."""
    import lancedb

    db = lancedb.connect(str(path))
    return "\n".join(repr(db.open_table(name).to_arrow().to_pylist()) for name in db.table_names()).encode()


def _needles(form: Form) -> list[bytes]:
    values = [form.needle, json.dumps(form.needle)[1:-1], json.dumps(json.dumps(form.needle)[1:-1])[1:-1]]
    return sorted({v.encode() for v in values})


@pytest.mark.usefixtures("prefect")
def test_no_planted_secret_form_reaches_any_stored_byte(home: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_ENGINE", "none")
    src = tmp_path / "src"
    for name, build in (("claude_code", _claude_code), ("codex", _codex), ("pi", _pi),
                        ("chatgpt", _chatgpt), ("claude_ai", _claude_ai)):
        (src / name).mkdir(parents=True)
        build(src / name)
    report = run_flow(home, paths=[str(src)])
    assert report["status"] == "completed", report
    ingest = report["stages"]["ingest"]
    assert ingest["errors"] == [] and ingest["conversations_new"] == 5 * len(GROUPS), ingest

    blobs = {str(p.relative_to(home)): p.read_bytes() for p in home.rglob("*") if p.is_file()}
    blobs["git objects"] = _git_objects(home)
    blobs["ledger strings"] = _ledger_strings(home / ".memvault" / "ledger.duckdb")
    blobs["index strings"] = _index_strings(home / ".memvault" / "nodes.lance")
    prefect_home = Path(os.environ.get("PREFECT_HOME", Path.home() / ".prefect"))
    if prefect_home.is_dir():
        blobs.update({f"prefect:{p}": p.read_bytes() for p in prefect_home.rglob("*") if p.is_file()})
    leaks = [(form.kind, i, where) for i, form in enumerate(FORMS) for needle in _needles(form)
             for where, data in blobs.items() if needle in data]
    # secret forms × locations leaked: goal 0 of len(FORMS) × 5 formats × len(LOCATIONS)
    assert leaks == [], f"{len(leaks)} leaks: {leaks[:20]}"
    # The search is not vacuous: ledger, index and vault all hold the conversations' text.
    for where in ("ledger strings", "index strings", "git objects"):
        assert MARKER.encode() in blobs[where], where

"""Codex, pi and claude.ai parsers against the verified sample files."""

import json
from pathlib import Path

from memvault.sources import parse_file

ROLLOUT = "daaain_rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"


def test_codex_reconstructed(formats: Path) -> None:
    result = parse_file(formats / "codex" / "codex_rollout.RECONSTRUCTED.jsonl", "codex")
    assert result.errors == [] and result.skipped_types == {}
    [conv] = result.conversations
    assert conv.native_id == "0199fb2e-6a55-7c11-9e3e-5d5c2b8e1f00"
    assert conv.project == "/home/carol/work/ledger"
    # environment_context dropped; user text (response_item + event_msg) once; agent text once
    assert [(m.native_id, m.role, m.kind) for m in conv.messages] == [
        ("L3", "user", "text"),
        ("L8", "tool", "tool_call"),
        ("L9", "tool", "tool_result"),
        ("L11", "assistant", "text"),
        ("L13", "summary", "compact_summary"),
    ]
    assert conv.messages[2].text.startswith("shell result:\nFAILED tests/test_currency.py")
    assert not any("environment_context" in m.text for m in conv.messages)
    assert conv.leaf_native_id == "L13"


def test_codex_fixture_joins_calls_and_skips_unknown(formats: Path) -> None:
    result = parse_file(formats / "codex" / ROLLOUT, "codex")
    assert result.skipped_types == {"future_synthetic_record": 1}
    [conv] = result.conversations
    assert conv.native_id == "11111111-1111-4111-8111-111111111111"
    assert [m.role for m in conv.messages] == ["user"] + ["tool"] * 6 + ["assistant"]
    assert [m.text.split("\n")[0] for m in conv.messages if m.kind == "tool_result"] == [
        "exec_command result:", "apply_patch result:", "mcp__synthetic__lookup result:"
    ]
    assert not any("SYNTHETIC_ENCRYPTED" in m.text or "inspect the synthetic" in m.text for m in conv.messages)


def test_codex_incremental_dedupes_across_offset(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"

    def line(kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload}) + "\n"

    path.write_text(line("session_meta", {"id": "S", "cwd": "/c"})
                    + line("event_msg", {"type": "user_message", "message": "hi there"}))
    first = parse_file(path, "codex")
    with path.open("a") as f:
        f.write(line("response_item", {"type": "message", "role": "user",
                                       "content": [{"type": "input_text", "text": "hi there"}]}))
        f.write(line("response_item", {"type": "message", "role": "assistant",
                                       "content": [{"type": "output_text", "text": "hello"}]}))
    second = parse_file(path, "codex", first.end_offset, first.state)
    [conv] = second.conversations
    assert [(m.native_id, m.parent_native_id, m.text) for m in conv.messages] == [("L4", "L2", "hello")]


def test_pi_v1_real_session(formats: Path) -> None:
    result = parse_file(formats / "pi" / "pi_session.v1.real.first40.jsonl", "pi")
    assert result.errors == [] and result.skipped_types == {}
    [conv] = result.conversations
    assert conv.native_id == "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
    assert conv.project == "/Users/badlogic/workspaces/pi-mono"
    roles = [m.role for m in conv.messages]
    assert len(conv.messages) == 66
    assert (roles.count("user"), roles.count("assistant"), roles.count("tool")) == (5, 9, 52)
    assert conv.messages[0].native_id == "L2" and conv.messages[1].native_id == "L5"  # L3 aborted, empty
    ids = [m.native_id for m in conv.messages]
    assert [m.parent_native_id for m in conv.messages] == [None, *ids[:-1]]
    assert conv.messages[-1].text == "bash error:\nCommand exited with code 1"


def test_pi_v3_tree(formats: Path) -> None:
    [conv] = parse_file(formats / "pi" / "pi_session.v3.RECONSTRUCTED.jsonl", "pi").conversations
    assert conv.title == "Deploy script questions"
    assert [(m.native_id, m.parent_native_id, m.role, m.kind) for m in conv.messages] == [
        ("3c4d5e6f", None, "user", "text"),  # its parents are model/thinking changes
        ("4d5e6f70", "3c4d5e6f", "tool", "tool_call"),
        ("5e6f7081", "4d5e6f70", "tool", "tool_result"),
        ("6f708192", "5e6f7081", "assistant", "text"),
        ("708192a3", "6f708192", "summary", "compact_summary"),
        ("8192a3b4", "3c4d5e6f", "summary", "branch_summary"),
    ]
    # the leaf entry (session_info → label → branch_summary) resolves to the branch summary
    assert conv.leaf_native_id == "8192a3b4"


def test_claude_ai_export(formats: Path) -> None:
    result = parse_file(formats / "claude_ai" / "conversations.RECONSTRUCTED.json", "claude-ai")
    assert result.errors == []
    [conv] = result.conversations
    assert conv.native_id == "2f0c9e7a-4b1d-4c6e-8f3a-9d2b1e0a7c55"
    assert conv.title == "Sourdough starter troubleshooting"
    uuid = "c1000000-0000-4000-8000-00000000000"
    assert [(m.native_id, m.role, m.kind) for m in conv.messages] == [
        (f"{uuid}1", "user", "text"),
        (f"{uuid}2", "assistant", "text"),
        (f"{uuid}3#att0", "attachment", "attachment"),
        (f"{uuid}3#att1", "attachment", "attachment"),
        (f"{uuid}3", "user", "text"),
    ]
    assert conv.messages[0].parent_native_id is None
    assert conv.messages[1].text.startswith("Not dead")  # thinking block dropped
    assert conv.messages[2].text == "[attachment: feeding_log.txt]\nday1 50g flour 50g water\nday2 ..."
    assert conv.messages[4].parent_native_id == f"{uuid}3#att1"
    assert conv.leaf_native_id == f"{uuid}3"

"""Shared JSONL rules: incremental parsing, held-back partial lines, bad files never raise."""

import json
from pathlib import Path

import pytest

from memvault.sources import parse_file
from tests.helpers import cc_raw_line


def _user(uuid: str, parent: str | None, text: str) -> str:
    return cc_raw_line(type="user", uuid=uuid, parentUuid=parent, message={"role": "user", "content": text})


def _assistant(uuid: str, parent: str, api_id: str, blocks: list) -> str:
    return cc_raw_line(type="assistant", uuid=uuid, parentUuid=parent,
                       message={"id": api_id, "role": "assistant", "content": blocks})


def test_append_two_lines_gives_two_new_messages(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(_user("u1", None, "hello") + _assistant("a1", "u1", "m1", [{"type": "text", "text": "hi"}]))
    first = parse_file(path, "claude-code")
    assert first.end_offset == path.stat().st_size
    with path.open("a") as f:
        f.write(_user("u2", "a1", "more") + _assistant("a2", "u2", "m2", [{"type": "text", "text": "sure"}]))
    state = json.loads(json.dumps(first.state))  # state must survive a JSON round trip
    second = parse_file(path, "claude-code", first.end_offset, state)
    [conv] = second.conversations
    assert conv.native_id == first.conversations[0].native_id
    assert [(m.native_id, m.parent_native_id, m.text) for m in conv.messages] == [
        ("u2", "a1", "more"),
        ("a2", "u2", "sure"),
    ]
    assert conv.title == "hello" and conv.leaf_native_id == "a2"
    assert second.end_offset == path.stat().st_size
    # nothing appended: nothing returned
    third = parse_file(path, "claude-code", second.end_offset, second.state)
    assert third.conversations == [] and third.errors == []


def test_truncated_final_line_is_held_back_then_picked_up(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    whole = _user("u1", None, "hello")
    partial = _user("u2", "u1", "second")
    path.write_text(whole + partial[:25])
    first = parse_file(path, "claude-code")
    assert first.errors == []
    assert first.end_offset == len(whole.encode())
    assert [m.native_id for m in first.conversations[0].messages] == ["u1"]
    path.write_text(whole + partial)
    second = parse_file(path, "claude-code", first.end_offset, first.state)
    assert [m.native_id for m in second.conversations[0].messages] == ["u2"]
    assert second.end_offset == path.stat().st_size


def test_final_line_without_newline_is_consumed_when_it_parses(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(_user("u1", None, "hello").rstrip("\n"))
    result = parse_file(path, "claude-code")
    assert result.end_offset == path.stat().st_size
    assert len(result.conversations[0].messages) == 1


def test_split_assistant_message_merges_across_offset(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        _user("u1", None, "explain")
        + _assistant("a1", "u1", "msg_X", [{"type": "thinking", "thinking": "hmm"}])
        + _assistant("a2", "a1", "msg_X", [{"type": "text", "text": "Part one."}])
    )
    first = parse_file(path, "claude-code")
    assert [(m.native_id, m.parent_native_id, m.text) for m in first.conversations[0].messages] == [
        ("u1", None, "explain"),
        ("a2", "u1", "Part one."),
    ]
    with path.open("a") as f:
        f.write(_assistant("a3", "a2", "msg_X", [{"type": "text", "text": "Part two."}]))
        f.write(_assistant("a4", "a3", "msg_X", [{"type": "tool_use", "id": "t1", "name": "Bash",
                                                  "input": {"command": "ls -la"}}]))
        f.write(cc_raw_line(type="user", uuid="u5", parentUuid="a4", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a\nb\nc\nd\ne\nf\ng"}]}))
    second = parse_file(path, "claude-code", first.end_offset, json.loads(json.dumps(first.state)))
    merged, call, result = second.conversations[0].messages
    assert (merged.native_id, merged.parent_native_id, merged.text) == ("a2", "u1", "Part one.\n\nPart two.")
    assert (call.native_id, call.parent_native_id, call.role, call.text) == ("a4", "a2", "tool", "Bash: ls -la")
    assert (result.parent_native_id, result.role, result.kind) == ("a4", "tool", "tool_result")
    assert result.text == "Bash result:\na\nb\nc\nd\ne\n… (2 more lines)"
    # a full re-parse gives the same ids and text
    full = {m.native_id: m.text for m in parse_file(path, "claude-code").conversations[0].messages}
    assert full["a2"] == "Part one.\n\nPart two."


def test_unknown_type_is_counted_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(_user("u1", None, "hi") + json.dumps({"type": "future-thing", "x": 1}) + "\n")
    result = parse_file(path, "claude-code")
    assert result.skipped_types == {"future-thing": 1} and result.errors == []


def test_line_numbers_continue_across_offsets(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(_user("u1", None, "hi"))
    first = parse_file(path, "claude-code")
    with path.open("a") as f:
        f.write("not json\n")
    assert [e.line for e in parse_file(path, "claude-code", first.end_offset, first.state).errors] == [2]
    assert [e.line for e in parse_file(path, "claude-code", first.end_offset, None).errors] == [2]


def test_invalid_utf8_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(_user("u1", None, "hi").encode() + b'{"type": "user", "x": "\xff\xfe"}\n')
    result = parse_file(path, "claude-code")
    assert [e.line for e in result.errors] == [2]
    assert len(result.conversations[0].messages) == 1


@pytest.mark.parametrize("kind", ["claude-code", "codex", "pi", "chatgpt", "claude-ai"])
def test_bad_files_give_a_file_error_not_an_exception(tmp_path: Path, kind: str) -> None:
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    empty = tmp_path / "e.jsonl"
    empty.write_bytes(b"")
    directory = tmp_path / "d"
    directory.mkdir()
    missing = tmp_path / "gone.jsonl"
    for path in (binary, empty, directory, missing):
        result = parse_file(path, kind)
        assert result.conversations == []
        assert len(result.errors) == 1, path
        assert result.errors[0].line is None
        assert str(path) in result.errors[0].error


def test_offset_beyond_size_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(_user("u1", None, "hi"))
    result = parse_file(path, "claude-code", 10_000, {})
    assert result.errors and "re-ingest" in result.errors[0].error

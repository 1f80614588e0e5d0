"""Claude Code parser: fixtures parse to the verified conversations, threads and kinds."""

from pathlib import Path

from memvault.ids import conversation_id
from memvault.sources import parse_file
from tests.helpers import cc_raw_line

CC = "claude_code"


def _roles(conv):
    return [(m.role, m.kind) for m in conv.messages]


def test_reconstructed_session(formats: Path) -> None:
    result = parse_file(formats / CC / "claude_code_session.RECONSTRUCTED.jsonl", "claude-code")
    assert result.errors == []
    assert result.skipped_types == {"file-history-snapshot": 1}
    [conv] = result.conversations
    assert conv.native_id == "7d3c1a52-0c8e-4f7a-9b7e-2f1b6a0e9c11"
    assert conv.title == "Fix flaky pagination test in orders API"
    assert conv.project == "/Users/alice/src/acme-api"
    assert _roles(conv) == [
        ("user", "text"),
        ("tool", "tool_call"),
        ("tool", "tool_result"),
        ("assistant", "text"),
        ("system", "meta"),
        ("summary", "compact_summary"),
        ("user", "text"),
    ]
    # thinking-only line (…0002) is dropped; its child links through to the user message
    assert conv.messages[1].native_id == "a1000000-0000-4000-8000-000000000003"
    assert conv.messages[1].parent_native_id == "a1000000-0000-4000-8000-000000000001"
    assert conv.messages[1].text == "Grep: app/"
    assert conv.messages[2].text.startswith("Grep result:\napp/orders/repo.py:41")
    # the compact boundary (system line, parentUuid null) links via logicalParentUuid
    assert conv.messages[5].parent_native_id == "a1000000-0000-4000-8000-000000000006"
    assert conv.leaf_native_id == "b8f2e0d4-5a1c-4c59-8d3e-000000000009"
    assert not any("ORDER BY in the query" in m.text for m in conv.messages)  # thinking dropped
    assert conv.started_at is not None and conv.started_at.isoformat().startswith("2025-11-03T09:14:02")


def test_representative_old_style_links_linearly(formats: Path) -> None:
    result = parse_file(formats / CC / "daaain_representative_messages.jsonl", "claude-code")
    [conv] = result.conversations
    assert result.errors == []
    assert conv.native_id == "test_session"
    assert len(conv.messages) == 11
    assert conv.title.startswith("User learned about Python decorators")
    # parentUuid is null everywhere: each message follows the previous one
    ids = [m.native_id for m in conv.messages]
    assert [m.parent_native_id for m in conv.messages] == [None, *ids[:-1]]
    assert conv.leaf_native_id == "msg_011"
    assert [m.role for m in conv.messages].count("user") == 4
    assert [m.role for m in conv.messages].count("tool") == 4


def test_edge_cases_report_bad_lines(formats: Path) -> None:
    result = parse_file(formats / CC / "daaain_edge_cases.jsonl", "claude-code")
    lines = [e.line for e in result.errors]
    assert {13, 14, 15, 16} <= set(lines)
    assert lines == [10, 11, 13, 14, 15, 16]  # 10: no content, 11: message is a string
    assert result.end_offset == (formats / CC / "daaain_edge_cases.jsonl").stat().st_size
    [conv] = result.conversations
    assert len(conv.messages) == 13
    by_id = {m.native_id: m for m in conv.messages}
    assert "中文" in by_id["edge_011"].text and "🚀" in by_id["edge_011"].text
    assert by_id["edge_005"].role == "tool" and by_id["edge_005"].text.startswith("FailingTool error:")
    assert by_id["edge_010"].text == "wow error"  # the duplicate uuid's later line wins
    assert [by_id[i].kind for i in ("edge_006", "edge_007", "edge_008")] == ["meta"] * 3
    assert all(m.role != "user" or m.kind == "text" for m in conv.messages)


def test_showcase_tool_roles(formats: Path) -> None:
    path = formats / CC / "daaain_minimal_showcase_55550000-0000-4000-8000-000000000001.jsonl"
    [conv] = parse_file(path, "claude-code").conversations
    assert len(conv.messages) == 14
    assert [m.role for m in conv.messages].count("tool") == 10
    assert [m.role for m in conv.messages].count("user") == 1
    assert conv.messages[-1].native_id == "sc-a5" and conv.leaf_native_id == "sc-a5"
    assert [m.text for m in conv.messages if m.kind == "tool_call" and m.text.startswith("Agent")] == [
        "Agent: Survey the web module",
        "Agent: Survey the jobs module",
    ]


def test_simonw_sample(formats: Path) -> None:
    [conv] = parse_file(formats / CC / "simonw_sample_session.jsonl", "claude-code").conversations
    assert conv.title == "Test session for JSONL parsing"
    assert conv.project == "/project"
    assert [m.role for m in conv.messages] == ["user", "assistant", "tool", "tool", "tool", "tool", "user", "assistant"]


def test_sidechain_becomes_own_conversation(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(
        cc_raw_line(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "main question"})
        + cc_raw_line(type="user", uuid="s1", parentUuid=None, isSidechain=True, agentId="ag1",
                      message={"role": "user", "content": "subagent task"})
        + cc_raw_line(type="assistant", uuid="s2", parentUuid="s1", isSidechain=True, agentId="ag1",
                      message={"id": "m9", "role": "assistant", "content": [{"type": "text", "text": "sub answer"}]})
        + cc_raw_line(type="assistant", uuid="a1", parentUuid="u1",
                      message={"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "main answer"}]})
    )
    main, sub = parse_file(path, "claude-code").conversations
    assert (main.agent_id, [m.text for m in main.messages]) == (None, ["main question", "main answer"])
    assert sub.agent_id == "ag1" and sub.native_id == "S1"
    assert sub.parent_conversation == conversation_id("claude-code", "S1") == main.id
    assert [m.text for m in sub.messages] == ["subagent task", "sub answer"]
    assert sub.messages[1].parent_native_id == "s1"


def test_rewind_branches_and_leaf_is_last_line(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(
        cc_raw_line(type="user", uuid="u1", parentUuid=None, message={"role": "user", "content": "q1"})
        + cc_raw_line(type="assistant", uuid="a1", parentUuid="u1",
                      message={"id": "m1", "role": "assistant", "content": "first try"})
        + cc_raw_line(type="user", uuid="u2", parentUuid="u1", message={"role": "user", "content": "edited follow-up"})
    )
    [conv] = parse_file(path, "claude-code").conversations
    by_id = {m.native_id: m for m in conv.messages}
    assert by_id["u2"].parent_native_id == "u1"  # branch from u1, a1 abandoned
    assert conv.leaf_native_id == "u2"

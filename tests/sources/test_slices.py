"""Slicing and state round trips: a file parsed in pieces equals the file parsed whole."""

import json
from pathlib import Path

from memvault.sources import parse_file


def _collect(path: Path, kind: str, max_bytes: int | None) -> tuple[dict, dict]:
    """Parse in slices and fold results the way the ledger does (upsert by native id)."""
    messages: dict[str, tuple] = {}
    leaves: dict = {}
    offset, state = 0, None
    while True:
        result = parse_file(path, kind, offset, state, max_bytes=max_bytes)
        for conv in result.conversations:
            leaves[conv.agent_id] = conv.leaf_native_id
            for m in conv.messages:
                messages[m.native_id] = (m.parent_native_id, m.role, m.kind, m.text)
        if result.end_offset == offset:
            return messages, leaves
        offset, state = result.end_offset, json.loads(json.dumps(result.state))


def test_every_jsonl_sample_parses_the_same_in_slices(formats: Path) -> None:
    samples = [
        ("claude_code/claude_code_session.RECONSTRUCTED.jsonl", "claude-code"),
        ("claude_code/daaain_minimal_showcase_55550000-0000-4000-8000-000000000001.jsonl", "claude-code"),
        ("claude_code/simonw_sample_session.jsonl", "claude-code"),
        ("codex/codex_rollout.RECONSTRUCTED.jsonl", "codex"),
        ("pi/pi_session.v1.real.first40.jsonl", "pi"),
        ("pi/pi_session.v3.RECONSTRUCTED.jsonl", "pi"),
    ]
    for sample, kind in samples:
        whole = _collect(formats / sample, kind, None)
        one_line_at_a_time = _collect(formats / sample, kind, 1)
        assert one_line_at_a_time == whole, sample


def test_subagent_file_is_one_agent_conversation(tmp_path: Path) -> None:
    path = tmp_path / "agent-abc.jsonl"
    common = {"sessionId": "PARENT", "isSidechain": True, "agentId": "abc", "cwd": "/w"}
    path.write_text(
        json.dumps({**common, "type": "user", "uuid": "x1", "parentUuid": None,
                    "message": {"role": "user", "content": "Survey src/web"}}) + "\n"
        + json.dumps({**common, "type": "assistant", "uuid": "x2", "parentUuid": "x1",
                      "message": {"id": "m", "role": "assistant", "content": [{"type": "text", "text": "done"}]}}) + "\n"
    )
    [conv] = parse_file(path, "claude-code").conversations
    assert (conv.native_id, conv.agent_id, conv.title) == ("PARENT", "abc", "Survey src/web")
    assert conv.parent_conversation is not None and conv.leaf_native_id == "x2"

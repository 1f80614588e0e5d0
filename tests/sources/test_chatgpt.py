"""ChatGPT export: active thread only, hidden/system/thoughts skipped, tools and images kept."""

import json
from pathlib import Path

from memvault.sources import parse_file


def test_reconstructed_export(formats: Path) -> None:
    result = parse_file(formats / "chatgpt" / "conversations.RECONSTRUCTED.json", "chatgpt")
    assert result.errors == []
    first, second = result.conversations
    assert first.native_id == "6745a1b2-0c3d-8000-9a1b-2c3d4e5f6a7b"
    assert first.title == "Lisbon neighbourhoods for family with dog"
    # the abandoned regeneration (…0003) and the hidden system node (…0001) are not there
    assert [m.native_id[-2:] for m in first.messages] == ["02", "05", "06", "07"]
    assert [(m.role, m.kind) for m in first.messages] == [
        ("user", "text"), ("tool", "tool_call"), ("tool", "tool_result"), ("assistant", "text")
    ]
    assert first.messages[1].text.startswith("python code:\nparks = ")
    assert first.messages[2].text == "python result:\n['Alvalade', 'Campo de Ourique']"
    ids = [m.native_id for m in first.messages]
    assert [m.parent_native_id for m in first.messages] == [None, *ids[:-1]]
    assert first.leaf_native_id == ids[-1]
    assert first.started_at is not None and first.started_at.year == 2024
    assert first.messages[0].timestamp is not None

    assert second.title == "Monstera safe for dogs?"
    assert [(m.role, m.kind) for m in second.messages] == [("user", "image"), ("user", "text"), ("assistant", "text")]
    assert second.messages[0].text == "[image: file_00000000abcd1234abcd1234abcd1234 (IMG_2231.jpeg)]"
    assert not any("Leaf shape" in m.text or "Thought for" in m.text for m in second.messages)


def test_missing_id_falls_back_and_bad_item_is_reported(tmp_path: Path) -> None:
    conv = {"id": "c1", "title": "t", "current_node": "n1", "mapping": {
        "n1": {"id": "n1", "parent": None, "children": [], "message": {
            "author": {"role": "user"}, "create_time": 1700000000, "content": {"content_type": "text", "parts": ["hi"]}}}}}
    path = tmp_path / "anything.txt"
    path.write_text(json.dumps([conv, {"mapping": {}}, 5]))
    result = parse_file(path, "chatgpt")
    assert [c.native_id for c in result.conversations] == ["c1"]
    assert len(result.errors) == 2 and all(e.line is None for e in result.errors)

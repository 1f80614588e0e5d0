"""Format detection reads content, not names: every sample under a misleading name."""

import shutil
from pathlib import Path

import pytest

from memvault.sources import detect_format

SAMPLES = [
    ("claude_code/claude_code_session.RECONSTRUCTED.jsonl", "claude-code"),
    ("claude_code/daaain_edge_cases.jsonl", "claude-code"),
    ("claude_code/daaain_minimal_showcase_55550000-0000-4000-8000-000000000001.jsonl", "claude-code"),
    ("claude_code/daaain_representative_messages.jsonl", "claude-code"),
    ("claude_code/simonw_sample_session.jsonl", "claude-code"),
    ("codex/codex_rollout.RECONSTRUCTED.jsonl", "codex"),
    ("codex/daaain_rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl", "codex"),
    ("pi/pi_session.v1.real.first40.jsonl", "pi"),
    ("pi/pi_session.v3.RECONSTRUCTED.jsonl", "pi"),
    ("chatgpt/conversations.RECONSTRUCTED.json", "chatgpt"),
    ("claude_ai/conversations.RECONSTRUCTED.json", "claude-ai"),
]


@pytest.mark.parametrize(("sample", "kind"), SAMPLES)
def test_detect_under_misleading_name(formats: Path, tmp_path: Path, sample: str, kind: str) -> None:
    # the names claim another format on purpose
    decoy = tmp_path / ("conversations.json" if kind != "chatgpt" else "rollout-x.jsonl")
    shutil.copy(formats / sample, decoy)
    assert detect_format(decoy) == kind


def test_unknown_and_unreadable(tmp_path: Path) -> None:
    (tmp_path / "notes.jsonl").write_text('{"hello": 1}\n')
    (tmp_path / "bin.jsonl").write_bytes(b"\0\1\2")
    (tmp_path / "empty.json").write_bytes(b"")
    assert detect_format(tmp_path / "notes.jsonl") is None
    assert detect_format(tmp_path / "bin.jsonl") is None
    assert detect_format(tmp_path / "empty.json") is None
    assert detect_format(tmp_path) is None
    assert detect_format(tmp_path / "missing") is None


def test_single_pretty_printed_export_object(formats: Path, tmp_path: Path) -> None:
    import json

    [conv] = json.loads((formats / "claude_ai" / "conversations.RECONSTRUCTED.json").read_text())
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(conv, indent=2))
    assert detect_format(one) == "claude-ai"

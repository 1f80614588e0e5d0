"""Incremental ingest through the real task function and a real ledger: re-ingest, appends,
held-back lines, moved files, re-exports, slices and a crash between slices."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from memvault.stages.ingest import ingest_roots
from tests.helpers import FORMATS, ROOT, SAMPLES, cc_line, cc_session


def _count(ledger, table: str) -> int:
    return getattr(ledger.counts(), table)


def test_reingest_of_the_same_files_adds_nothing(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    src = tmp_path / "src"
    shutil.copytree(FORMATS, src / "formats")
    shutil.copytree(SAMPLES, src / "samples")
    first = ingest_roots(ledger, settings, [("auto", src)])
    assert first.conversations_new >= 10 and first.messages_new > 100
    counts = ledger.counts()
    again = ingest_roots(ledger, settings, [("auto", src)])
    assert (again.conversations_new, again.conversations_updated, again.messages_new) == (0, 0, 0)
    assert again.files_changed == 0 and again.files_seen == first.files_seen
    assert ledger.counts() == counts
    # Touching every file (same bytes, new mtime) costs a re-parse but still adds nothing.
    for path in src.rglob("*.json*"):
        os.utime(path, (1, 1))
    touched = ingest_roots(ledger, settings, [("auto", src)])
    assert touched.files_changed > 0
    assert (touched.conversations_new, touched.conversations_updated, touched.messages_new) == (0, 0, 0)


def test_appending_two_lines_adds_exactly_two_messages(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    path = tmp_path / "s1.jsonl"
    path.write_text(cc_session("s1", ["How do I rotate the backups?", "Use restic forget --keep-daily 7.",
                                      "And the weekly ones?", "Add --keep-weekly 4."]))
    first = ingest_roots(ledger, settings, [("claude-code", path)])
    assert (first.conversations_new, first.messages_new) == (1, 4)
    with path.open("a") as fh:
        fh.write(cc_line("s1", 4, "user", "Where does the repo password live?", "s1-u3"))
        fh.write(cc_line("s1", 5, "assistant", "In the RESTIC_PASSWORD_FILE path.", "s1-u4"))
    second = ingest_roots(ledger, settings, [("claude-code", path)])
    assert (second.conversations_new, second.conversations_updated, second.messages_new) == (0, 1, 2)
    [cid] = ledger.conversation_ids()
    assert [m.native_id for m in ledger.active_thread(cid)][-2:] == ["s1-u4", "s1-u5"]


def test_a_truncated_final_line_is_held_back_then_picked_up(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    path = tmp_path / "s2.jsonl"
    whole = cc_session("s2", ["Plan the migration", "Step one: dump the schema.", "Then?"])
    last = cc_line("s2", 3, "assistant", "Step two: restore into the new cluster.", "s2-u2")
    path.write_text(whole + last[:40])  # the writer is mid-line
    first = ingest_roots(ledger, settings, [("claude-code", path)])
    assert first.messages_new == 3 and first.errors == []
    unchanged = ingest_roots(ledger, settings, [("claude-code", path)])
    assert unchanged.files_changed == 0 and unchanged.messages_new == 0
    with path.open("a") as fh:
        fh.write(last[40:])
    done = ingest_roots(ledger, settings, [("claude-code", path)])
    assert (done.messages_new, done.errors) == (1, [])
    [cid] = ledger.conversation_ids()
    assert ledger.active_thread(cid)[-1].text == "Step two: restore into the new cluster."


def test_a_moved_file_is_the_same_conversation(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    old = tmp_path / "a" / "s3.jsonl"
    old.parent.mkdir()
    old.write_text(cc_session("s3", ["Name the cat", "Miso.", "Why?", "Short and warm."]))
    ingest_roots(ledger, settings, [("auto", tmp_path / "a")])
    new = tmp_path / "b" / "renamed.jsonl"
    new.parent.mkdir()
    shutil.move(old, new)
    with new.open("a") as fh:
        fh.write(cc_line("s3", 4, "user", "Spelling?", "s3-u3"))
    moved = ingest_roots(ledger, settings, [("auto", tmp_path / "b")])
    assert (moved.conversations_new, moved.conversations_updated, moved.messages_new) == (0, 1, 1)
    assert _count(ledger, "conversations") == 1 and _count(ledger, "messages") == 5


def _with_one_more_message(export: list[dict]) -> list[dict]:
    conv = export[0]
    leaf = conv["current_node"]
    node_id = "a0000001-0000-4000-8000-0000000000ff"
    conv["mapping"][leaf]["children"].append(node_id)
    conv["mapping"][node_id] = {
        "id": node_id, "parent": leaf, "children": [],
        "message": {"id": node_id, "author": {"role": "user", "name": None, "metadata": {}},
                    "create_time": 1732617000.0, "content": {"content_type": "text", "parts": ["Is Alvalade quiet at night?"]},
                    "status": "finished_successfully", "weight": 1.0, "metadata": {}, "recipient": "all"},
    }
    conv["current_node"] = node_id
    return export


def test_a_newer_chatgpt_export_updates_and_never_duplicates(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    export = json.loads((FORMATS / "chatgpt" / "conversations.RECONSTRUCTED.json").read_text())
    first_dir = tmp_path / "export-2025-01"
    first_dir.mkdir()
    (first_dir / "conversations.json").write_text(json.dumps(export))
    first = ingest_roots(ledger, settings, [("auto", first_dir)])
    assert first.conversations_new == len(export)
    newer = tmp_path / "export-2025-02" / "conversations.json"
    newer.parent.mkdir()
    newer.write_text(json.dumps(_with_one_more_message(export), indent=1))
    second = ingest_roots(ledger, settings, [("auto", newer)])
    assert (second.conversations_new, second.conversations_updated, second.messages_new) == (0, 1, 1)
    assert _count(ledger, "conversations") == len(export)


def test_edge_case_lines_are_reported_with_their_numbers(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    result = ingest_roots(ledger, settings, [("auto", FORMATS / "claude_code" / "daaain_edge_cases.jsonl")])
    lines = sorted(e.line for e in result.errors if e.line is not None)
    # 13–16 are not JSON objects with a type; 10 and 11 are user lines without usable content.
    assert lines == [10, 11, 13, 14, 15, 16]
    assert all(e.file.endswith("daaain_edge_cases.jsonl") for e in result.errors)
    assert result.messages_new > 0  # the good lines around them were stored


def _big_session(path: Path, n: int) -> None:
    path.write_text(cc_session("big", [f"message {i}: " + "lorem ipsum dolor " * 20 for i in range(n)]))


def test_slices_store_the_same_as_one_pass(ingest_env, home: Path, tmp_path: Path) -> None:
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    ledger, settings = ingest_env
    path = tmp_path / "big.jsonl"
    _big_session(path, 400)
    sliced = ingest_roots(ledger, settings, [("claude-code", path)], slice_bytes=8 * 1024)
    assert sliced.slices > 10 and sliced.messages_new == 400
    assert (sliced.conversations_new, sliced.conversations_updated) == (1, 0)
    other = Ledger(tmp_path / "whole.duckdb")
    try:
        whole = ingest_roots(other, load_settings(home), [("claude-code", path)])
        assert whole.slices == 1
        [cid] = ledger.conversation_ids()
        assert ledger.active_thread(cid) == other.active_thread(cid)
    finally:
        other.close()
    assert ingest_roots(ledger, settings, [("claude-code", path)]).files_changed == 0


_CRASH = """
import sys
from pathlib import Path
from memvault.config.settings import load_settings
from stores.ledger import Ledger
from memvault.stages.ingest import ingest_roots
settings = load_settings(Path(sys.argv[1]))
ledger = Ledger(settings.ledger_path)
ingest_roots(ledger, settings, [("claude-code", Path(sys.argv[2]))], slice_bytes=8 * 1024)
"""


def test_a_crash_between_slices_resumes_at_the_last_slice(home: Path, tmp_path: Path) -> None:
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    path = tmp_path / "big.jsonl"
    _big_session(path, 400)
    env = {**os.environ, "MEMVAULT_FAILPOINT": "ingest:3", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _CRASH, str(home), str(path)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 86, proc.stderr
    settings = load_settings(home)
    with Ledger.open(settings) as ledger:
        stored = ledger.counts().messages
        assert 0 < stored < 400
        mark = ledger.watermark(str(path.resolve()))
        assert mark is not None and 0 < mark.byte_offset < path.stat().st_size
        rest = ingest_roots(ledger, settings, [("claude-code", path)], slice_bytes=8 * 1024)
        assert rest.messages_new == 400 - stored
        assert rest.bytes_read == path.stat().st_size - mark.byte_offset  # nothing read twice
        assert ledger.counts().messages == 400 and ledger.counts().conversations == 1

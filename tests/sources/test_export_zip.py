"""ChatGPT and claude.ai exports as they are downloaded: zipped, large, and sometimes odd.

Through the real ingest function and a real ledger: a zip ingests exactly as its unzipped
conversations.json does, a newer (larger) export adds only its new conversations, a malformed
conversation inside a zip is reported with the file, the member and its index while the others
are stored, and a stream cut into slices stores the same as one pass.
"""

import codecs
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memvault.sources import detect_format, parse_file
from memvault.sources.export import export_slices
from memvault.stages.ingest import ingest_roots
from tests.helpers import FORMATS

SAMPLES = {"chatgpt": FORMATS / "chatgpt" / "conversations.RECONSTRUCTED.json",
           "claude-ai": FORMATS / "claude_ai" / "conversations.RECONSTRUCTED.json"}


def _ledger(tmp_path: Path, name: str) -> Iterator[tuple[Any, Any]]:
    from memvault.ops.home import init_home
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    home = tmp_path / name
    init_home(home)
    settings = load_settings(home)
    ledger = Ledger(settings.ledger_path)
    try:
        yield ledger, settings
    finally:
        ledger.close()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    yield from _ledger(tmp_path, "home")


@pytest.fixture
def env2(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    yield from _ledger(tmp_path, "home2")


def _zip(path: Path, conversations: bytes | str, member: str = "conversations.json", extra: bool = True) -> Path:
    """A zip laid out as the services hand it out: the export beside HTML, account data, images."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        if extra:
            # chat.html quotes the same keys as the JSON: only a JSON document may count.
            archive.writestr("chat.html", '<html><script>var jsonData = [{"mapping": {}, "current_node": 1}]'
                                          "</script></html>")
            archive.writestr("user.json", json.dumps({"id": "user-1", "email": "sam@example.org"}))
            archive.writestr("file-abc123.png", b"\x89PNG\r\n\x1a\n" + bytes(200))
        archive.writestr(member, conversations)
    return path


def _stored(ledger: Any) -> list[tuple[Any, ...]]:
    return sorted(ledger.con.execute(
        "SELECT c.source, c.native_id, c.title, m.native_id, m.role, m.kind, m.text "
        "FROM conversations c JOIN messages m ON m.conversation_id = c.id").fetchall())


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a_zipped_export_ingests_as_its_unzipped_file(env, env2, tmp_path: Path, kind: str) -> None:
    (ledger, settings), (ledger2, settings2) = env, env2
    plain = SAMPLES[kind]
    archive = _zip(tmp_path / "downloads" / f"{kind}-export.zip", plain.read_bytes())
    from_plain = ingest_roots(ledger, settings, [("auto", plain)])
    from_zip = ingest_roots(ledger2, settings2, [("auto", archive.parent)])  # found in a folder as .zip
    assert from_zip.errors == [] and from_plain.errors == []
    assert from_zip.conversations_new == from_plain.conversations_new > 0
    assert from_zip.messages_new == from_plain.messages_new > 0
    assert ledger2.counts() == ledger.counts()
    assert _stored(ledger2) == _stored(ledger)
    # Unchanged, the zip costs a stat the next time.
    again = ingest_roots(ledger2, settings2, [("auto", archive.parent)])
    assert (again.files_changed, again.conversations_new, again.messages_new) == (0, 0, 0)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_a_zip_is_recognized_by_content_under_any_name(tmp_path: Path, kind: str) -> None:
    archive = _zip(tmp_path / "download (3).bin", SAMPLES[kind].read_bytes(), member="export/data.json")
    assert detect_format(archive) == kind
    result = parse_file(archive, kind)  # type: ignore[arg-type]
    assert result.errors == [] and result.conversations
    assert result.end_offset == archive.stat().st_size


def test_a_zip_without_an_export_is_reported_not_guessed(env, tmp_path: Path) -> None:
    ledger, settings = env
    other = _zip(tmp_path / "photos.zip", json.dumps([{"id": 1, "caption": "beach"}]), member="album.json")
    assert detect_format(other) is None
    result = parse_file(other, "chatgpt")
    assert len(result.errors) == 1 and "without a ChatGPT conversations.json" in result.errors[0].error
    assert "album.json" in result.errors[0].error
    ingested = ingest_roots(ledger, settings, [("auto", other)])
    assert ingested.conversations_new == 0 and "not a transcript memvault recognizes" in ingested.errors[0].error


def _chatgpt_conversation(n: int, turns: int = 2) -> dict[str, Any]:
    """A small ChatGPT conversation numbered ``n``: root, then ``turns`` user/assistant pairs."""
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for t in range(turns * 2):
        node = f"c{n}-m{t}"
        role = "user" if t % 2 == 0 else "assistant"
        mapping[parent]["children"].append(node)
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": role}, "create_time": 1732616400.5 + n * 100 + t,
            "content": {"content_type": "text", "parts": [f"conversation {n} turn {t}: about tide tables {n}"]},
            "metadata": {}, "recipient": "all"}}
        parent = node
    return {"id": f"conv-{n:04d}", "conversation_id": f"conv-{n:04d}", "title": f"Tides {n}",
            "create_time": 1732616400.0 + n * 100, "update_time": 1732616500.0 + n * 100,
            "current_node": parent, "mapping": mapping}


def test_a_second_larger_export_adds_only_the_new_conversations(env, tmp_path: Path) -> None:
    ledger, settings = env
    first = _zip(tmp_path / "exports" / "chatgpt-2026-11.zip", json.dumps([_chatgpt_conversation(n) for n in range(3)]))
    one = ingest_roots(ledger, settings, [("chatgpt", first)])
    assert (one.conversations_new, one.messages_new, one.errors) == (3, 12, [])
    # The next month's download holds the old conversations again, in another order, and two new ones.
    newer = [_chatgpt_conversation(n) for n in (4, 0, 1, 3, 2)]
    second = _zip(tmp_path / "exports" / "chatgpt-2026-12.zip", json.dumps(newer, indent=1))
    two = ingest_roots(ledger, settings, [("auto", tmp_path / "exports")])
    assert (two.conversations_new, two.conversations_updated, two.messages_new, two.errors) == (2, 0, 8, [])
    assert ledger.counts().conversations == 5 and ledger.counts().messages == 20
    # The same download again, touched: read, and nothing added.
    second.touch()
    again = ingest_roots(ledger, settings, [("auto", tmp_path / "exports")])
    assert again.files_changed == 1 and (again.conversations_new, again.messages_new) == (0, 0)


def test_a_malformed_conversation_in_a_zip_does_not_stop_the_others(env, tmp_path: Path) -> None:
    ledger, settings = env
    broken = _chatgpt_conversation(1)
    broken["mapping"] = ["not", "an", "object"]
    items = [_chatgpt_conversation(0), broken, "a string where a conversation belongs", _chatgpt_conversation(3)]
    archive = _zip(tmp_path / "export.zip", json.dumps(items), member="Export-2026/conversations.json")
    result = ingest_roots(ledger, settings, [("auto", archive)])
    assert result.conversations_new == 2 and result.messages_new == 8
    assert {r[0] for r in ledger.con.execute("SELECT native_id FROM conversations").fetchall()} == {"conv-0000", "conv-0003"}
    first, second = result.errors
    assert first.file == second.file == str(archive)
    assert "Export-2026/conversations.json (in the zip)" in first.error
    assert "conversation #1 (counting from 0, id conv-0001) unusable" in first.error and "'mapping'" in first.error
    assert "conversation #2 (counting from 0) is a str" in second.error
    # Reported again while the file is unchanged, so the user sees it until it is fixed.
    again = ingest_roots(ledger, settings, [("auto", archive)])
    assert [e.error for e in again.errors] == [first.error, second.error]


def test_a_cut_export_keeps_the_conversations_before_the_cut(tmp_path: Path) -> None:
    whole = json.dumps([_chatgpt_conversation(n) for n in range(4)])
    cut = whole[: whole.index('"conv-0003"') + 5]  # the download stopped inside the last one
    archive = _zip(tmp_path / "cut.zip", cut)
    result = parse_file(archive, "chatgpt")
    assert [c.native_id for c in result.conversations] == ["conv-0000", "conv-0001", "conv-0002"]
    [error] = result.errors
    assert "not valid JSON after 3 conversation(s)" in error.error and "re-download" in error.error


def test_slices_of_a_stream_store_the_same_as_one_pass(env, env2, tmp_path: Path) -> None:
    (ledger, settings), (ledger2, settings2) = env, env2
    export = json.dumps([_chatgpt_conversation(n, turns=5) for n in range(60)]).encode()
    archive = _zip(tmp_path / "big.zip", export)
    slices = list(export_slices(archive, "chatgpt", 8 * 1024))
    assert len(slices) > 3 and [more for _, more in slices] == [True] * (len(slices) - 1) + [False]
    assert sum(len(s.conversations) for s, _ in slices) == 60
    offsets = [s.end_offset for s, _ in slices]
    assert offsets == sorted(offsets) and offsets[-1] == archive.stat().st_size
    sliced = ingest_roots(ledger, settings, [("auto", archive)], slice_bytes=8 * 1024)
    whole = ingest_roots(ledger2, settings2, [("auto", archive)])
    assert sliced.slices == len(slices) and whole.slices == 1
    assert (sliced.conversations_new, sliced.messages_new) == (whole.conversations_new, whole.messages_new) == (60, 600)
    assert _stored(ledger) == _stored(ledger2)


def test_a_utf16_export_with_a_bom_streams_like_utf8(tmp_path: Path) -> None:
    text = SAMPLES["claude-ai"].read_text(encoding="utf-8")
    wide = tmp_path / "conversations.json"
    wide.write_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"))
    bom = tmp_path / "bom.json"
    bom.write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
    expected = parse_file(SAMPLES["claude-ai"], "claude-ai").conversations
    for path in (wide, bom, _zip(tmp_path / "wide.zip", wide.read_bytes())):
        assert detect_format(path) == "claude-ai", path
        result = parse_file(path, "claude-ai")
        assert result.errors == [] and result.conversations == expected, path


def test_a_damaged_or_cut_zip_is_reported_never_raised(env, tmp_path: Path) -> None:
    ledger, settings = env
    good = _zip(tmp_path / "good.zip", json.dumps([_chatgpt_conversation(n) for n in range(30)]), extra=False)
    data = good.read_bytes()
    flipped = bytearray(data)
    for at in range(200, len(data) // 2, 97):  # inside the compressed member: zlib finds it
        flipped[at] ^= 0x5A
    damaged = tmp_path / "src" / "damaged.zip"
    damaged.parent.mkdir()
    damaged.write_bytes(bytes(flipped))
    (tmp_path / "src" / "cut.zip").write_bytes(data[: len(data) // 2])  # a download that stopped
    for path in (damaged, tmp_path / "src" / "cut.zip"):
        result = parse_file(path, "chatgpt")
        assert result.errors and all(e.file == str(path) for e in result.errors), path
        assert "re-download the ChatGPT export" in result.errors[-1].error
    ingested = ingest_roots(ledger, settings, [("chatgpt", tmp_path / "src")])
    assert {Path(e.file).name for e in ingested.errors} == {"damaged.zip", "cut.zip"}


def test_a_ledger_whose_indexes_outgrow_the_bulk_cap_still_ingests(env) -> None:
    # DuckDB cannot spill its primary-key (ART) indexes: under a fixed cap, a big enough ledger
    # failed every insert (a 1 GB export died near 700k messages under 64 MB). A small cap
    # stands in for the big ledger here.
    from memvault.models import Conversation, Message

    ledger, _ = env
    convs = [Conversation(source="chatgpt", native_id=f"c{n}", messages=[
        Message(native_id=f"c{n}-m{i}", role="user", text="tide") for i in range(400)]) for n in range(400)]
    with ledger.bulk_load(memory_limit="8MB"):
        for start in range(0, len(convs), 10):
            with ledger.transaction():
                ledger.upsert_conversations(convs[start:start + 10])
        raised = ledger.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert ledger.counts().messages == 160_000
    assert raised != "8.0 MiB"  # the cap grew with the indexes

"""Hostile input found by the issue-26 campaign (§3): one odd line or file name never stops a
file or the ingest, through a real ledger."""

import json
import os
from pathlib import Path

import pytest

from memvault.sources import detect_format
from memvault.stages.ingest import ingest_roots
from tests.helpers import cc_session


@pytest.mark.parametrize("odd", [{"x": 1}, ["user"]])
def test_a_line_whose_type_is_an_object_or_list_stops_neither_detection_nor_ingest(ingest_env, tmp_path: Path,
                                                                                   odd: object) -> None:
    ledger, settings = ingest_env
    src = tmp_path / "src"
    src.mkdir()
    (src / "odd.jsonl").write_text(json.dumps({"type": odd, "sessionId": "s"}) + "\n"
                                   + cc_session("odd", ["how do I rotate the nginx logs?", "use logrotate"]))
    (src / "other.jsonl").write_text(cc_session("other", ["hello there", "hi"]))
    assert detect_format(src / "odd.jsonl") == "claude-code"
    result = ingest_roots(ledger, settings, [("auto", src)])
    assert result.conversations_new == 2 and result.messages_new == 4
    assert [(Path(e.file).name, e.line) for e in result.errors] == [("odd.jsonl", 1)]


def test_a_file_name_that_is_not_utf8_does_not_fail_the_batch(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    src = tmp_path / "src"
    src.mkdir()
    # A Latin-1 name, as an old archive or a network share leaves it: not decodable as UTF-8.
    bad = os.path.join(os.fsencode(src), b"r\xe9sum\xe9.jsonl")
    with open(bad, "w") as fh:
        fh.write(cc_session("latin", ["notes on the caf\u00e9 budget", "noted"]))
    (src / "plain.jsonl").write_text(cc_session("plain", ["hello there", "hi"]))
    result = ingest_roots(ledger, settings, [("auto", src)])
    assert result.errors == [] and result.conversations_new == 2 and result.messages_new == 4
    again = ingest_roots(ledger, settings, [("auto", src)])
    assert again.messages_new == 0 and again.errors == []  # its watermark was stored, under a readable name


def _capped(home: Path, **ingest: int):
    from memvault.config.settings import load_settings

    (home / "memvault.toml").write_text((home / "memvault.toml").read_text() + "\n[ingest]\n"
                                        + "".join(f"{k} = {v}\n" for k, v in ingest.items()))
    return load_settings(home)


def test_a_huge_string_is_cut_before_parsing_and_the_rest_of_the_export_is_stored(ingest_env, home: Path,
                                                                                  tmp_path: Path) -> None:
    import zipfile

    from tests.sources.test_export_zip import _chatgpt_conversation

    ledger, _ = ingest_env
    settings = _capped(home, max_string_bytes=65_536)
    convs = [_chatgpt_conversation(n) for n in range(3)]
    big = next(v for v in convs[1]["mapping"].values() if v["message"])
    big["message"]["content"]["parts"] = ["tail -f /var/log/syslog\n" * 200_000 + "THE END"]  # 4.8 MB
    export = tmp_path / "chatgpt.zip"
    with zipfile.ZipFile(export, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", json.dumps(convs))
    result = ingest_roots(ledger, settings, [("auto", export)])
    assert result.errors == [] and result.conversations_new == 3 and result.messages_new == 12
    texts = [r[0] for r in ledger.con.execute("SELECT text FROM messages").fetchall()]
    cut = max(texts, key=len)
    assert len(cut) < 70_000 and "cut by memvault before parsing" in cut and "THE END" not in cut


def test_a_huge_jsonl_message_is_cut_first_and_the_file_goes_on(ingest_env, home: Path, tmp_path: Path) -> None:
    ledger, _ = ingest_env
    settings = _capped(home, max_string_bytes=65_536)
    path = tmp_path / "s.jsonl"
    path.write_text(cc_session("s", ["paste:\n" + "x" * 3_000_000 + "SECRET-TAIL", "that is a long paste",
                                     "and a normal question after it", "a normal answer"]))
    result = ingest_roots(ledger, settings, [("claude-code", path)])
    assert result.errors == [] and result.messages_new == 4
    texts = [r[0] for r in ledger.con.execute("SELECT text FROM messages").fetchall()]
    assert any("cut by memvault before parsing" in t for t in texts) and not any("SECRET-TAIL" in t for t in texts)


def test_a_zip_entry_over_the_cap_is_named_and_skipped_before_inflating(ingest_env, home: Path,
                                                                       tmp_path: Path) -> None:
    import zipfile

    from tests.sources.test_export_zip import _chatgpt_conversation

    ledger, _ = ingest_env
    settings = _capped(home, max_zip_entry_bytes=1_000_000)
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        # 0.3 MB of small conversations, then 5 MB of one string that deflates to a few KB
        zf.writestr("conversations.json", json.dumps([_chatgpt_conversation(0)])[:-1]
                    + ', {"title": "' + "A" * 5_000_000 + '"}]')
    (tmp_path / "other.jsonl").write_text(cc_session("other", ["hello there", "hi"]))
    result = ingest_roots(ledger, settings, [("auto", tmp_path)])
    assert result.messages_new == 2  # every other file is stored
    [error] = result.errors
    assert "conversations.json (in the zip)" in error.error and "max_zip_entry_bytes" in error.error
    assert Path(error.file).name == "bomb.zip"

"""Hostile input found by the issue-26 campaign (§3): one odd line or file name never stops a
file or the ingest, through a real ledger."""

import json
import os
from pathlib import Path

import pytest

from memvault.sources import detect_format
from tasks.ingest import run_ingest
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
    result = run_ingest(ledger, settings, [("auto", src)])
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
    result = run_ingest(ledger, settings, [("auto", src)])
    assert result.errors == [] and result.conversations_new == 2 and result.messages_new == 4
    again = run_ingest(ledger, settings, [("auto", src)])
    assert again.messages_new == 0 and again.errors == []  # its watermark was stored, under a readable name

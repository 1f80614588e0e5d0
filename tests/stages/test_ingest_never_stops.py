"""Ingest never stops: every bad file is reported with its path (and line), every good file of
the same run is ingested, and a bad file's problems are reported again by later runs until it
changes — through a real ledger."""

import codecs
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import memvault.stages.ingest as ingest_mod
from memvault.stages.ingest import ingest_roots
from tests.helpers import cc_session


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail instead of hanging forever (a FIFO opened for reading blocks until a writer comes)."""
    def fail(*_: object) -> None:
        raise TimeoutError("ingest blocked")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(120)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def _bad_files(folder: Path) -> dict[str, Path]:
    """One file per way of breaking ingest; names say which."""
    files = {name: folder / f"{name}.jsonl" for name in ("deep_line", "loop", "fifo")}
    files["deep_line"].write_text(cc_session("deep", ["first line is fine", "so is this"])
                                  + '{"type": "user", "x": ' + _deep(10_000) + "}\n")
    files["loop"].symlink_to(files["loop"])
    os.mkfifo(files["fifo"])
    files["deep_export"] = folder / "deep_export.json"
    files["deep_export"].write_text('[{"mapping": {}, "current_node": null, "author": ' + _deep(10_000) + "}]")
    files["utf16"] = folder / "utf16.jsonl"
    files["utf16"].write_bytes(codecs.BOM_UTF16_LE + cc_session("wide", ["hello", "hi"]).encode("utf-16-le"))
    return files


def _good_files(folder: Path) -> dict[str, Path]:
    """Files that lost data silently before: each must be read whole."""
    files = {"plain": folder / "plain.jsonl", "cr": folder / "cr.jsonl", "bom": folder / "bom.jsonl",
             "long_first": folder / "long_first.jsonl"}
    files["plain"].write_text(cc_session("plain", ["How do I back up postgres?", "Use pg_dump nightly."]))
    files["cr"].write_bytes(cc_session("cr", ["old mac line ends", "still read"]).replace("\n", "\r").encode())
    files["bom"].write_bytes(codecs.BOM_UTF8 + cc_session("bom", ["a byte-order mark first", "then this"]).encode())
    files["long_first"].write_text(cc_session("long", ["x " * 700_000 + "end", "short reply"]))
    return files


def test_bad_files_are_reported_and_good_files_of_the_run_are_ingested(ingest_env, tmp_path: Path,
                                                                      no_hang: None) -> None:
    ledger, settings = ingest_env
    src = tmp_path / "src"
    src.mkdir()
    bad = _bad_files(src)
    good = _good_files(src)
    result = ingest_roots(ledger, settings, [("auto", src)])
    assert result.conversations_new == len(good) + 1  # + the good lines of deep_line.jsonl
    assert result.messages_new == 2 * len(good) + 2
    by_file = {Path(e.file).name: e for e in result.errors}
    assert set(by_file) == {p.name for p in bad.values()}, result.errors
    assert by_file["deep_line.jsonl"].line == 3 and "nested too deeply" in by_file["deep_line.jsonl"].error
    assert "symlink loop" in by_file["loop.jsonl"].error
    assert "not a regular file" in by_file["fifo.jsonl"].error
    assert "UTF-16" in by_file["utf16.jsonl"].error
    assert by_file["deep_export.json"].error  # reported, not raised

    # The next run reads nothing new and still reports every broken file it skipped unchanged.
    again = ingest_roots(ledger, settings, [("auto", src)])
    assert again.messages_new == 0
    assert {Path(e.file).name for e in again.errors} == set(by_file)
    assert again.errors_from_earlier_runs >= 1
    # Once fixed, the file's old problems are gone.
    bad["deep_line"].write_text(cc_session("deep", ["first line is fine", "so is this"]))
    fixed = ingest_roots(ledger, settings, [("auto", src)])
    assert "deep_line.jsonl" not in {Path(e.file).name for e in fixed.errors}


def test_stored_problems_survive_a_run_killed_after_its_commit(home: Path, tmp_path: Path) -> None:
    # Problems are stored with the watermark, in one transaction: a fresh ledger handle (a new
    # process after a kill) sees them, and a rerun that skips the unchanged file reports them.
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    settings = load_settings(home)
    path = tmp_path / "s.jsonl"
    path.write_text(cc_session("s", ["fine", "fine too"]) + "not json\n")
    for run in (1, 2):
        ledger = Ledger(settings.ledger_path)
        try:
            result = ingest_roots(ledger, settings, [("claude-code", path)])
        finally:
            ledger.close()
        assert [(e.line, e.error.startswith("not valid JSON")) for e in result.errors] == [(3, True)], run
        assert result.errors_from_earlier_runs == (run - 1)


def test_a_huge_message_is_stored_cut_with_a_marker(ingest_env, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, settings = ingest_env
    monkeypatch.setattr(ingest_mod, "MAX_MESSAGE_CHARS", 5_000)
    path = tmp_path / "big.jsonl"
    path.write_text(cc_session("big", ["word " * 10_000 + "password=hunter2secret", "ok, noted"]))
    result = ingest_roots(ledger, settings, [("claude-code", path)])
    assert result.messages_truncated == 1 and result.errors == []
    texts = [row[0] for row in ledger.con.execute("SELECT text FROM messages ORDER BY text").fetchall()]
    big = max(texts, key=len)
    assert len(big) < 5_200 and "characters cut by memvault" in big and "hunter2secret" not in big


def test_json_report_of_a_run_with_bad_files_is_complete(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    (tmp_path / "bad.jsonl").write_text('{"type": "user", "x": ' + _deep(5_000) + "}\n")
    (tmp_path / "good.jsonl").write_text(cc_session("good", ["hello there", "hi"]))
    data = json.loads(ingest_roots(ledger, settings, [("auto", tmp_path)]).model_dump_json())
    assert data["messages_new"] == 2 and [Path(e["file"]).name for e in data["errors"]] == ["bad.jsonl"]

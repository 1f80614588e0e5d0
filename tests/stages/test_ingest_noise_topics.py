"""Memory never remembers itself, injected blocks are stripped, Topics_to_Ignore is honoured,
and bad input is reported without stopping the other files — through a real ledger."""

import json
import os
from pathlib import Path

import pytest

import memvault.stages.ingest as ingest_mod
from memvault.hygiene.noise import MEMVAULT_SELF_CALL_SENTINEL
from memvault.hygiene.topics import parse_topics, topics_pattern
from memvault.stages.ingest import ingest_roots
from tests.helpers import cc_line, cc_session, write_topics


def test_own_conversations_are_never_stored_even_when_they_grow(ingest_env, tmp_path: Path) -> None:
    from memvault.engines import FakeEngine, RecordingEngine
    from memvault.hygiene.selfcalls import self_call_log

    ledger, settings = ingest_env
    prompt = f"{MEMVAULT_SELF_CALL_SENTINEL}\nSummarize these chunks into an article."
    # The engine memvault runs records the exact prompt it sends, as a nightly run does.
    engine = RecordingEngine(FakeEngine(["Here is the article."]), self_call_log(settings.state_dir))
    engine.complete("system text", prompt, max_tokens=10)
    src = tmp_path / "src"
    src.mkdir()
    own = src / "own.jsonl"
    own.write_text(cc_session("own", [prompt, "Here is the article."]))
    user = src / "user.jsonl"
    user.write_text(cc_session("user", ["How do I back up postgres?", "Use pg_dump nightly."]))
    first = ingest_roots(ledger, settings, [("claude-code", src)])
    assert (first.skipped_own, first.conversations_new, first.messages_new) == (1, 1, 2)
    with own.open("a") as fh:  # the same self-driven session keeps going
        fh.write(cc_line("own", 2, "user", "Shorter, please.", "own-u1"))
    again = ingest_roots(ledger, settings, [("claude-code", src)])
    assert (again.conversations_new, again.messages_new) == (0, 0)
    assert ledger.counts().conversations == 1


def test_a_pasted_sentinel_or_prompt_part_never_drops_a_conversation(ingest_env, tmp_path: Path) -> None:
    from memvault.hygiene.selfcalls import self_call_log

    ledger, settings = ingest_env
    prompt = f"{MEMVAULT_SELF_CALL_SENTINEL}\nSummarize these chunks into an article."
    self_call_log(settings.state_dir).record(["system text", prompt])
    (tmp_path / "pasted.jsonl").write_text(cc_session("pasted", [
        f"Why does memvault put {MEMVAULT_SELF_CALL_SENTINEL} in prompts? Here is one:\n{prompt}",
        "It marks its own calls."]))
    (tmp_path / "page.jsonl").write_text(cc_session("page", [
        "Summarize this page", f"The page says: {MEMVAULT_SELF_CALL_SENTINEL} ignore me"]))
    result = ingest_roots(ledger, settings, [("claude-code", tmp_path)])
    assert (result.skipped_own, result.conversations_new, result.messages_new) == (0, 2, 4)


def test_recall_and_index_blocks_are_stripped_and_the_rest_kept(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    path = tmp_path / "s.jsonl"
    injected = ("<memory-recall source=\"memvault\">\nconv:1a2b3c4d says backups run at 03:00\n</memory-recall>\n"
                "<memvault-index>\n- [[Postgres_Backup]]\n</memvault-index>\n"
                "When should the backup run?")
    path.write_text(cc_session("strip", [injected, "At 02:00, before the nightly memvault run."]))
    ingest_roots(ledger, settings, [("claude-code", path)])
    [cid] = ledger.conversation_ids()
    texts = [m.text for m in ledger.active_thread(cid)]
    assert texts == ["When should the backup run?", "At 02:00, before the nightly memvault run."]


def test_topics_page_format_matches_the_parser() -> None:
    template = (Path(__file__).resolve().parents[2] / "vault_template" / "Meta" / "Topics_to_Ignore.md").read_text()
    assert parse_topics(template) == []  # the examples sit inside an HTML comment
    page = template + "\n- Salary negotiations: anything about my pay\n- **Medical** appointments\n  - nested: not a topic\n"
    assert parse_topics(page) == ["Salary negotiations", "Medical appointments"]
    pattern = topics_pattern(["Salary negotiations"])
    import re
    assert re.search(pattern, "our SALARY\nnegotiations went fine")
    assert not re.search(pattern, "salary negotiationsxyz")


def test_ignored_topics_are_ingested_but_never_chunked_or_indexed(ingest_env, home: Path, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    write_topics(home, "salary negotiation")
    (tmp_path / "pay.jsonl").write_text(cc_session("pay", ["Help me prepare", "Sure.", "It is a salary negotiation with Ana",
                                                           "Lead with your market data."]))
    (tmp_path / "db.jsonl").write_text(cc_session("db", ["Tune postgres autovacuum", "Lower the scale factor."]))
    first = ingest_roots(ledger, settings, [("claude-code", tmp_path)])
    assert first.conversations_new == 2 and first.conversations_ignored == 1
    assert ledger.counts().messages == 6  # ingested all the same
    [ignored] = ledger.ignored_conversation_ids()
    assert ignored not in ledger.conversations_to_chunk() and ignored not in ledger.conversations_to_index()
    assert len(ledger.conversations_to_chunk()) == 1
    # A topic named only in an appended line still flags the conversation.
    with (tmp_path / "db.jsonl").open("a") as fh:
        fh.write(cc_line("db", 2, "user", "Unrelated: my Salary  Negotiation is tomorrow", "db-u1"))
    assert ingest_roots(ledger, settings, [("claude-code", tmp_path)]).conversations_ignored == 1
    assert ledger.conversations_to_chunk() == []
    # Removing the topic lets both back in: the changed list re-judges every conversation.
    write_topics(home)
    back = ingest_roots(ledger, settings, [("claude-code", tmp_path)])
    assert back.files_changed == 0 and ledger.ignored_conversation_ids() == []
    assert len(ledger.conversations_to_chunk()) == 2 and len(ledger.conversations_to_index()) == 2


def test_bad_files_are_each_reported_and_never_stop_the_others(ingest_env, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ledger, settings = ingest_env
    src = tmp_path / "src"
    src.mkdir()
    (src / "a_binary.jsonl").write_bytes(b"\x00\x01\x02PK\x03\x04" * 100)
    (src / "b_empty.jsonl").write_bytes(b"")
    (src / "c_folder.jsonl").mkdir()
    (src / "d_vanishing.jsonl").write_text(cc_session("gone", ["hello there", "hi"]))
    (src / "e_good.jsonl").write_text(cc_session("good", ["Keep this one", "Kept."]))
    (src / "f_not_utf8.jsonl").write_bytes(cc_line("bad8", 0, "user", "ok line").encode()
                                           + b'{"type": "user", "text": "\xff\xfe"}\n'
                                           + cc_line("bad8", 2, "user", "after the bad line", "bad8-u0").encode())
    real = ingest_mod.ingest_file

    def vanish_first(ledger, path, *args, **kwargs):  # the file is deleted between discovery and parsing
        if path.name == "d_vanishing.jsonl" and path.exists():
            os.remove(path)
        return real(ledger, path, *args, **kwargs)

    monkeypatch.setattr(ingest_mod, "ingest_file", vanish_first)
    result = ingest_roots(ledger, settings, [("auto", src)])
    by_file = {Path(e.file).name: e for e in result.errors}
    assert set(by_file) == {"a_binary.jsonl", "b_empty.jsonl", "c_folder.jsonl", "d_vanishing.jsonl", "f_not_utf8.jsonl"}
    assert "directory" in by_file["c_folder.jsonl"].error
    assert "vanished" in by_file["d_vanishing.jsonl"].error
    assert by_file["f_not_utf8.jsonl"].line == 2 and "UTF-8" in by_file["f_not_utf8.jsonl"].error
    assert result.files_seen == 6 and result.conversations_new == 2  # good + the two good lines of f
    assert json.dumps(result.model_dump(mode="json"))  # the report is plain JSON

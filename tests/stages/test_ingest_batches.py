"""Batched storing: many files per transaction and one upsert for many conversations give
exactly what one conversation at a time gave."""

import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memvault.models import Conversation, Message
from memvault.stages.ingest import ingest_roots
from tests.helpers import FORMATS, SAMPLES, cc_session, write_topics


def _conv(native: str, *texts: str, title: str = "", leaf: str | None = None, hour: int = 1) -> Conversation:
    when = datetime(2025, 1, 1, hour, tzinfo=timezone.utc)
    return Conversation(source="claude-code", native_id=native, title=title, leaf_native_id=leaf,
                        started_at=when, updated_at=when,
                        messages=[Message(native_id=f"m{i}", role="user" if i % 2 == 0 else "assistant", text=t)
                                  for i, t in enumerate(texts)])


def _snapshot(ledger, cids: list[str]) -> list:
    return [(ledger.conversation(c), ledger.active_thread(c)) for c in cids]


def test_one_batch_equals_one_upsert_after_another(ingest_env, tmp_path: Path) -> None:
    from stores.ledger import Ledger

    ledger, _settings = ingest_env
    # The same conversation twice in one batch (a copied file, consecutive slices): a new
    # message, an edited one, a later title and leaf; plus a second conversation.
    batch = [_conv("a", "q1", "a1", title="First"), _conv("b", "hello", "hi"),
             _conv("a", "q1", "a1 edited", "q2", title="Later", leaf="m2", hour=3), _conv("a", title="", hour=2)]
    other = Ledger(tmp_path / "one_by_one.duckdb")
    try:
        one_by_one = [other.upsert_conversations([c])[0] for c in batch]
        assert ledger.upsert_conversations(batch) == one_by_one == [(True, 2, 0), (True, 2, 0), (False, 1, 1),
                                                                     (False, 0, 0)]
        cids = [batch[0].id, batch[1].id]
        assert _snapshot(ledger, cids) == _snapshot(other, cids)
        # And against what is stored: nothing new, then one more message.
        again = [_conv("a", "q1", "a1 edited", "q2", "a2"), _conv("b", "hello", "hi")]
        assert ledger.upsert_conversations(again) == [other.upsert_conversations([c])[0] for c in again] \
            == [(False, 1, 0), (False, 0, 0)]
        assert _snapshot(ledger, cids) == _snapshot(other, cids)
    finally:
        other.close()


def test_forgotten_conversations_are_skipped_inside_a_batch(ingest_env) -> None:
    ledger, _settings = ingest_env
    ledger.upsert_conversations([_conv("gone", "secret plans")])
    ledger.forget_conversation(_conv("gone").id)
    assert ledger.upsert_conversations([_conv("kept", "x"), _conv("gone", "secret plans", "more")]) \
        == [(True, 1, 0), (False, 0, 0)]
    assert ledger.conversation(_conv("gone").id) is None


def test_many_files_per_batch_store_what_one_file_per_batch_stores(ingest_env, home: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import memvault.stages.ingest as ingest_mod
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    ledger, settings = ingest_env
    src = tmp_path / "src"
    shutil.copytree(FORMATS, src / "formats")
    shutil.copytree(SAMPLES, src / "samples")
    for i in range(30):
        (src / f"extra{i}.jsonl").write_text(cc_session(f"x{i}", [f"question {i}", f"answer {i}", "thanks"]))
    batched = ingest_roots(ledger, settings, [("auto", src)])
    other = Ledger(tmp_path / "per_file.duckdb")
    try:
        # A batch of one file: the old store-and-commit-each-file behaviour.
        real = ingest_mod._Batches
        monkeypatch.setattr(ingest_mod, "_Batches", lambda ledger, result, limit, pattern=None: real(
            ledger, result, limit, limit_files=1, pattern=pattern))
        per_file = ingest_roots(other, load_settings(home), [("auto", src)])
        keys = ("files_seen", "files_changed", "conversations_new", "conversations_updated", "messages_new",
                "redactions", "skipped_types", "skipped_own")
        assert {k: getattr(batched, k) for k in keys} == {k: getattr(per_file, k) for k in keys}
        assert batched.conversations_new >= 40
        cids = ledger.conversation_ids()
        assert cids == other.conversation_ids()
        assert _snapshot(ledger, cids) == _snapshot(other, cids)
    finally:
        other.close()


def test_topics_are_judged_by_the_ledger_for_new_and_edited_text(ingest_env, home: Path, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    write_topics(home, "salary negotiation")
    path = tmp_path / "s.jsonl"
    # "negotiationé": RE2 (the ledger) counts é as a non-word character, Python would not; the
    # prefilter must still hand it to the ledger.
    texts = ["Plan the week", "Sure.", "Prep my salary negotiationé talk", "Lead with data."]
    path.write_text(cc_session("s", texts))
    first = ingest_roots(ledger, settings, [("claude-code", path)])
    assert first.conversations_ignored == 1 and len(ledger.ignored_conversation_ids()) == 1
    # The file is rewritten with that message edited: the edit is judged again, and it is let back in.
    path.write_text(cc_session("s", [*texts[:2], "Prep my talk", texts[3]]))
    again = ingest_roots(ledger, settings, [("claude-code", path)])
    assert again.conversations_updated == 1 and ledger.ignored_conversation_ids() == []


def test_a_lone_surrogate_is_stored_not_a_failed_batch(ingest_env, tmp_path: Path) -> None:
    ledger, settings = ingest_env
    path = tmp_path / "s.jsonl"
    path.write_text(cc_session("s", ["emoji cut in half: \ud83d", "ok, noted"]) + cc_session("t", ["other"]))
    result = ingest_roots(ledger, settings, [("claude-code", path)])
    assert result.errors == [] and result.messages_new == 3
    texts = [m.text for c in ledger.conversation_ids() for m in ledger.active_thread(c)]
    assert "emoji cut in half: \ufffd" in texts

"""Every place text enters is redacted, not only messages: a note's project (CLI `note --project`,
MCP `remember`), error messages that quote a malformed value, line problems of a transcript
and its unknown "type" names, and live.log (a rejected hook payload is described, never copied).
"""

import json
from pathlib import Path

from memvault.live import spool
from memvault.errors import UsageError
from memvault.models import LineError
from tests.helpers import cli
from tests.stages.test_ingest_secret_corpus import _ledger_strings

REDIS_URL = "redis://:R3disPw9xQ@cache.internal:6379/0"
MYSQL = "mysql -u app -pT0ps3cretX9 shop"
DOCKER = "dckr_pat_Zq3RkT9vLw2mNp8XbJ4cYt7sD1f"


def _ledger_text(home: Path) -> str:
    return _ledger_strings(home / ".memvault" / "ledger.duckdb").decode()


def test_note_project_title_and_text_are_redacted(home: Path, embedder) -> None:
    from memvault.ops.note import add_note
    from memvault.config.settings import load_settings

    out = cli("--home", str(home), "note", f"cache moved; {MYSQL}", "--title", f"cache {DOCKER}",
              "--project", f"ops {REDIS_URL}", "--json")
    assert out.exit_code == 0, out.output
    # MCP `remember` calls the same function, as the assistant.
    add_note(load_settings(home), "the bot token rotates monthly", project=f"bots Passwort: Geh31mXy7",
             author="assistant", embedder=embedder)
    stored = _ledger_text(home)
    for secret in ("R3disPw9xQ", "T0ps3cretX9", DOCKER, "Geh31mXy7"):
        assert secret not in stored and secret not in out.output
    assert "ops redis://:[REDACTED:url_password]@cache.internal:6379/0" in stored
    listed = json.loads(cli("--home", str(home), "conversations", "--json").output)
    assert {c["project"] for c in listed} == {"ops redis://:[REDACTED:url_password]@cache.internal:6379/0",
                                              "bots Passwort: [REDACTED:password_word]"}


def test_error_messages_never_echo_a_secret(home: Path) -> None:
    assert "T0ps3cretX9" not in str(UsageError(f"unknown source {MYSQL!r}"))
    problem = LineError(file="s.jsonl", line=3, error=f"unknown message role {DOCKER!r}")
    assert DOCKER not in problem.error and "[REDACTED:docker_pat]" in problem.error
    # Through a command: a malformed option value is quoted back redacted, as text and as JSON.
    for flags in ((), ("--json",)):
        out = cli("--home", str(home), "conversations", "--source", f"password={DOCKER}x", *flags)
        assert out.exit_code == 2 and DOCKER not in out.output and "REDACTED" in out.output


def test_malformed_transcript_fields_reach_no_report(home: Path, tmp_path: Path) -> None:
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger
    from memvault.stages.ingest import ingest_roots

    src = tmp_path / "pi.jsonl"
    lines = [{"type": "session", "version": 3, "id": "p1", "cwd": f"/srv/{REDIS_URL}", "timestamp": "2025-03-03T10:00:00Z"},
             {"type": "message", "id": "a", "parentId": None, "timestamp": "2025-03-03T10:00:01Z",
              "message": {"role": f"sshpass -p W1nt3rPw ssh {DOCKER}", "content": "x"}},
             {"type": f"{MYSQL}", "id": "b", "timestamp": "2025-03-03T10:00:02Z"},
             {"type": "message", "id": "c", "parentId": None, "timestamp": "2025-03-03T10:00:03Z",
              "message": {"role": "user", "content": [{"type": "text", "text": "the cache moved"}]}}]
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    settings = load_settings(home)
    with Ledger.open(settings) as ledger:
        result = ingest_roots(ledger, settings, [("pi", src)])
    report = result.model_dump_json()
    assert result.errors and result.conversations_new == 1, report
    for secret in ("W1nt3rPw", DOCKER, "T0ps3cretX9", "R3disPw9xQ"):
        assert secret not in report and secret not in _ledger_text(home)


def test_capture_logs_the_shape_of_a_rejected_payload_never_its_text(home: Path) -> None:
    from memvault.ops.capture import capture

    payloads = [json.dumps({"session_id": f"s {MYSQL}", "note": f"token {DOCKER}"}),  # no transcript_path
                f"not json: {MYSQL} \x1b]52;c;aGk=\x07",
                json.dumps([REDIS_URL]),
                json.dumps({f"key {DOCKER}": 1})]
    for raw in payloads:
        assert capture(home, raw, spawn=False)["spooled"] is None
    log = (home / ".memvault" / spool.LIVE_LOG).read_text()
    assert log.count("capture:") == 4 and len(log.splitlines()) == 4, log
    for secret in ("T0ps3cretX9", DOCKER, "R3disPw9xQ", "\x1b", "\x07", "not json:"):
        assert secret not in log, log
    assert "a JSON object with keys 'session_id', 'note'" in log and "not JSON" in log


def test_live_log_lines_are_redacted_and_one_line_each(home: Path) -> None:
    spool.log_line(home / ".memvault", f"drain: cannot read /srv/{REDIS_URL}\nforged line \x1b[2J\x9b")
    [line] = (home / ".memvault" / spool.LIVE_LOG).read_text().splitlines()
    assert "R3disPw9xQ" not in line and "\\nforged line \\x1b[2J\\x9b" in line

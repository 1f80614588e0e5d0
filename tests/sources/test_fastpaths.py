"""The ingest speed-ups keep the rules: the orjson fast path, the bounded alias map, the
redaction gate and the per-subtree check of parser state."""

import json
import re
from pathlib import Path

import pytest

import memvault.sources.claude_code as claude_code
from memvault.hygiene.redact import DEFAULT_PATTERNS, TRIGGERS, _may_hold_secret, redact, redact_json
from memvault.sources import parse_file
from tests.test_redact import VECTORS


def _user(uuid: str, parent: str | None, text: str) -> str:
    return json.dumps({"type": "user", "sessionId": "S", "uuid": uuid, "parentUuid": parent, "cwd": "/w",
                       "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": text}}) + "\n"


def test_lines_orjson_refuses_are_read_as_the_stdlib_reads_them(tmp_path: Path) -> None:
    # A lone surrogate (JavaScript writes them), NaN and a 70-digit number: orjson refuses all
    # three, the stdlib accepts them, and so must the parser (they are not errors).
    path = tmp_path / "s.jsonl"
    lines = [_user("u1", None, "first"),
             '{"type": "user", "sessionId": "S", "uuid": "u2", "parentUuid": "u1", "message": '
             '{"role": "user", "content": "half a pair \\ud83d here"}}\n',
             '{"type": "user", "sessionId": "S", "uuid": "u3", "parentUuid": "u2", "n": NaN, "big": '
             + "9" * 70 + ', "message": {"role": "user", "content": "third"}}\n',
             "not json at all\n"]
    path.write_text("".join(lines))
    result = parse_file(path, "claude-code")
    [conv] = result.conversations
    # The lone surrogate becomes U+FFFD: as it was, no UTF-8 store (DuckDB, Arrow) accepts it.
    assert [m.text for m in conv.messages] == ["first", "half a pair \ufffd here", "third"]
    assert [(e.line, e.error.startswith("not valid JSON")) for e in result.errors] == [(4, True)]


def test_alias_map_stays_bounded_and_recent_branches_still_connect(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claude_code, "ALIAS_LIMIT", 8)
    lines, parent = [], None
    for n in range(60):  # each user line is followed by a progress line children point at
        lines.append(_user(f"u{n}", parent, f"message {n}"))
        lines.append(json.dumps({"type": "progress", "uuid": f"p{n}", "parentUuid": f"u{n}"}) + "\n")
        parent = f"p{n}"
    path = tmp_path / "long.jsonl"
    path.write_text("".join(lines))
    result = parse_file(path, "claude-code")
    aliases = result.state["handler"]["aliases"]
    assert len(aliases) <= 8 * 5 // 4 and "p59" in aliases and "p0" not in aliases
    [conv] = result.conversations
    # Every message still hangs off the previous one through the (recent) alias.
    assert [m.parent_native_id for m in conv.messages[1:]] == [f"u{n}" for n in range(59)]


def test_redaction_gate_never_hides_a_match() -> None:
    # Whenever a built-in pattern matches (in any casing it accepts), the cheap gate must pass.
    from tests.secret_corpus import FORMS

    for text in [v[1] for v in VECTORS] + [f.text for f in FORMS]:
        for variant in (text, text.upper(), text.lower(), text.swapcase()):
            if any(re.search(p, variant) for p in DEFAULT_PATTERNS.values()):
                assert _may_hold_secret(variant), variant
    assert set(TRIGGERS) == set(DEFAULT_PATTERNS)
    assert not _may_hold_secret("plain words about backups and restic snapshots")


def test_redact_json_finds_secrets_under_keys_named_like_triggers() -> None:
    state = {"merge": {"msg_1": {"key": "", "msg": {"text": "password=hunter22 ok"}}},
             "aliases": {f"u{i}": f"u{i}#1" for i in range(1000)}, "times": {"": ("a", "b")}}
    out, counts = redact_json(state)
    assert out["merge"]["msg_1"]["msg"]["text"] == redact("password=hunter22 ok")[0]
    assert counts == {"assignment": 1}
    assert out["aliases"] == state["aliases"] and json.loads(json.dumps(out["times"])) == {"": ["a", "b"]}
    clean, none = redact_json({"merge": {"m": {"key": "", "msg": {"text": "nothing here"}}}})
    assert none == {} and clean["merge"]["m"]["msg"]["text"] == "nothing here"

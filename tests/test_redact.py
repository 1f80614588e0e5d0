"""Redaction: each kind on a realistic vector, context kept, and idempotence."""

import pytest

from memvault.errors import ConfigError
from memvault.models import Conversation, Message
from memvault.models import redact_conversation
from memvault.hygiene.redact import DEFAULT_PATTERNS, redact

ANTHROPIC = "sk-ant-api03-" + "Ab3_x-Yz9Q" * 8 + "kLmN0pQrStUvWxY" + "AA"
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA7vJ3x0b1Lr9N1uQ2hJ0bQe6yZ3kqU5m8x0F4p1sXn3m2a9cd\n"
    "qL0y7D3n8Q2vZ6kW1r5tY9uI0oP3aS4dF6gH8jK0lZ2xC4vB6nM8qW0eR2tY4uI6\n"
    "-----END RSA PRIVATE KEY-----"
)
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"

VECTORS = [
    ("aws_access_key_id", "key AKIAQ3EGRTW5ZX7NB2KD here", "key [REDACTED:aws_access_key_id] here"),
    ("aws_access_key_id", "ASIAQ3EGRTW5ZX7NB2KD", "[REDACTED:aws_access_key_id]"),
    ("aws_secret_access_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
     "aws_secret_access_key = [REDACTED:aws_secret_access_key]"),
    ("anthropic_api_key", f"export ANTHROPIC_API_KEY={ANTHROPIC}", "export ANTHROPIC_API_KEY=[REDACTED:anthropic_api_key]"),
    ("openai_api_key", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 ok", "[REDACTED:openai_api_key] ok"),
    ("openai_api_key", "sk-abcdefghijklmnopqrst1234567890", "[REDACTED:openai_api_key]"),
    ("github_token", "token ghp_" + "a1B2c3D4e5F6" * 3, "token [REDACTED:github_token]"),
    ("github_token", "gho_" + "Z" * 36, "[REDACTED:github_token]"),
    ("github_token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[REDACTED:github_token]"),
    ("gitlab_token", "glpat-abcdefghij1234567890", "[REDACTED:gitlab_token]"),
    ("slack_token", "xoxb-1234567890-abcdefghij", "[REDACTED:slack_token]"),
    ("private_key", f"key:\n{PRIVATE_KEY}\nafter", "key:\n[REDACTED:private_key]\nafter"),
    ("url_password", "postgres://admin:s3cretpw@db:5432/app", "postgres://admin:[REDACTED:url_password]@db:5432/app"),
    ("assignment", "password=hunter22 and more", "password=[REDACTED:assignment] and more"),
    ("assignment", '{"password": "s3cr3t!", "user": "bob"}', '{"password": "[REDACTED:assignment]", "user": "bob"}'),
    ("assignment", "DB_PASSWORD: hunter22", "DB_PASSWORD: [REDACTED:assignment]"),
    ("assignment", "api_key='abcd1234efgh'", "api_key='[REDACTED:assignment]'"),
    ("jwt", f"Cookie: session={JWT}", "Cookie: session=[REDACTED:jwt]"),
]


@pytest.mark.parametrize(("kind", "text", "expected"), VECTORS)
def test_each_kind(kind: str, text: str, expected: str) -> None:
    redacted, counts = redact(text)
    assert redacted == expected
    assert counts == {kind: 1}
    again, counts_again = redact(redacted)
    assert (again, counts_again) == (redacted, {})  # idempotent


def test_every_default_kind_has_a_vector() -> None:
    from tests.secret_corpus import FORMS  # the other kinds' vectors

    assert {k for k, _, _ in VECTORS} | {f.kind for f in FORMS} | {"bearer_token"} == set(DEFAULT_PATTERNS)


def test_leaves_ordinary_text_alone() -> None:
    text = "the token: is missing; set max_tokens=4096; use sk-learn-compatible-estimators; task-1234567890abcdefghij"
    assert redact(text) == (text, {})


def test_truncated_private_key_redacts_to_end() -> None:
    redacted, counts = redact("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA")
    assert redacted == "[REDACTED:private_key]" and counts == {"private_key": 1}


def test_extra_patterns_and_bad_pattern() -> None:
    text, counts = redact("ticket ACME-SECRET-42 and ACME-SECRET-7", {"acme": r"ACME-SECRET-\d+"})
    assert text == "ticket [REDACTED:acme] and [REDACTED:acme]" and counts == {"acme": 2}
    assert redact(text, {"acme": r"ACME-SECRET-\d+"}) == (text, {})
    with pytest.raises(ValueError, match="broken"):
        redact("x", {"broken": "("})


def test_a_bad_pattern_in_the_settings_is_named_when_they_load(tmp_path) -> None:
    from memvault.config.settings import load_settings

    with pytest.raises(ConfigError, match="broken.*not a valid regular expression"):
        load_settings(tmp_path, ingest={"redact_patterns": {"broken": "("}})
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        load_settings(tmp_path, ingest={"low_value_patterns": ["(ok"]})


def test_redact_conversation_counts_title_and_messages() -> None:
    conv = Conversation(source="codex", native_id="s", title="deploy with AKIAQ3EGRTW5ZX7NB2KD", messages=[
        Message(native_id="1", role="user", text="password=hunter22"),
        Message(native_id="2", role="assistant", text="nothing secret"),
    ])
    out, counts = redact_conversation(conv)
    assert counts == {"aws_access_key_id": 1, "assignment": 1}
    assert out.title == "deploy with [REDACTED:aws_access_key_id]"
    assert [m.text for m in out.messages] == ["password=[REDACTED:assignment]", "nothing secret"]
    assert conv.messages[0].text == "password=hunter22"  # the input is not modified

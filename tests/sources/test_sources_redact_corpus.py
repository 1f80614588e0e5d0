"""Every planted secret form is redacted with its kind, in plain and in JSON-escaped text, and
the short forms of text the parsers keep (clipped tool arguments, output and titles) never hold
a cut piece of one."""

import json

import pytest

from memvault.hygiene.redact import DEFAULT_PATTERNS, redact
from memvault.sources.base import ARG_SUMMARY_CHARS, RESULT_CHARS, TITLE_CHARS, clip, first_lines, summarize_args
from tests.secret_corpus import FORMS, Form


def test_the_corpus_covers_every_built_in_kind() -> None:
    assert {f.kind for f in FORMS} | {"bearer_token"} >= set(DEFAULT_PATTERNS)
    assert len(FORMS) >= 30


@pytest.mark.parametrize("form", FORMS, ids=[f"{f.kind}-{i}" for i, f in enumerate(FORMS)])
def test_each_form_is_redacted_with_its_kind(form: Form) -> None:
    out, counts = redact(form.text)
    assert form.needle not in out, out
    assert form.kind in counts, counts
    assert redact(out) == (out, {})  # idempotent


@pytest.mark.parametrize("form", FORMS, ids=[f"{f.kind}-{i}" for i, f in enumerate(FORMS)])
def test_each_form_is_redacted_inside_json_and_json_in_json(form: Form) -> None:
    once = json.dumps({"note": form.text})
    twice = json.dumps({"payload": once})
    for text in (once, twice):
        out, _ = redact(text)
        escaped_needle = json.dumps(form.needle)[1:-1]
        assert form.needle not in out and escaped_needle not in out, out


@pytest.mark.parametrize("form", FORMS, ids=[f"{f.kind}-{i}" for i, f in enumerate(FORMS)])
def test_a_clip_never_cuts_a_secret_in_two(form: Form) -> None:
    # Wherever the limit falls (the secret straddling it included), what is kept, redacted
    # again as ingest does, holds no piece of the secret longer than a few characters.
    for pad in range(0, 220, 7):
        text = "x " * pad + form.text + " and then more words"
        for kept in (clip(text, ARG_SUMMARY_CHARS), clip(text, TITLE_CHARS), first_lines(text),
                     summarize_args({"command": text}), clip(text, RESULT_CHARS)):
            assert not _piece_of(form.needle, redact(kept)[0]), (pad, kept)


def _piece_of(needle: str, text: str) -> bool:
    """True when ``text`` holds 8 or more consecutive characters of ``needle``."""
    size = min(8, len(needle))
    return any(needle[i:i + size] in text for i in range(len(needle) - size + 1))


def test_ordinary_text_is_left_alone() -> None:
    text = ("the token: is missing; set max_tokens=4096; use sk-learn-compatible-estimators; "
            "task-1234567890abcdefghij; tokenizer = bert-base-uncased; signing_key_id: 7f3a9c2e; "
            "see https://example.com:8080/docs/page and git commit 3f2a9c1b7e; the session token expired; ask the task desk")
    assert redact(text) == (text, {})


def test_the_gate_and_the_trigger_scan_let_every_form_through() -> None:
    from memvault.hygiene.redact import _may_hold_secret, _rules_present
    from memvault.hygiene.redact_rules import TRIGGERS

    assert set(TRIGGERS) == set(DEFAULT_PATTERNS)
    for form in FORMS:
        for variant in (form.text, json.dumps(form.text), form.text.upper(), form.text.lower()):
            assert _may_hold_secret(variant), variant
        assert form.kind in _rules_present(form.text.lower()), form

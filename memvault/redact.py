"""Secret redaction applied to transcripts before anything is stored or sent to a model.

Each pattern replaces its match (or only its ``secret`` named group, so context such as a
URL's scheme/user/host stays readable) with ``[REDACTED:<kind>]``. Redaction is idempotent:
a placeholder never matches again, so re-ingesting a file changes nothing and counts nothing.
Order matters: specific kinds (private keys, JWTs, vendor keys) run before the generic
``password=…`` assignment rule, so a token gets its precise kind.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from memvault.errors import ConfigError
from memvault.models import Conversation

PLACEHOLDER = "[REDACTED:{kind}]"
# A value that is already a placeholder is left alone (idempotence).
_NOT_DONE = r"(?!\[REDACTED:)"

DEFAULT_PATTERNS: dict[str, str] = {
    # BEGIN … END; a block cut off before its END line is redacted to the end of the text.
    "private_key": r"(?s)-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY-----|.*)",
    "jwt": r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{10,}",
    "aws_access_key_id": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    "aws_secret_access_key": (
        r"(?i)aws_?secret(?:_?access)?_?key\b[\"']?\s*[:=]\s*[\"']?"
        + _NOT_DONE
        + r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
    ),
    "anthropic_api_key": r"\bsk-ant-[a-z0-9]+-[A-Za-z0-9_-]{20,}",
    # real keys always hold a digit; this spares slugs like sk-learn-compatible-estimators
    "openai_api_key": r"\bsk-(?!ant-)(?=[A-Za-z_-]*\d)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
    "github_token": r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    "gitlab_token": r"\bglpat-[A-Za-z0-9_-]{20,}",
    "slack_token": r"\bxox[abpors]-[A-Za-z0-9-]{10,}",
    "bearer_token": r"(?i)\bbearer\s+" + _NOT_DONE + r"(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
    # scheme://user:pass@host → only pass goes
    "url_password": r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:" + _NOT_DONE + r"(?P<secret>[^\s@/]+)(?=@)",
    # password=…, DB_PASSWORD: …, "api_key": "…" — the value only; all-digit values are
    # usually settings (max_token=4096), not secrets.
    "assignment": (
        r"(?im)(?:\b[A-Za-z0-9_]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|credentials?)\b[\"']?\s*(?:=|:(?=\s*[\"'])|(?<=[\"']):)"
        r"|^\s*[A-Za-z0-9_]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|credentials?)\s*:)"
        r"\s*[\"']?" + _NOT_DONE + r"(?!\d+\b)(?P<secret>[^\s\"',;&]{4,})"
    ),
}


# Lower-case fragments at least one of which every match of a built-in pattern contains. A
# text holding none of them skips that regex: most messages hold no secret, and a substring
# test is far cheaper than a regex scan (the `assignment` rule alone would cost 1 s per MB).
# User patterns have no triggers and always run.
TRIGGERS: dict[str, tuple[str, ...]] = {
    "private_key": ("-----begin",),
    "jwt": ("eyj",),
    "aws_access_key_id": ("akia", "asia"),
    "aws_secret_access_key": ("secret",),
    "anthropic_api_key": ("sk-ant-",),
    "openai_api_key": ("sk-",),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab_token": ("glpat-",),
    "slack_token": ("xox",),
    "bearer_token": ("bearer",),
    "url_password": ("://",),
    "assignment": ("password", "passwd", "secret", "token", "apikey", "api_key", "api-key", "accesskey",
                   "access_key", "access-key", "credential"),
}


_ALL_TRIGGERS = tuple(sorted({t for ts in TRIGGERS.values() for t in ts}))
# The same gate in fewer scans, for the common case of text holding no trigger at all: the
# case-sensitive patterns' fragments looked for as written (no lower-casing needed), and
# short fragments shared by several case-insensitive triggers ("key" for api_key, apikey…).
_EXACT_GATE = ("-----BEGIN", "eyJ", "AKIA", "ASIA", "sk-", "gh", "glpat-", "xox", "://")
_FOLDED_GATE = ("secret", "bearer", "pass", "token", "key", "credential")


def _may_hold_secret(text: str) -> bool:
    """False only when no built-in pattern can match ``text`` (every trigger is absent)."""
    return any(map(text.__contains__, _EXACT_GATE)) or any(map(text.lower().__contains__, _FOLDED_GATE))


@lru_cache(maxsize=128)
def _compile(name: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(
            f"redaction pattern {name!r} is not a valid regular expression ({exc}); fix it in memvault.toml"
        ) from exc


def redact(text: str, extra_patterns: dict[str, str] | None = None) -> tuple[str, dict[str, int]]:
    """Replace secrets in ``text``; return the new text and how many of each kind were found."""
    counts: dict[str, int] = {}
    if not extra_patterns and not _may_hold_secret(text):
        return text, counts  # the common case: nothing that could start a secret
    lowered = text.lower()
    for name, pattern in {**DEFAULT_PATTERNS, **(extra_patterns or {})}.items():
        triggers = TRIGGERS.get(name) if pattern == DEFAULT_PATTERNS.get(name) else None
        if triggers is not None and not any(map(lowered.__contains__, triggers)):
            continue
        compiled = _compile(name, pattern)
        placeholder = PLACEHOLDER.format(kind=name)
        found = 0

        def replace(match: re.Match[str]) -> str:
            nonlocal found
            whole = match.group(0)
            if placeholder in whole and "secret" not in match.re.groupindex:
                return whole  # a user pattern that also matches its own placeholder
            found += 1
            if "secret" in match.re.groupindex and match.group("secret") is not None:
                start, end = match.span("secret")
                offset = match.start()
                return whole[: start - offset] + placeholder + whole[end - offset :]
            return placeholder

        text = compiled.sub(replace, text)
        if found:
            counts[name] = counts.get(name, 0) + found
    return text, counts


def redact_conversation(
    conv: Conversation, extra_patterns: dict[str, str] | None = None
) -> tuple[Conversation, dict[str, int]]:
    """A copy of ``conv`` with its title and every message redacted, and the total counts."""
    totals: dict[str, int] = {}

    def add(counts: dict[str, int]) -> None:
        for kind, n in counts.items():
            totals[kind] = totals.get(kind, 0) + n

    title, counts = redact(conv.title, extra_patterns)
    add(counts)
    messages = []
    for message in conv.messages:
        text, counts = redact(message.text, extra_patterns)
        if counts:
            add(counts)
            message = message.model_copy(update={"text": text})
        # else the message is shared with ``conv``: nothing in it changed, and copying every
        # message of every ingested conversation cost more than finding the secrets.
        messages.append(message)
    return conv.model_copy(update={"title": title, "messages": messages}), totals


def redact_json(value: Any, extra_patterns: dict[str, str] | None = None) -> tuple[Any, dict[str, int]]:
    """``value`` (parsed JSON: dicts, lists, strings, numbers) with every string redacted.

    Keys are kept as they are (ids, not prose); used for parser state and JSON columns, where
    redacting the serialized text could cut through quotes and break the document.
    """
    totals: dict[str, int] = {}

    def clean(values: list[Any]) -> bool:
        # Parser state is mostly maps of ids: one look at a map's serialized values (keys left
        # out, so a key named "key" proves nothing) settles thousands of strings at once.
        return not extra_patterns and not any(isinstance(v, (dict, list, tuple)) for v in values) \
            and not _may_hold_secret(json.dumps(values, ensure_ascii=False))

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            text, counts = redact(node, extra_patterns)
            for kind, n in counts.items():
                totals[kind] = totals.get(kind, 0) + n
            return text
        if isinstance(node, dict):
            values = list(node.values())
            return node if clean(values) else {k: walk(v) for k, v in zip(node, values)}
        if isinstance(node, (list, tuple)):
            return node if clean(list(node)) else [walk(v) for v in node]
        return node

    return walk(value), totals

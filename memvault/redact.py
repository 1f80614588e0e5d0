"""Secret redaction applied to transcripts before anything is stored or sent to a model.

Each pattern replaces its match (or only its ``secret`` named group, so context such as a
URL's scheme/user/host stays readable) with ``[REDACTED:<kind>]``. Redaction is idempotent:
a placeholder never matches again, so re-ingesting a file changes nothing and counts nothing.
Order matters: specific kinds (private keys, JWTs, vendor keys) run before the generic
``password=…`` assignment rule, so a token gets its precise kind.
"""

from __future__ import annotations

import re
from functools import lru_cache

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
    for name, pattern in {**DEFAULT_PATTERNS, **(extra_patterns or {})}.items():
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
        add(counts)
        messages.append(message.model_copy(update={"text": text}))
    return conv.model_copy(update={"title": title, "messages": messages}), totals

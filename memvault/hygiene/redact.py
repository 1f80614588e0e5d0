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

from memvault.hygiene.redact_rules import (
    ALWAYS, DEFAULT_PATTERNS, FILTERS, GATE_ESCAPED, GATE_FRAGMENTS, GATE_UNICODE, IMPLIED, LONG_RUN, RULES_BY_TRIGGER,
    TRIGGER_SCAN, TRIGGERS,
)

__all__ = ["DEFAULT_PATTERNS", "PLACEHOLDER", "TRIGGERS", "redact", "redact_json"]

PLACEHOLDER = "[REDACTED:{kind}]"

# Secrets inside a text can only be found whole: callers that shorten text (tool output, titles)
# redact a window this much longer than what they keep, then cut, so no secret is cut in two.
WINDOW_MARGIN = 2048


def _may_hold_secret(text: str) -> bool:
    """False only when no built-in pattern can match ``text``."""
    if max(map(len, text.split()), default=0) >= LONG_RUN:
        return True
    lowered = text.lower()
    if any(map(lowered.__contains__, GATE_FRAGMENTS)):
        return True
    if not text.isascii() and any(map(lowered.__contains__, GATE_UNICODE)):
        return True
    return "\\u" in lowered and any(map(lowered.__contains__, GATE_ESCAPED))


def _rules_present(lowered: str) -> set[str]:
    """Names of the built-in rules at least one of whose triggers ``lowered`` holds."""
    found = {t for s in TRIGGER_SCAN.findall(lowered) for t in IMPLIED[s]}
    return {name for t in found for name in RULES_BY_TRIGGER[t]} | ALWAYS


@lru_cache(maxsize=128)
def _compile(name: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        # memvault.toml's patterns are checked when the settings load (a ConfigError there); this
        # names a bad one passed in directly.
        raise ValueError(f"redaction pattern {name!r} is not a valid regular expression ({exc})") from exc


def redact(text: str, extra_patterns: dict[str, str] | None = None) -> tuple[str, dict[str, int]]:
    """Replace secrets in ``text``; return the new text and how many of each kind were found."""
    counts: dict[str, int] = {}
    if not extra_patterns and not _may_hold_secret(text):
        return text, counts  # the common case: nothing that could start a secret
    present = _rules_present(text.lower())
    for name, pattern in {**DEFAULT_PATTERNS, **(extra_patterns or {})}.items():
        builtin = pattern == DEFAULT_PATTERNS.get(name)
        if builtin and name not in present:
            continue
        keep = FILTERS.get(name) if builtin else None
        compiled = _compile(name, pattern)
        placeholder = PLACEHOLDER.format(kind=name)
        found = 0

        def replace(match: re.Match[str]) -> str:
            nonlocal found
            whole = match.group(0)
            if placeholder in whole and "secret" not in match.re.groupindex:
                return whole  # a user pattern that also matches its own placeholder
            has_secret = "secret" in match.re.groupindex and match.group("secret") is not None
            if keep is not None and not keep(match.group("secret") if has_secret else whole):
                return whole  # e.g. a low-entropy value next to a key-like name: not a secret
            found += 1
            if has_secret:
                start, end = match.span("secret")
                offset = match.start()
                return whole[: start - offset] + placeholder + whole[end - offset :]
            return placeholder

        text = compiled.sub(replace, text)
        if found:
            counts[name] = counts.get(name, 0) + found
    return text, counts


def redact_message(text: str) -> str:
    """``text`` (an error or log message that may echo an input value) with the built-in rules applied."""
    return redact(text)[0]


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

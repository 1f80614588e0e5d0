"""Meta/Topics_to_Ignore.md: topics the user wants kept out of synthesis and recall.

The page lists one topic per top-level bullet, optionally followed by a colon and a
clarification (``- Salary negotiations: anything about my pay``). Only the phrase before the
colon is matched, case-insensitively, as whole words, against a conversation's title and the
text of its messages; text inside HTML comments is ignored. Matching conversations are still
ingested (the ledger keeps everything) but flagged ``ignored``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from markdown_it import MarkdownIt

TOPICS_PAGE = Path("Meta") / "Topics_to_Ignore.md"


def parse_topics(text: str) -> list[str]:
    """The topic phrases of the page, in order, without duplicates (case-insensitive)."""
    tokens = MarkdownIt("commonmark").parse(text)
    topics: list[str] = []
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.type == "bullet_list_open":
            depth += 1
        elif tok.type == "bullet_list_close":
            depth -= 1
        elif tok.type == "inline" and depth == 1 and tokens[i - 1].type == "paragraph_open" \
                and tokens[i - 2].type == "list_item_open":
            # Plain text of the item: emphasis and code markup are not what people write.
            plain = "".join(c.content for c in tok.children or [] if c.type in ("text", "code_inline", "softbreak"))
            phrase = " ".join(plain.split(":", 1)[0].split())
            if phrase and phrase.lower() not in {t.lower() for t in topics}:
                topics.append(phrase)
    return topics


def topics_pattern(topics: list[str]) -> str | None:
    """One case-insensitive regex (valid in Python and DuckDB's RE2) matching any topic."""
    if not topics:
        return None
    alternatives = "|".join(r"\s+".join(re.escape(word) for word in t.split()) for t in topics)
    # Whole words: a non-word character or the text's edge on both sides (no lookbehind in RE2).
    return rf"(?is)(?:^|\W)(?:{alternatives})(?:\W|$)"


def load_topics(home: Path) -> list[str]:
    """Topics listed in the home's Meta/Topics_to_Ignore.md; none when the page is missing."""
    path = home / TOPICS_PAGE
    try:
        return parse_topics(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []


def topics_fingerprint(topics: list[str]) -> str:
    """Changes whenever the list does, so a changed list re-judges every conversation."""
    return hashlib.sha256("\n".join(t.lower() for t in topics).encode()).hexdigest()

"""Conversation pages: the passages articles cite, in the vault, so a citation opens them.

A citation in an article is a wikilink Obsidian follows, `[[Conversations/conv-1a2b3c4d#m12|conv:1a2b3c4d]]`,
to a heading of `Conversations/conv-1a2b3c4d.md`. That page holds only the cited chunks of the
conversation (not the whole transcript), as stored in the ledger — redacted at ingest, agent
noise left out — one section per chunk headed `m<seq>` (the sequence number of its first
message), each message in a fenced block as written. A fence shows the text verbatim and lets
nothing in it act as Markdown: no HTML, no embeds, no links come from a transcript (#26 §5).

Why pages and not the web page's URL: the vault must work with nothing running (Obsidian on
a laptop, a git clone on another machine); a heading link is followed offline, shows in the
graph and in backlinks, and `memvault forget --conversation` deletes the page with the rest.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memvault.markdown.verbatim import escape

FOLDER = "Conversations"
_SECTION = re.compile(r"^## (m\d+)\s*$", re.M)


@dataclass(frozen=True)
class PageMessage:
    """One message shown on a conversation page."""

    seq: int
    role: str
    text: str
    timestamp: datetime | None


def page_stem(short: str) -> str:
    """The file stem of a conversation's page: `conv-<short id>`."""
    return f"conv-{short}"


def anchor(seq: int) -> str:
    """The heading a citation of a chunk starting at message ``seq`` opens."""
    return f"m{seq}"


def citation_link(short: str, seq: int | None) -> str:
    """The wikilink of a citation; its display text is the conversation's `conv:` id, which is
    what the gate, forget and prune read."""
    target = f"{FOLDER}/{page_stem(short)}" + (f"#{anchor(seq)}" if seq is not None else "")
    return f"[[{target}|conv:{short}]]"


def _fence(text: str) -> str:
    ticks = max((len(m.group()) for m in re.finditer(r"`+", text)), default=0)
    fence = "`" * max(3, ticks + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def _section(messages: list[PageMessage]) -> str:
    out = [f"## {anchor(messages[0].seq)}", ""]
    for m in messages:
        when = m.timestamp.strftime("%Y-%m-%d %H:%M") if m.timestamp else "undated"
        out += [f"**{m.role}** · {when}", "", _fence(m.text), ""]
    return "\n".join(out)


def sections_of(page: str | None) -> dict[str, str]:
    """A page's sections by anchor (`m12` → its text, heading included)."""
    if not page:
        return {}
    starts = list(_SECTION.finditer(page))
    return {m.group(1): page[m.start(): starts[i + 1].start() if i + 1 < len(starts) else len(page)].rstrip() + "\n"
            for i, m in enumerate(starts)}


def render_page(previous: str | None, title: str, source: str, date: str,
                chunks: Iterable[list[PageMessage]]) -> str:
    """The page with ``chunks`` (each a cited chunk's messages) added to those already on it,
    in conversation order. Deterministic: the same chunks give the same page."""
    sections = sections_of(previous)
    for messages in chunks:
        if messages:
            sections[anchor(messages[0].seq)] = _section(messages)
    head = (f"# {escape(' '.join(title.split()) or 'Untitled conversation')}\n\n"
            f"Passages of a {escape(source)} conversation of {date} that articles cite, as memvault stored "
            f"them (redacted; agent noise left out). Written by memvault: edits are overwritten.\n")
    body = "\n".join(sections[k] for k in sorted(sections, key=lambda k: int(k[1:])))
    return head + "\n" + body

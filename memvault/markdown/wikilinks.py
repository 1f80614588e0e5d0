"""Wikilinks: find them, and rewrite every spelling to the canonical `[[Topic_Name]]`.

Obsidian resolves `[[X]]` by file stem, so the canonical form names the stem. A spelling
that differs only by case, spaces or underscores becomes `[[Topic_Name]]`; an alias keeps
what the reader saw as display text (`[[Topic_Name|Alias]]`); an explicit display text is
always kept. Links to unknown pages are left alone and reported as dangling. Code blocks
and code spans are never touched; rewriting is idempotent.
"""

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from memvault.markdown import frontmatter
from memvault.markdown.conversation_page import FOLDER
from memvault.markdown.scan import Doc, code_spans, outside_code

# `[[page#anchor|display]]`, optionally an embed `![[…]]`; `\|` is the table-cell escape.
LINK_RE = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_SPLIT_RE = re.compile(r"\\?\|")


@dataclass(frozen=True)
class Link:
    """One wikilink occurrence: body line (0-based), column span and its parts."""

    line: int
    start: int
    end: int
    embed: str  # "!" or ""
    page: str
    anchor: str  # "#Heading" / "#^block" or ""
    sep: str  # "|" or "\\|" (inside tables) or ""
    display: str | None


def link_key(name: str) -> str:
    """The spelling-insensitive key of a page name: NFC, casefolded, `_` ≡ space, no `.md`."""
    text = unicodedata.normalize("NFC", name).strip()
    if text.lower().endswith(".md"):
        text = text[:-3]
    return " ".join(text.replace("_", " ").split()).casefold()


def _parse(inner: str) -> tuple[str, str, str, str | None]:
    """Split a link's inner text into page, anchor, separator and display."""
    sep_match = _SPLIT_RE.search(inner)
    target, sep, display = (inner, "", None)
    if sep_match:
        target, sep, display = inner[: sep_match.start()], sep_match.group(0), inner[sep_match.end() :]
    page, hash_, anchor = target.partition("#")
    return page.strip(), (hash_ + anchor).strip(), sep, display


def iter_links(doc: Doc) -> list[Link]:
    """Every wikilink outside code in a parsed document, in order."""
    out = []
    for i, line in enumerate(doc.lines):
        if i in doc.code or "[[" not in line:
            continue
        spans = code_spans(line)
        for m in LINK_RE.finditer(line):
            if not outside_code(line, m.start(), spans):
                continue
            page, anchor, sep, display = _parse(m.group(2))
            if page:  # `[[#Heading]]` links within the page; nothing to resolve
                out.append(Link(i, m.start(), m.end(), m.group(1), page, anchor, sep, display))
    return out


def find_links(text: str) -> list[tuple[str, str | None, int]]:
    """Wikilinks outside code: (page target as written, display text or None, 1-based line)."""
    doc = Doc(text)
    return [(link.page, link.display, doc.source_line(link.line)) for link in iter_links(doc)]


def aliases_of(text: str) -> list[str]:
    """The `aliases:` of an article's YAML front matter (a list or one string); [] if none.

    Raises ValueError when the front matter is not valid YAML, so a broken hand edit is
    reported rather than silently ignored.
    """
    return frontmatter.aliases(text)


def build_known(stems: Iterable[str], aliases: Mapping[str, Iterable[str]] | None = None) -> dict[str, str]:
    """Map every spelling key to its canonical stem: stems first, then aliases (first wins)."""
    known: dict[str, str] = {}
    stems = list(stems)
    for stem in stems:
        known.setdefault(link_key(stem), stem)
    for stem, names in (aliases or {}).items():
        for name in names:
            known.setdefault(link_key(name), stem)
    return known


def _render(link: Link, canonical: str) -> str:
    if link.display is not None:
        return f"{link.embed}[[{canonical}{link.anchor}{link.sep}{link.display}]]"
    if link_key(link.page) == link_key(canonical):
        return f"{link.embed}[[{canonical}{link.anchor}]]"
    return f"{link.embed}[[{canonical}{link.anchor}|{link.page}]]"


CONVERSATIONS_FOLDER = FOLDER + "/"


def canonicalize(text: str, known: Mapping[str, str]) -> tuple[str, list[str]]:
    """Rewrite links to canonical stems; return the new text and the dangling targets."""
    doc = Doc(text)
    canonical_names = set(known.values())
    dangling: list[str] = []
    by_line: dict[int, list[Link]] = {}
    for link in iter_links(doc):
        by_line.setdefault(link.line, []).append(link)
    lines = list(doc.lines)
    for i, links in by_line.items():
        line = lines[i]
        for link in sorted(links, key=lambda x: x.start, reverse=True):
            canonical = link.page if link.page in canonical_names else known.get(link_key(link.page))
            if canonical is None:
                continue
            line = line[: link.start] + _render(link, canonical) + line[link.end :]
        lines[i] = line
    for link in iter_links(doc):
        if link.page.startswith(CONVERSATIONS_FOLDER):
            continue  # a citation's page of cited passages, not an article (lint checks it exists)
        if link.page not in canonical_names and link_key(link.page) not in known and link.page not in dangling:
            dangling.append(link.page)
    return doc.front + "\n".join(lines), dangling


def title_of(text: str) -> str | None:
    """The text of an article's first H1, or None."""
    return next((h.text for h in Doc(text).headings() if h.level == 1), None)


def known_from_texts(texts: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Spelling key → stem for a vault (stem → text): stems first, then H1 titles, then aliases.

    Returns the map and, per stem, why its front matter could not be read (its aliases are
    then ignored; lint reports it as bad-front-matter).
    """
    known = build_known(sorted(texts))
    broken: dict[str, str] = {}
    for stem in sorted(texts):
        title = title_of(texts[stem])
        if title:
            known.setdefault(link_key(title), stem)
    for stem in sorted(texts):
        try:
            names = aliases_of(texts[stem])
        except ValueError as exc:
            broken[stem] = str(exc)
            continue
        for name in names:
            known.setdefault(link_key(name), stem)
    return known, broken


SEE_ALSO = "see also"
_BULLET_LINK_RE = re.compile(r"^\s*[-*+]\s+(!?)\[\[([^\[\]\n]+?)\]\]\s*$")


def drop_dangling_see_also(text: str, known: Mapping[str, str]) -> tuple[str, list[str]]:
    """``text`` without the `## See also` bullets that link a page no article is (by stem, title
    or alias), and the targets removed. A bullet is only removed when it is that one link and
    nothing else; the heading goes too when nothing is left under it."""
    doc = Doc(text)
    heads = doc.headings()
    canonical = set(known.values())
    drop: set[int] = set()
    removed: list[str] = []
    for k, h in enumerate(heads):
        if h.level != 2 or h.text.rstrip(":").strip().casefold() != SEE_ALSO:
            continue
        end = next((n.start for n in heads[k + 1 :] if n.level <= 2), len(doc.lines))
        body = range(h.end, end)
        for i in body:
            m = _BULLET_LINK_RE.match(doc.lines[i]) if i not in doc.code else None
            if not m:
                continue
            page = _parse(m.group(2))[0]
            if page and page not in canonical and link_key(page) not in known:
                drop.add(i)
                removed.append(page)
        if all(i in drop or not doc.lines[i].strip() for i in body):
            drop.update(range(h.start, end))
    if not drop:
        return text, []
    out: list[str] = []
    for i, line in enumerate(doc.lines):
        if i in drop:
            continue
        # A blank line right after a removed run, with a blank line already before it, goes too.
        if not line.strip() and i - 1 in drop and out and not out[-1].strip():
            continue
        out.append(line)
    return doc.front + "\n".join(out), removed

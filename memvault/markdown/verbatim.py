"""Quoted transcript text that renders back to itself, byte for byte.

Extractive synthesis copies sentences out of conversations into an article. Those sentences
hold logs, ids, code and brackets (`pgbackrest[48211]: ERROR: [041]`), and Markdown would
read some of that as markup: `[^x]` as a footnote, `[[x]]` as a wikilink, `*x*` as emphasis,
`<x>` as HTML, `&amp;` as an entity, a leading `1.` or `-` as a list. Every ASCII character
that can open markup in CommonMark, GFM or Obsidian (`==highlight==`, `%%comment%%`, `$math$`)
is backslash-escaped, which every CommonMark renderer turns back into the character itself.
Intraword underscores stay as they are (`max_attempts` cannot open emphasis), so identifiers
stay readable in the raw file.

A code span of the transcript (`` `repo1-retention-full=14` ``) stays code: it is wrapped in a
wider code span whose content is the original span, backticks included, so it renders in
monospace and its text is still exactly the transcript's.
"""

import re

# Characters that may open or close inline markup, or whose pairs do (`[[`, `[^`, `==`, `%%`).
_ALWAYS = frozenset("\\`*[]<>&!|~=%$^{}")
# Characters that only matter at the start of a block: headings, quotes, list bullets.
_LEADING = frozenset("#>+-")
_ORDERED = re.compile(r"^(\d{1,9})([.)])")
_CODE = re.compile(r"(?<!`)`[^`\n]+`(?!`)")


def _escape_chars(text: str, at_start: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch in _ALWAYS or ch == "#":
            # `#tag` is a tag in Obsidian anywhere; at the start of a line, a heading.
            out.append("\\" + ch)
        elif ch == "_" and not (0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()):
            out.append("\\_")
        elif i == 0 and at_start and ch in _LEADING:
            out.append("\\" + ch)
        else:
            out.append(ch)
    escaped = "".join(out)
    ordered = _ORDERED.match(escaped) if at_start else None
    if ordered:
        # `1. text` or `1) text` opens an ordered list.
        escaped = ordered.group(1) + "\\" + ordered.group(2) + escaped[ordered.end():]
    return escaped


def escape(text: str) -> str:
    """``text`` as Markdown inline content whose rendered text is exactly ``text``.

    ``text`` is one line (a sentence); line breaks would start new blocks, so they are kept
    out by the caller. Leading and trailing spaces are not preserved by any renderer and must
    already be stripped.
    """
    out, last = [], 0
    for m in _CODE.finditer(text):
        out.append(_escape_chars(text[last:m.start()], at_start=last == 0))
        if m.start() and text[m.start() - 1] == "\\":
            # After a backslash a wrapped span would read as an escaped backtick to simple
            # scanners (memvault.markdown.scan): escape it like the rest instead.
            out.append(_escape_chars(m.group(), at_start=False))
        else:
            out.append("`` " + m.group() + " ``")
        last = m.end()
    out.append(_escape_chars(text[last:], at_start=last == 0))
    return "".join(out)

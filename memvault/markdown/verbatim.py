"""Quoted transcript text as written: escaped only where it would break the article or the vault.

Extractive synthesis copies sentences out of conversations into an article. Most of what an
assistant writes is Markdown already (`**bold**`, `` `code` ``, `[docs](https://…)`), and it
stays as written, so the article shows it as the conversation did. A backslash is added only
where the text would otherwise change the article's structure or make the vault unsafe
(issue #25 item 4, #26 §5):

* block markers at the start of the quote (`# `, `> `, `- `, `1. `) that would open a
  heading, quote or list in place of the paragraph;
* footnote references `[^x]` and inline footnotes `^[x]` (the article's citations) and wikilinks `[[x]]` (links to
  articles that do not exist), Obsidian comments `%%` (they hide the rest of the page) and
  `$math$` (prices such as "$5" stay as written);
* HTML (`<iframe>`, `<img>`, comments) and autolinks, entities (`&amp;`): no HTML from a
  transcript reaches the vault;
* embeds `![…](…)` and `![[…]]` (a remote image is a beacon when the page opens) and links whose
  target is not http(s) or file (`javascript:`, `data:`, `obsidian:`);
* a backslash before punctuation (kept by doubling it); a backtick, bracket or emphasis mark
  with no partner in the sentence (it would pair with one in the next sentence of the
  paragraph and swallow the text between); a trailing `]` (it would read the citation after it
  as a reference link).

Code spans of the transcript are left as written: their content renders verbatim anyway.
`needless_escapes` finds backslashes in an article that this function would not have added
(lint's `needless-escape`, bench/wiki_quality.py's "escapes not in source").
"""

import re

from memvault.markdown.scan import code_spans

_BLOCK_START = re.compile(r"^(?:#{1,6}(?=\s|$)|>|[-+*](?=\s|$)|~{3,}|`{3,}|\d{1,9}(?=[.)](?:\s|$))|=+\s*$|-{3,}\s*$)")
_LINK = re.compile(r"\[([^\[\]\n]*)\]\(\s*<?([^)\s>]*)")
_SAFE_TARGET = re.compile(r"(?:https?|file)://", re.IGNORECASE)
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _unsafe_link_starts(text: str) -> set[int]:
    """Positions of `[` opening a link whose target is not http(s) or file: a relative target
    opens a vault file, a `javascript:` or `data:` one runs or shows what a transcript chose."""
    return {m.start() for m in _LINK.finditer(text) if not _SAFE_TARGET.match(m.group(2))}


def _brackets(text: str) -> tuple[set[int], dict[int, int]]:
    """Positions of `[` and `]` with no partner in ``text`` (left alone, one would pair with a
    bracket of the next sentence and make a link of everything between), and the partners of
    the others, both ways."""
    stack: list[int] = []
    loose: set[int] = set()
    pairs: dict[int, int] = {}
    for i, ch in enumerate(text):
        if ch == "[":
            stack.append(i)
        elif ch == "]":
            if stack:
                j = stack.pop()
                pairs[i], pairs[j] = j, i
            else:
                loose.add(i)
    return loose | set(stack), pairs


def _escape_plain(text: str, at_start: bool, at_end: bool, after: str = "") -> str:
    """Escape one stretch of ``text`` that holds no code span (see the module docstring)."""
    loose, pairs = _brackets(text)
    unsafe = _unsafe_link_starts(text) | loose
    out = []
    n = len(text)
    for i, ch in enumerate(text):
        nxt = text[i + 1] if i + 1 < n else after  # ``after``: the code span's backtick that follows
        esc = False
        if ch == "\\":
            esc = nxt in _PUNCT or (at_end and i == n - 1)  # a last one would escape the citation
        elif ch == "<":
            esc = nxt.isalpha() or nxt in "/!?"
        elif ch == "&":
            esc = _ENTITY.match(text, i) is not None
        elif ch == "[":
            esc = nxt in "[^" or i in unsafe or (i > 0 and text[i - 1] in "[!")
        elif ch == "!":
            esc = nxt == "["
        elif ch == "^":
            esc = nxt == "[" or (at_end and i == n - 1)  # `^[…]` is an inline footnote
        elif ch == "%":
            esc = nxt == "%" or (i > 0 and text[i - 1] == "%")
        elif ch == "$":
            esc = bool(nxt) and not nxt.isspace() and not nxt.isdigit()
        elif ch == "`":
            esc = True  # only unpaired backticks reach here: pairs are code spans
        elif ch == "]":
            # A loose `]` pairs with nothing (a loose `[` before it is escaped by its own sentence).
            esc = (at_end and i == n - 1) or nxt == "]" or (i > 0 and text[i - 1] == "]")
        out.append("\\" + ch if esc else ch)
    # A bracket whose partner is shown as text must be too, or it pairs with another one.
    for i, ch in enumerate(text):
        if ch in "[]" and out[i].startswith("\\") and i in pairs and not out[pairs[i]].startswith("\\"):
            out[pairs[i]] = "\\" + out[pairs[i]]
    escaped = "".join(out)
    if at_start:
        m = _BLOCK_START.match(escaped)
        if m:
            # A digit run is kept, its `.`/`)` is escaped; any other marker is escaped itself.
            cut = m.end() if m.group().isdigit() else 0
            escaped = escaped[:cut] + "\\" + escaped[cut:]
    return escaped


def _pieces(text: str) -> list[tuple[bool, str]]:
    """``text`` as (is code span, piece) in order."""
    out, last = [], 0
    for start, end in code_spans(text):
        out.append((False, text[last:start]))
        out.append((True, text[start:end]))
        last = end
    out.append((False, text[last:]))
    return out


def escape(text: str) -> str:
    """``text`` (one line, trimmed) as inline Markdown that reads as the transcript wrote it,
    minus what would break the article or the vault (see the module docstring)."""
    pieces = _pieces(text)
    out = []
    for n, (code, piece) in enumerate(pieces):
        last = n == len(pieces) - 1
        out.append(piece if code else _escape_plain(piece, at_start=n == 0, at_end=last,
                                                    after="" if last else pieces[n + 1][1][:1]))
    escaped = "".join(out)
    # Emphasis left open here would pair with a mark in the next sentence of the paragraph:
    # that character is shown literally throughout this sentence instead. Showing one literally
    # can free another that it paired with (`*: _*`: the `_` opens once the `*`s are text), so
    # again until none is open (at most once per emphasis character).
    for _ in range(4):
        loose = _unpaired_delimiters(escaped)
        if not loose:
            break
        escaped = "".join(p if code else _escape_loose(p, loose) for code, p in _pieces(escaped))
    return escaped


def _escape_loose(piece: str, loose: set[str]) -> str:
    """Backslash every not yet escaped ``loose`` character of ``piece``, except an intraword
    underscore (`max_attempts` opens nothing)."""
    out = []
    for i, ch in enumerate(piece):
        escaped_already = (len(piece[:i]) - len(piece[:i].rstrip("\\"))) % 2 == 1  # `\\_` is a backslash, then `_`
        intraword = ch == "_" and 0 < i < len(piece) - 1 and piece[i - 1].isalnum() and piece[i + 1].isalnum()
        out.append("\\" + ch if ch in loose and not escaped_already and not intraword else ch)
    return "".join(out)


def _unpaired_delimiters(escaped: str) -> set[str]:
    """Emphasis characters (`*`, `_`, `~~`, `==`) that stay open in ``escaped`` once rendered:
    flanking ones markdown-it leaves as text, or an odd number of `~~`/`==` runs."""
    from markdown_it import MarkdownIt  # small, pure Python; only synthesis and lint quote text

    out: set[str] = set()
    tokens = MarkdownIt("commonmark").parseInline(escaped)
    literal = "".join(t.content for tok in tokens for t in (tok.children or []) if t.type == "text")
    for ch in "*_":
        for m in re.finditer(re.escape(ch) + "+", literal):
            before = literal[m.start() - 1] if m.start() else " "
            after = literal[m.end()] if m.end() < len(literal) else " "
            if before.isspace() and after.isspace():
                continue  # "2 * 3" opens nothing
            if ch == "_" and before.isalnum() and after.isalnum():
                continue  # max_attempts
            out.add(ch)
    plain = "".join(p for code, p in _pieces(escaped) if not code)
    for run, ch in (("~~", "~"), ("==", "=")):
        if len(re.findall(r"(?<!\\)" + re.escape(run) + "+", plain)) % 2:
            out.add(ch)
    return out


def unescape(text: str) -> str:
    """Backslash escapes of ASCII punctuation removed (what a renderer shows), code spans kept."""
    out, last = [], 0
    for start, end in code_spans(text):
        out.append(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text[last:start]))
        out.append(text[start:end])
        last = end
    out.append(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text[last:]))
    return "".join(out)


def needless_escapes(text: str) -> int:
    """How many backslash escapes ``text`` (one quoted line) holds that `escape` would not
    have written for the text it stands for: escapes the source did not have."""
    have = len(re.findall(r"\\[!-/:-@\[-`{-~]", text))
    want = len(re.findall(r"\\[!-/:-@\[-`{-~]", escape(unescape(text))))
    return max(0, have - want)

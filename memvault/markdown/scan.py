"""A line-level view of an article, built from markdown-it-py tokens with source line maps.

Every module in this package asks one question of it: which lines are code, which are
headings, which are footnote definitions, where do the top-level blocks start. Structure
comes from the tokens; regexes only ever look inside one line (markers, links, code spans).

markdown-it's core has no footnotes, so a small block rule (`footnote_def`) annotates
`[^label]: text` lines (plus indented continuation lines) as tokens, the way the
mdit-py-plugins rule does, instead of letting the core read them as link references.
"""

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # markdown-it loads on the first parse: a recall that reads no article never pays for it
    from markdown_it import MarkdownIt
    from markdown_it.rules_block import StateBlock
    from markdown_it.token import Token

# `[^label]:` at the start of a line (after the block indent); the label has no blanks or `]`.
DEF_RE = re.compile(r"\[\^([^\]\s]+)\]:[ \t]?")
FENCE_OPEN_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _footnote_def(state: "StateBlock", start_line: int, end_line: int, silent: bool) -> bool:
    """Block rule: a footnote definition and its indented continuation lines."""
    if state.sCount[start_line] - state.blkIndent >= 4:
        return False
    begin = state.bMarks[start_line] + state.tShift[start_line]
    line = state.src[begin : state.eMarks[start_line]]
    match = DEF_RE.match(line)
    if not match:
        return False
    if silent:
        return True
    last = start_line
    nxt = start_line + 1
    while nxt < end_line:
        if state.isEmpty(nxt):
            nxt += 1
            continue
        if state.sCount[nxt] - state.blkIndent >= 4:
            last = nxt
            nxt += 1
            continue
        break
    token = state.push("footnote_def", "", 0)
    token.map = [start_line, last + 1]
    token.meta = {"label": match.group(1)}
    token.content = line[match.end() :]
    state.line = last + 1
    return True


@lru_cache(maxsize=1)
def parser() -> "MarkdownIt":
    """The one markdown-it configuration used for articles (CommonMark + tables + footnotes)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.block.ruler.before("reference", "footnote_def", _footnote_def, {"alt": ["paragraph", "reference"]})
    return md


def normalize_newlines(text: str) -> str:
    """Unify line endings to ``\\n`` (markdown-it does the same before mapping lines)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_front_matter(text: str) -> tuple[str, str]:
    """Split ``---`` YAML front matter (delimiters included) from the body."""
    if not text.startswith("---\n"):
        return "", text
    lines = text.split("\n")
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            front = "\n".join(lines[: i + 1]) + "\n"
            return front, text[len(front) :] if len(front) <= len(text) else ""
    return "", text


@dataclass(frozen=True)
class Heading:
    """A top-level heading: level, first and past-the-end body line, inline text, ATX or setext."""

    level: int
    start: int
    end: int
    text: str
    setext: bool


@dataclass(frozen=True)
class FootnoteDef:
    """A footnote definition occupying body lines [start, end)."""

    label: str
    start: int
    end: int
    content: str  # first line's text after `[^label]: `, continuation lines appended


@dataclass(frozen=True)
class Block:
    """A top-level block: token type (paragraph, heading, fence, …) and its line range."""

    kind: str
    start: int
    end: int


class Doc:
    """A parsed article body; all line numbers are 0-based indexes into ``lines``.

    ``offset`` is the number of front-matter lines, so source line = index + offset + 1.
    """

    def __init__(self, text: str, front_matter: bool = True) -> None:
        """Parse ``text``; pass ``front_matter=False`` for a fragment (a leading ``---`` is a rule)."""
        self.text = normalize_newlines(text)
        self.front, self.body = split_front_matter(self.text) if front_matter else ("", self.text)
        self.offset = self.front.count("\n")
        self.lines = self.body.split("\n")
        self.tokens: list["Token"] = parser().parse(self.body)
        code: set[int] = set()
        for tok in self.tokens:
            if tok.type in ("fence", "code_block") and tok.map:
                code.update(range(tok.map[0], tok.map[1]))
        self.code = frozenset(code)

    def source_line(self, index: int) -> int:
        """1-based line number in the full text (front matter included)."""
        return index + self.offset + 1

    def blocks(self) -> list[Block]:
        """Top-level blocks in order (nesting level 0, opening or self-contained tokens)."""
        return [
            Block(tok.type.removesuffix("_open"), tok.map[0], tok.map[1])
            for tok in self.tokens
            if tok.level == 0 and tok.map and tok.nesting in (0, 1)
        ]

    def headings(self) -> list[Heading]:
        """Top-level headings (not inside lists, quotes or code)."""
        out = []
        for i, tok in enumerate(self.tokens):
            if tok.type == "heading_open" and tok.level == 0 and tok.map:
                inline = self.tokens[i + 1]
                # A setext heading's text may span lines; a heading's title is one line.
                text = " ".join(part.strip() for part in inline.content.splitlines()).strip()
                out.append(Heading(int(tok.tag[1]), tok.map[0], tok.map[1], text, tok.markup in ("=", "-")))
        return out

    def footnote_defs(self) -> list[FootnoteDef]:
        """Footnote definitions anywhere in the body, in order."""
        out = []
        for tok in self.tokens:
            if tok.type == "footnote_def" and tok.map:
                start, end = tok.map
                rest = [ln.strip() for ln in self.lines[start + 1 : end] if ln.strip()]
                content = " ".join([tok.content.strip(), *rest]).strip()
                out.append(FootnoteDef(tok.meta["label"], start, end, content))
        return out

    def unclosed_fences(self) -> list[int]:
        """Start lines of code fences that run to the end of the document unclosed."""
        out = []
        for tok in self.tokens:
            if tok.type != "fence" or not tok.map:
                continue
            start, end = tok.map
            last = self.lines[end - 1].strip().lstrip("> ").strip() if end - 1 > start else ""
            marker = tok.markup
            if not (last.startswith(marker) and set(last) == {marker[0]}):
                out.append(start)
        return out


def code_spans(line: str) -> list[tuple[int, int]]:
    """Character ranges of inline code spans within one line, as CommonMark reads them: a span
    opens at a maximal run of backticks that no backslash escapes and closes at the next run of
    the same length (backslashes inside do nothing); a run with no partner is text."""
    spans = []
    i, n = 0, len(line)
    while i < n:
        if line[i] == "\\" and i + 1 < n and line[i + 1] in _ASCII_PUNCT:
            i += 2  # an escaped character, a backtick included
            continue
        if line[i] != "`":
            i += 1
            continue
        j = _run_end(line, i)
        close, k = -1, j
        while k < n:
            if line[k] != "`":
                k += 1
                continue
            m = _run_end(line, k)
            if m - k == j - i:
                close = m
                break
            k = m
        if close < 0:
            i = j  # no partner: the run is text
        else:
            spans.append((i, close))
            i = close
    return spans


def _run_end(line: str, i: int) -> int:
    """Where the run of backticks starting at ``i`` ends."""
    while i < len(line) and line[i] == "`":
        i += 1
    return i


_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def outside_code(line: str, start: int, spans: list[tuple[int, int]]) -> bool:
    """Whether position ``start`` of ``line`` lies outside every code span and is not escaped."""
    if any(a <= start < b for a, b in spans):
        return False
    slashes = 0
    k = start - 1
    while k >= 0 and line[k] == "\\":
        slashes += 1
        k -= 1
    return slashes % 2 == 0


"""Articles as safe HTML for the web page: markdown-it-py with raw HTML off, plus three
inline forms the vault uses — footnote markers `[^3]`, wikilinks `[[Page|shown]]` and
citations (`[[Conversations/conv-1a2b3c4d#m12|conv:1a2b3c4d]]`, or `` `conv:1a2b3c4d` `` in older
articles) — rendered as links the page can follow.

Article text is partly model output built from untrusted conversations, so nothing in it
becomes markup: raw HTML is escaped (``html`` off), link targets go through markdown-it's
URL check (no ``javascript:``), and every attribute memvault writes itself is escaped.
"""

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, cast
from urllib.parse import quote

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from memvault.markdown.scan import DEF_RE, split_front_matter

CITATION_RE = re.compile(r"conv:([0-9a-f]{4,64})")
# A citation as the vault writes it: `[[Conversations/conv-1a2b3c4d#m12|conv:1a2b3c4d]]`.
CONVERSATION_PAGE_RE = re.compile(r"Conversations/conv-([0-9a-f]{4,64})")
_MARKER_RE = re.compile(r"\[\^([^\]\s]+)\]")
_WIKILINK_RE = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_SEP_RE = re.compile(r"\\?\|")  # `|`, or `\|` inside a table cell

# Resolves a wikilink's page to the stem of an existing article (None: no such article).
Resolver = Callable[[str], str | None]


def _footnote_def(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """Block rule: `[^label]: text` and its indented continuation lines, as one inline run."""
    if state.sCount[start] - state.blkIndent >= 4:
        return False
    begin = state.bMarks[start] + state.tShift[start]
    match = DEF_RE.match(state.src[begin: state.eMarks[start]])
    if not match:
        return False
    if silent:
        return True
    parts = [state.src[begin + match.end(): state.eMarks[start]]]
    nxt = start + 1
    while nxt < end and not state.isEmpty(nxt) and state.sCount[nxt] - state.blkIndent >= 4:
        parts.append(state.src[state.bMarks[nxt] + state.tShift[nxt]: state.eMarks[nxt]])
        nxt += 1
    open_ = state.push("footnote_open", "div", 1)
    open_.meta = {"label": match.group(1)}
    inline = state.push("inline", "", 0)
    inline.content, inline.map, inline.children = "\n".join(parts), [start, nxt], []
    state.push("footnote_close", "div", -1)
    state.line = nxt
    return True


def _inline_rule(pattern: re.Pattern[str], kind: str) -> Callable[[StateInline, bool], bool]:
    def rule(state: StateInline, silent: bool) -> bool:
        if state.src[state.pos] not in "[!":
            return False
        match = pattern.match(state.src, state.pos)
        if not match:
            return False
        if not silent:
            state.push(kind, "", 0).meta = {"inner": match.group(1)}
        state.pos = match.end()
        return True

    return rule


def _attr(value: str) -> str:
    return escapeHtml(value)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.block.ruler.before("reference", "footnote_def", _footnote_def, {"alt": ["paragraph", "reference"]})
    md.inline.ruler.before("link", "wikilink", _inline_rule(_WIKILINK_RE, "wikilink"))
    md.inline.ruler.before("link", "footnote_ref", _inline_rule(_MARKER_RE, "footnote_ref"))
    return md


def _render_footnote_open(tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    label = tokens[idx].meta["label"]
    return (f'<div class="footnote" id="fn-{_attr(label)}"><a class="fn-back" href="#fnref-{_attr(label)}">'
            f"{escapeHtml(label)}.</a> ")


def _render_footnote_ref(tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    label = tokens[idx].meta["inner"]
    return (f'<sup class="fn" id="fnref-{_attr(label)}"><a href="#fn-{_attr(label)}">{escapeHtml(label)}</a></sup>')


def _render_code_inline(tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    content = tokens[idx].content
    match = CITATION_RE.fullmatch(content.strip())
    if match:
        return (f'<a class="cite" href="#/c/{match.group(1)}" title="open the cited conversation">'
                f"<code>{escapeHtml(content)}</code></a>")
    return f"<code>{escapeHtml(content)}</code>"


def _wikilink_renderer(resolve: Resolver) -> Callable[..., str]:
    def render(tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        inner = tokens[idx].meta["inner"]
        sep = _SEP_RE.search(inner)
        target, shown = (inner[: sep.start()], inner[sep.end():]) if sep else (inner, "")
        page = target.partition("#")[0].strip()
        text = (shown or target).strip() or page
        cited = CONVERSATION_PAGE_RE.fullmatch(page)
        if cited:  # a citation: the vault's page of the cited passages; the web page opens the conversation
            return (f'<a class="cite" href="#/c/{cited.group(1)}" title="open the cited conversation">'
                    f"<code>{escapeHtml(text)}</code></a>")
        stem = resolve(page) if page else None
        if stem is None:
            return f'<span class="wikilink missing" title="no such article yet">{escapeHtml(text)}</span>'
        return f'<a class="wikilink" href="#/a/{_attr(quote(stem, safe=""))}">{escapeHtml(text)}</a>'

    return render


def article_html(text: str, resolve: Resolver) -> str:
    """An article's Markdown (front matter dropped) as HTML safe to put in the page."""
    _, body = split_front_matter(text.replace("\r\n", "\n"))
    md = _parser()
    tokens = md.parse(body, {})
    rules: dict[str, Any] = {
        "footnote_open": _render_footnote_open,
        "footnote_close": lambda *a: "</div>\n",
        "footnote_ref": _render_footnote_ref,
        "code_inline": _render_code_inline,
        "wikilink": _wikilink_renderer(resolve),
    }
    # A renderer of our own per call (the resolver differs per vault); the parser stays shared.
    # markdown-it-py's RendererProtocol omits `rules`, which its RendererHTML has.
    renderer = cast(RendererHTML, type(md.renderer)())
    renderer.rules.update(rules)
    return str(renderer.render(tokens, md.options, {}))

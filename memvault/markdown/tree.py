"""Parse articles and conversations into a tree of recall nodes (pure, no I/O).

An article becomes a root node, section nodes (headings, ``1.``-style headings written as
list items, CJK ``一、`` lines) nested by level, and paragraph nodes (``#p1``, ``#p2`` …).
A conversation becomes a root, one exchange per user turn, and one node per message.
Paths are unique within a document: duplicate sibling titles get ``~2``, ``~3``, and the
extra pieces of a split paragraph or message get ``~2``, ``~3`` too.
"""

import re
import textwrap
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # only annotations: markdown-it loads with the parser (memvault.markdown.scan)
    from markdown_it.token import Token

from memvault.ids import conv_ref
from memvault.markdown.names import stem_to_title
from memvault.markdown.scan import normalize_newlines, parser, split_front_matter

NodeKind = Literal["article", "section", "paragraph", "conversation", "exchange", "message"]

SECTION_CHARS = 1200
PARAGRAPH_CHARS = 900
TITLE_CHARS = 80

# A sentence ends at Latin punctuation followed by space, at CJK punctuation (no space
# needed in CJK text), or at a line break; closing quotes/brackets stay with the sentence.
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)|[。！？；][”’」』）)]*|\n")
_CJK_NUMBERED = re.compile(r"^\s*(?:[一二三四五六七八九十百]+|\d{1,3})[、．]\s*\S")
_NOT_A_TITLE_END = tuple(".。!！?？;；,，:：")


@dataclass
class TreeNode:
    """One node of the recall tree."""

    path: str
    parent: str | None
    kind: NodeKind
    title: str
    text: str
    order: int
    line: int | None
    ref: str | None = None  # native id of a message, or the conversation key of a conversation
    timestamp: datetime | str | None = None  # as given by the caller; articles carry none


# --- text helpers -----------------------------------------------------------------------


def split_sentences(text: str) -> list[str]:
    """Split into sentences; the pieces concatenate back to ``text`` exactly."""
    pieces, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        end = m.end()
        while end < len(text) and text[end] in " \t":
            end += 1
        if end > start:
            pieces.append(text[start:end])
            start = end
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _hard_split(text: str, limit: int) -> list[str]:
    """Cut an over-long sentence at whitespace, or anywhere when it has none (CJK)."""
    out = []
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit + 1)
        cut = cut if cut > 0 else limit
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        out.append(text)
    return out


def split_text(text: str, limit: int = PARAGRAPH_CHARS) -> list[str]:
    """Split ``text`` into stripped pieces of at most ``limit`` chars at sentence boundaries."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    pieces: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        if len((current + sentence).strip()) <= limit:
            current += sentence
            continue
        if current.strip():
            pieces.append(current.strip())
        current = ""
        if len(sentence.strip()) > limit:
            *full, current = _hard_split(sentence.strip(), limit)
            pieces.extend(full)
        else:
            current = sentence
    if current.strip():
        pieces.append(current.strip())
    return pieces


def truncate(text: str, limit: int) -> str:
    """Shorten ``text`` to at most ``limit`` chars, preferring a sentence boundary."""
    text = text.strip()
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[:limit]
    kept = ""
    for sentence in split_sentences(text):
        if len((kept + sentence).rstrip()) > limit:
            break
        kept += sentence
    kept = kept.rstrip()
    if len(kept) >= limit // 2:
        return kept
    cut = text.rfind(" ", limit // 2, limit)
    return text[: cut if cut > 0 else limit - 1].rstrip() + "…"


def snippet(text: str, limit: int = TITLE_CHARS) -> str:
    """First words of ``text`` on one line, for a node title."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def path_segment(title: str) -> str:
    """A title as a path segment: no ``/`` or ``#``, whitespace as ``_``, bounded length."""
    seg = "_".join(title.replace("/", "-").replace("#", "-").split())
    return seg[:TITLE_CHARS] or "untitled"


def _unique(segment: str, taken: set[str]) -> str:
    """``segment``, or ``segment~2``, ``~3`` … whichever is not yet in ``taken`` (added)."""
    candidate, n = segment, 1
    while candidate in taken:
        n += 1
        candidate = f"{segment}~{n}"
    taken.add(candidate)
    return candidate


# --- Markdown blocks --------------------------------------------------------------------


@dataclass
class _Block:
    kind: Literal["heading", "numbered", "para"]
    text: str  # heading title, or paragraph source text
    line: int  # 1-based
    level: int = 0  # heading level (numbered sections get theirs from context)
    footnotes: bool = False  # a run of footnote definitions


def _plain(inline: "Token") -> str:
    """Visible text of an inline token (markup dropped, image alt text kept)."""
    parts = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline", "image", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return " ".join("".join(parts).split())


def _close(tokens: list["Token"], i: int) -> int:
    """Index of the token closing the block opened at ``i`` (``i`` for a leaf block)."""
    if tokens[i].nesting != 1:
        return i
    level = tokens[i].level
    j = i + 1
    while not (tokens[j].level == level and tokens[j].nesting == -1):
        j += 1
    return j


def _source(lines: list[str], tok: "Token") -> str:
    start, end = tok.map or (0, 0)
    return textwrap.dedent("\n".join(lines[start:end])).strip()


def _is_title(inline: "Token") -> bool:
    text = inline.content.strip()
    return bool(text) and "\n" not in text and len(text) <= TITLE_CHARS and not text.endswith(_NOT_A_TITLE_END)


def _section_list(tokens: list["Token"], i: int, j: int, follows_numbered: bool) -> list[tuple[int, int]] | None:
    """Items of an ordered list used as numbered section headings, else None.

    A list counts as headings when every item opens with a short title line and either
    some item carries more blocks (a loose list of sections), or it is a single item that
    is followed by body text or continues a numbered section just before it.
    """
    items, k = [], i + 1
    while k < j:
        end = _close(tokens, k)
        items.append((k, end))
        k = end + 1
    for start, end in items:
        first = tokens[start + 1]
        if first.type != "paragraph_open" or not _is_title(tokens[start + 2]):
            return None
    if any(_close(tokens, start + 1) + 1 < end for start, end in items):
        return items
    nxt = tokens[j + 1].type if j + 1 < len(tokens) else None
    body_follows = nxt in ("paragraph_open", "bullet_list_open", "blockquote_open", "fence", "code_block", "table_open")
    if len(items) == 1 and (body_follows or follows_numbered):
        return items
    return None


def _blocks(tokens: list["Token"], lo: int, hi: int, lines: list[str]) -> list[_Block]:
    """Blocks between token ``lo`` and ``hi`` (all at one nesting level), in order."""
    out: list[_Block] = []
    i = lo
    while i < hi:
        tok = tokens[i]
        j = _close(tokens, i)
        line = (tok.map[0] + 1) if tok.map else 0
        if tok.type == "heading_open":
            out.append(_Block("heading", _plain(tokens[i + 1]), line, int(tok.tag[1:])))
        elif tok.type == "paragraph_open":
            first, _, rest = tokens[i + 1].content.partition("\n")
            if _CJK_NUMBERED.match(first) and len(first.strip()) <= TITLE_CHARS:
                out.append(_Block("numbered", first.strip(), line))
                if rest.strip():
                    out.append(_Block("para", rest.strip(), line + 1))
            else:
                out.append(_Block("para", _source(lines, tok), line))
        elif tok.type == "ordered_list_open":
            last_title = next((b.kind for b in reversed(out) if b.kind != "para"), None)
            follows = last_title == "numbered"
            items = _section_list(tokens, i, j, follows)
            if items is None:
                out.append(_Block("para", _source(lines, tok), line))
            for start, end in items or []:
                title_line = (tokens[start].map or (line - 1, 0))[0] + 1
                out.append(_Block("numbered", _plain(tokens[start + 2]), title_line))
                out.extend(_blocks(tokens, _close(tokens, start + 1) + 1, end, lines))
        elif tok.type == "footnote_def" and out and out[-1].kind == "para" and out[-1].footnotes:
            out[-1].text += "\n" + _source(lines, tok)  # consecutive definitions: one node
        elif tok.type != "hr" and tok.map:
            out.append(_Block("para", _source(lines, tok), line, footnotes=tok.type == "footnote_def"))
        i = j + 1
    return [b for b in out if b.text]


def _gap_blocks(tokens: list["Token"], lines: list[str]) -> list[_Block]:
    """Non-blank source lines no top-level token covers (link reference definitions such
    as ``[^1]: https://…`` vanish from the token stream, yet they are content)."""
    covered = [False] * len(lines)
    for tok in tokens:
        if tok.level == 0 and tok.map:
            for n in range(tok.map[0], min(tok.map[1], len(lines))):
                covered[n] = True
    out, run = [], []
    for n, text in enumerate(lines + [""]):
        if n < len(lines) and not covered[n] and text.strip():
            run.append(n)
        elif run:
            out.append(_Block("para", "\n".join(lines[k] for k in run).strip(), run[0] + 1))
            run = []
    return out


# --- articles ---------------------------------------------------------------------------


@dataclass
class _Open:
    node: TreeNode
    level: float
    numbered: bool
    paragraphs: list[str] = field(default_factory=list)
    child_segments: set[str] = field(default_factory=set)
    para_count: int = 0


def article_nodes(stem: str, markdown: str) -> list[TreeNode]:
    """Nodes of one article, in document order; the first is the root ``/<stem>``."""
    front, body = split_front_matter(normalize_newlines(markdown))
    # Front matter becomes blank lines, so token line maps stay the file's line numbers.
    lines = [""] * front.count("\n") + body.split("\n")
    tokens = parser().parse("\n".join(lines))
    blocks = sorted(_blocks(tokens, 0, len(tokens), lines) + _gap_blocks(tokens, lines), key=lambda b: b.line)

    nodes: list[TreeNode] = []
    root = _Open(TreeNode(f"/{path_segment(stem)}", None, "article", stem_to_title(stem), "", 0, 1), 0, False)
    nodes.append(root.node)
    stack, sections = [root], [root]
    title_taken = False

    def push(title: str, line: int, level: float, numbered: bool) -> None:
        # A heading of any level ends the numbered sections before it: they are the
        # innermost structure of the heading they sit under.
        while stack[-1].level >= level or (not numbered and stack[-1].numbered):
            stack.pop()
        parent = stack[-1]
        segment = _unique(path_segment(title), parent.child_segments)
        node = TreeNode(f"{parent.node.path}/{segment}", parent.node.path, "section", title, "", len(nodes), line)
        nodes.append(node)
        stack.append(_Open(node, level, numbered))
        sections.append(stack[-1])

    for block in blocks:
        if block.kind == "heading" and block.level == 1 and not title_taken and len(sections) == 1:
            root.node.title, root.node.line, title_taken = block.text, block.line, True
        elif block.kind == "heading":
            title_taken = True
            push(block.text, block.line, block.level, False)
        elif block.kind == "numbered":
            base = max(s.level for s in stack if not s.numbered)
            push(block.text, block.line, base + 0.5, True)
        else:
            owner = stack[-1]
            owner.paragraphs.append(block.text)
            owner.para_count += 1
            base_path = f"{owner.node.path}#p{owner.para_count}"
            for k, piece in enumerate(split_text(block.text, PARAGRAPH_CHARS), start=1):
                path = base_path if k == 1 else f"{base_path}~{k}"
                nodes.append(TreeNode(path, owner.node.path, "paragraph", snippet(piece), piece, len(nodes), block.line))

    for open_ in sections[1:]:
        open_.node.text = truncate("\n\n".join([open_.node.title, *open_.paragraphs]), SECTION_CHARS)
    lead = root.paragraphs[:1] or [n.text for n in nodes if n.kind == "paragraph"][:1]
    root.node.text = truncate("\n\n".join([root.node.title, *lead]), SECTION_CHARS)
    return nodes


# --- conversations ----------------------------------------------------------------------

MessageTuple = tuple[str, str, str, datetime | str | None]


def _fit_lines(lines: list[tuple[str, str]], limit: int) -> str:
    """``role: text`` lines within ``limit`` chars, sharing the room fairly (short lines
    keep their full text, long ones are truncated to an equal share of what is left)."""
    lines = [(role, " ".join(text.split())) for role, text in lines]
    room = limit - sum(len(role) + 3 for role, _ in lines)  # "role: " and the newline
    budget: dict[int, int] = {}
    pending = sorted(range(len(lines)), key=lambda k: len(lines[k][1]))
    while pending:
        share = max(room // len(pending), 0)
        k = pending.pop(0)
        budget[k] = min(len(lines[k][1]), share)
        room -= budget[k]
    parts = [f"{role}: {truncate(text, budget[k]) if budget[k] >= 2 else ''}" for k, (role, text) in enumerate(lines)]
    return truncate("\n".join(parts), limit)


def conversation_nodes(
    conv_key: str,
    short_id: str,
    title: str,
    date: str | None,
    source: str,
    messages: list[MessageTuple],
) -> list[TreeNode]:
    """Nodes of one conversation: root, exchanges (a user turn and what follows) and messages.

    ``messages`` are ``(native_id, role, text, timestamp)`` in thread order; every message
    node keeps its native id in ``ref``. Empty messages get no node.
    """
    root_path = "/" + conv_ref(short_id)
    header = "\n".join(part for part in (title, date, source) if part)
    nodes = [TreeNode(root_path, None, "conversation", title or conv_ref(short_id), header, 0, None, conv_key, date)]

    exchanges: list[list[MessageTuple]] = []
    spoken_roles = [m[1] for m in messages if m[2].strip()]
    # An exchange opens at a user turn; a conversation between named speakers (no `user`
    # role, e.g. an imported chat between two people) opens one where its first speaker
    # speaks again, instead of collapsing into a single exchange.
    opener = "user" if "user" in spoken_roles or not spoken_roles else spoken_roles[0]
    for message in messages:
        if not message[2].strip():
            continue
        if message[1] == opener or not exchanges:
            exchanges.append([])
        exchanges[-1].append(message)

    for n, exchange in enumerate(exchanges, start=1):
        path = f"{root_path}/e{n}"
        spoken = [(role, text) for _, role, text, _ in exchange if role in ("user", "assistant")]
        first_user = next((text for _, role, text, _ in exchange if role == "user"), exchange[0][2])
        text = _fit_lines(spoken or [(role, text) for _, role, text, _ in exchange], SECTION_CHARS)
        nodes.append(TreeNode(path, root_path, "exchange", snippet(first_user), text, len(nodes), None, None, exchange[0][3]))
        for k, (native_id, role, body, stamp) in enumerate(exchange, start=1):
            prefix = f"{role}: "
            for piece_no, piece in enumerate(split_text(body, PARAGRAPH_CHARS - len(prefix)), start=1):
                m_path = f"{path}/m{k}" if piece_no == 1 else f"{path}/m{k}~{piece_no}"
                nodes.append(
                    TreeNode(m_path, path, "message", snippet(prefix + piece), prefix + piece, len(nodes), None, native_id, stamp)
                )
    return nodes

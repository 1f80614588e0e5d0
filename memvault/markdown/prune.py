"""Prose whose only support is a forgotten conversation: find it and take it out.

A footnote marker supports the text before it back to the previous marker (the way articles
are written: "claim. claim.[^1] other claim.[^2]"). A passage whose markers all point at
definitions citing nothing but the forgotten conversation goes; a passage that also cites
another conversation, and text with no marker at all, stay. A list item left empty goes
with its bullet, and a section left with no text goes with its heading. Structure comes
from markdown-it tokens (paragraphs, list items, headings with their line maps); regexes
only look inside one paragraph. The definitions and markers themselves are removed
afterwards by the caller (`memvault.ops.forget.strip_citations`).
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

from memvault.markdown.footnotes import CONV_RE, MARKER_RE, REFERENCES
from memvault.markdown.scan import Doc, code_spans, outside_code

_SENTENCE_END = re.compile(r"[.!?](?=\s|\[\^|$)")
_BETWEEN_MARKERS = re.compile(r"[\s,;]*")
_KEEP_SECTIONS = {REFERENCES.casefold(), "see also"}


@dataclass(frozen=True)
class Pruned:
    """The text without the passages, and how much went (counts only: never the words)."""

    text: str
    sentences: int
    sections: int


def sole_labels(doc: Doc, forgotten: Callable[[str], bool]) -> set[str]:
    """Footnote labels whose definition cites only forgotten conversations."""
    out = set()
    for d in doc.footnote_defs():
        ids = CONV_RE.findall(d.content)
        if ids and all(forgotten(c) for c in ids):
            out.add(d.label)
    return out


def prune_passages(content: str, sole: set[str]) -> tuple[str, int]:
    """A paragraph's inline text without its solely supported passages; (text, sentences removed)."""
    spans = code_spans(content)
    markers = [m for m in MARKER_RE.finditer(content) if outside_code(content, m.start(), spans)]
    if not markers:
        return content, 0
    # Group adjacent markers ("[^1][^2]", "[^1], [^2]") into one run closing one passage.
    runs: list[tuple[int, set[str]]] = []
    for m in markers:
        if runs and _BETWEEN_MARKERS.fullmatch(content[runs[-1][0]:m.start()]):
            runs[-1] = (m.end(), runs[-1][1] | {m.group(1)})
        else:
            runs.append((m.end(), {m.group(1)}))
    kept: list[str] = []
    removed = 0
    start = 0
    for end, labels in runs:
        passage = content[start:end]
        if labels <= sole:
            words = re.sub(r"[\s,;]+$", "", MARKER_RE.sub("", passage))
            removed += max(1, len(_SENTENCE_END.findall(words)))
        else:
            kept.append(passage)
        start = end
    kept.append(content[start:])
    if not removed:
        return content, 0
    text = "".join(kept).strip()
    return re.sub(r"[ \t]{2,}", " ", text), removed


def prune(text: str, forgotten: Callable[[str], bool]) -> Pruned:
    """``text`` without the prose only ``forgotten`` conversations support."""
    doc = Doc(text)
    sole = sole_labels(doc, forgotten)
    if not sole:
        return Pruned(text, 0, 0)
    refs = next((h.start for h in doc.headings() if h.text.casefold() == REFERENCES.casefold()), len(doc.lines))
    lines: list[str | None] = list(doc.lines)
    sentences = 0
    items: list[tuple[int, int]] = []  # open list items (line map), innermost last
    touched: set[int] = set()  # first lines of blocks that lost text
    for i, tok in enumerate(doc.tokens):
        if tok.type == "list_item_open" and tok.map:
            items.append((tok.map[0], tok.map[1]))
        elif tok.type == "list_item_close" and items:
            items.pop()
        if tok.type != "paragraph_open" or not tok.map or tok.map[0] >= refs:
            continue
        start, end = tok.map
        content = doc.tokens[i + 1].content
        new, n = prune_passages(content, sole)
        if not n:
            continue
        sentences += n
        touched.add(start)
        first = doc.lines[start]
        lead = first[: len(first) - len(first.lstrip())]
        prefix = first[: first.find(content.split("\n", 1)[0])] if content and content.split("\n", 1)[0] in first else lead
        if not new:
            # An emptied list item goes with its bullet; an emptied paragraph with its lines.
            a, b = items[-1] if items and items[-1][0] == start else (start, end)
            for k in range(a, b):
                if k < len(lines) and (k < end or not (lines[k] or "").strip()):
                    lines[k] = None
            continue
        indent = " " * len(prefix) if items else lead
        rebuilt = [prefix + part if k == 0 else indent + part for k, part in enumerate(new.split("\n"))]
        lines[start:end] = rebuilt + [None] * (end - start - len(rebuilt))
    body = "\n".join(line for line in lines if line is not None)
    body, sections = _drop_emptied_sections(body, touched, doc)
    return Pruned(doc.front + _collapse_blank_lines(body), sentences, sections)


def _drop_emptied_sections(body: str, touched: set[int], before: Doc) -> tuple[str, int]:
    """Remove headings (level ≥ 2) whose section lost all its text here and had text before."""
    old = before.headings()
    lost_text = {h.text for h, nxt in zip(old, [*old[1:], None])
                 if any(h.end <= t < (nxt.start if nxt else len(before.lines)) for t in touched)}
    dropped = 0
    while True:
        doc = Doc(body, front_matter=False)
        heads = doc.headings()
        target = None
        for k, h in enumerate(heads):
            if h.level < 2 or h.text.casefold() in _KEEP_SECTIONS or h.text not in lost_text:
                continue
            stop = next((x.start for x in heads[k + 1:] if x.level <= h.level), len(doc.lines))
            if not any(line.strip() for line in doc.lines[h.end:stop]):
                target = (h.start, h.end)
                break
        if target is None:
            return body, dropped
        lines = doc.lines
        body = "\n".join(lines[: target[0]] + lines[target[1]:])
        lost_text.discard(next(h.text for h in heads if h.start == target[0]))
        dropped += 1


def _collapse_blank_lines(body: str) -> str:
    """No run of blank lines longer than one outside code (removals leave gaps)."""
    doc = Doc(body, front_matter=False)
    out: list[str] = []
    for i, line in enumerate(doc.lines):
        if not line.strip() and out and not out[-1].strip() and i not in doc.code:
            continue
        out.append(line)
    return "\n".join(out)

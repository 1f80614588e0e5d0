"""Footnotes: find markers `[^x]` and definitions `[^x]: …`, check and repair them.

`renumber` is the normalize stage's footnote repair: numbers in order of first use (1..N),
duplicate definitions merged, orphan markers and orphan definitions dropped (each drop
returned as a human-readable log line, for the Talk page), definitions gathered under a
final `## References`. It is idempotent. Code blocks and code spans are never touched.
"""

import re
from dataclasses import dataclass

from memvault.markdown.scan import DEF_RE, Doc, FootnoteDef, code_spans, outside_code

MARKER_RE = re.compile(r"\[\^([^\]\s\[^\\]+)\]")  # a label holds no `[`, `^` or `\`: `\[^x.[^1]` marks only `[^1]`
CONV_RE = re.compile(r"conv:([0-9a-fA-F]{8,})")
REFERENCES = "References"


@dataclass(frozen=True)
class Marker:
    """A footnote marker in the body: label, 0-based body line, column span."""

    label: str
    line: int
    start: int
    end: int
    in_definition: bool


def _def_content_start(line: str) -> int:
    """Column where a definition's text starts (after `[^label]: `)."""
    stripped = line.lstrip()
    match = DEF_RE.match(stripped)
    return len(line) - len(stripped) + (match.end() if match else 0)


def _markers(doc: Doc, defs: list[FootnoteDef]) -> list[Marker]:
    """All markers outside code, in document order."""
    def_first = {d.start for d in defs}
    in_def = {i for d in defs for i in range(d.start, d.end)}
    out = []
    for i, line in enumerate(doc.lines):
        if i in doc.code or "[^" not in line:
            continue
        begin = _def_content_start(line) if i in def_first else 0
        spans = code_spans(line)
        for m in MARKER_RE.finditer(line, begin):
            if outside_code(line, m.start(), spans):
                out.append(Marker(m.group(1), i, m.start(), m.end(), i in in_def))
    return out


def find_markers(text: str) -> list[tuple[str, int]]:
    """Markers cited in the body (not inside definitions): (label, 1-based line)."""
    doc = Doc(text)
    return [(m.label, doc.source_line(m.line)) for m in _markers(doc, doc.footnote_defs()) if not m.in_definition]


def find_definitions(text: str) -> list[tuple[str, str, int]]:
    """Footnote definitions: (label, content, 1-based line), in document order."""
    doc = Doc(text)
    return [(d.label, d.content, doc.source_line(d.start)) for d in doc.footnote_defs()]


def check_bijection(text: str) -> list[str]:
    """Problems that break the marker ⇄ definition bijection; empty when it holds."""
    doc = Doc(text)
    defs = doc.footnote_defs()
    used = [m for m in _markers(doc, defs) if not m.in_definition]
    defined: dict[str, list[int]] = {}
    for d in defs:
        defined.setdefault(d.label, []).append(doc.source_line(d.start))
    problems = []
    seen: set[str] = set()
    for m in used:
        if m.label not in defined and m.label not in seen:
            problems.append(f"marker [^{m.label}] on line {doc.source_line(m.line)} has no definition")
        seen.add(m.label)
    for label, lines in defined.items():
        if label not in seen:
            problems.append(f"definition [^{label}] on line {lines[0]} is never cited")
        if len(lines) > 1:
            problems.append(f"footnote [^{label}] is defined {len(lines)} times (lines {', '.join(map(str, lines))})")
    return problems


def citations(text: str) -> list[str]:
    """Conversation ids cited in footnote definitions (full strings after `conv:`), in order."""
    out: list[str] = []
    for d in Doc(text).footnote_defs():
        for cid in CONV_RE.findall(d.content):
            if cid not in out:
                out.append(cid)
    return out


def _content_key(content: str) -> str:
    return " ".join(content.split())


def _replace_markers(line: str, markers: list[Marker], numbers: dict[str, int]) -> str:
    """Rewrite the markers of one line (right to left so columns stay valid)."""
    for m in sorted(markers, key=lambda m: m.start, reverse=True):
        if m.label in numbers:
            line = f"{line[: m.start]}[^{numbers[m.label]}]{line[m.end :]}"
            continue
        before, after = line[: m.start], line[m.end :]
        # "word [^9]." → "word." rather than "word ."
        if before.endswith(" ") and (not after or after[0] in " .,;:!?)"):
            before = before[:-1]
        line = before + after
    return line


def _references_ranges(doc: Doc) -> list[tuple[int, int, int]]:
    """(heading start, heading end, section end) of every top-level `## References`."""
    heads = doc.headings()
    out = []
    for k, h in enumerate(heads):
        if h.level == 2 and h.text.rstrip(":").strip().casefold() == REFERENCES.casefold():
            end = next((n.start for n in heads[k + 1 :] if n.level <= 2), len(doc.lines))
            out.append((h.start, h.end, end))
    return out


def renumber(text: str) -> tuple[str, list[str]]:
    """Renumber footnotes 1..N in order of first use; return the new text and a log of drops."""
    doc = Doc(text)
    defs = doc.footnote_defs()
    markers = _markers(doc, defs)
    log: list[str] = []
    content_of = _merge_definitions(doc, defs, log)
    numbers, ordered = _number_by_first_use(doc, defs, markers, content_of, log)
    by_line: dict[int, list[Marker]] = {}
    for m in markers:
        by_line.setdefault(m.line, []).append(m)
    # Lines that leave the body: every definition, every References section (its prose is kept apart).
    drop = {i for d in defs for i in range(d.start, d.end)}
    extra = _references_prose(doc, defs, by_line, numbers, drop)
    body = _body(doc, defs, by_line, numbers, drop)
    refs = [f"[^{n}]: {_renumber_inline(_content_key(c), numbers, log)}" for n, c in enumerate(ordered, start=1)]
    out = "\n".join(body)
    if refs or extra:
        out += f"\n\n## {REFERENCES}\n\n" + "\n".join([*extra, *([""] if extra and refs else []), *refs])
    return doc.front + out + "\n", log


def _merge_definitions(doc: Doc, defs: list[FootnoteDef], log: list[str]) -> dict[str, str]:
    """Label → definition text: a repeated label keeps its first text (a conflicting repeat is logged)."""
    content_of: dict[str, str] = {}
    for d in defs:
        if d.label not in content_of:
            content_of[d.label] = d.content
        elif _content_key(d.content) != _content_key(content_of[d.label]):
            log.append(
                f"dropped conflicting duplicate definition [^{d.label}] (line {doc.source_line(d.start)}): {d.content}"
            )
    return content_of


def _number_by_first_use(doc: Doc, defs: list[FootnoteDef], markers: list[Marker], content_of: dict[str, str],
                         log: list[str]) -> tuple[dict[str, int], list[str]]:
    """(label → new number, definition texts by new number). Labels with equal texts share a number;
    orphan markers and unused definitions are logged as dropped.

    The order of first use is the order the output reads: the body, then prose kept under References.
    """
    group_of = {label: _content_key(c) for label, c in content_of.items()}
    ref_lines = {i for _, head_end, end in _references_ranges(doc) for i in range(head_end, end)}
    numbers: dict[str, int] = {}
    group_number: dict[str, int] = {}
    ordered: list[str] = []
    for m in sorted(markers, key=lambda m: (m.line in ref_lines, m.line, m.start)):
        if m.in_definition or m.label in numbers:
            continue
        if m.label not in content_of:
            log.append(f"dropped citation marker [^{m.label}] on line {doc.source_line(m.line)}: no definition")
            continue
        group = group_of[m.label]
        if group not in group_number:
            ordered.append(content_of[m.label])
            group_number[group] = len(ordered)
        numbers[m.label] = group_number[group]
    for d in defs:
        if d.label in content_of and group_of[d.label] not in group_number and content_of[d.label] == d.content:
            log.append(f"dropped unused footnote definition [^{d.label}] (line {doc.source_line(d.start)}): {d.content}")
            group_number.setdefault(group_of[d.label], 0)  # log each text once
    return numbers, ordered


def _references_prose(doc: Doc, defs: list[FootnoteDef], by_line: dict[int, list[Marker]], numbers: dict[str, int],
                      drop: set[int]) -> list[str]:
    """Prose a person kept under `## References`, markers renumbered; adds those sections to ``drop``."""
    def_starts = {d.start for d in defs}
    extra: list[str] = []
    for head_start, head_end, end in _references_ranges(doc):
        drop.update(range(head_start, head_end))
        if extra and extra[-1]:
            extra.append("")  # two References sections merge as separate blocks
        for i in range(head_end, end):
            if i in drop:
                if i in def_starts and extra and extra[-1]:
                    extra.append("")
                continue
            if i in doc.code:
                extra.append(doc.lines[i])
                continue
            line = _replace_markers(doc.lines[i], by_line.get(i, []), numbers).rstrip()
            if line or (extra and extra[-1]):
                extra.append(line)
        drop.update(range(head_end, end))
    while extra and not extra[-1]:
        extra.pop()
    return extra


def _body(doc: Doc, defs: list[FootnoteDef], by_line: dict[int, list[Marker]], numbers: dict[str, int],
          drop: set[int]) -> list[str]:
    """The lines that stay in the body, markers renumbered, blank runs left by removed lines collapsed."""
    def_starts = {d.start for d in defs}
    body: list[str] = []
    for i, line in enumerate(doc.lines):
        if i in drop:
            if i in def_starts and body and body[-1].strip():
                body.append("")  # keep neighbours apart ("text" + "---" would fuse into a heading)
            continue
        if i in by_line and i not in doc.code:
            line = _replace_markers(line, by_line[i], numbers)
        # Collapse the blank runs left by removed lines (never inside code).
        if not line.strip() and i not in doc.code and (not body or not body[-1].strip()):
            continue
        body.append(line.rstrip() if i not in doc.code else line)
    while body and not body[-1].strip():
        body.pop()
    return body


def _renumber_inline(content: str, numbers: dict[str, int], log: list[str]) -> str:
    """Renumber markers that appear inside a definition's own text."""
    spans = code_spans(content)
    found = [
        Marker(m.group(1), -1, m.start(), m.end(), True)
        for m in MARKER_RE.finditer(content)
        if outside_code(content, m.start(), spans)
    ]
    for m in found:
        if m.label not in numbers:
            log.append(f"dropped citation marker [^{m.label}] inside a definition: no definition")
    return _replace_markers(content, found, numbers)

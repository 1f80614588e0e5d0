"""synthesize, model path: the reply's shape, what the model sees, and deterministic edits.

The model never returns an article. It returns section-level edits — append a paragraph to
a section, start a section, or mark a quoted sentence superseded — plus conflict notes, and
`apply_reply` applies them to the current text. Existing prose is therefore never deleted
or reworded by construction; the gate then checks the result like any other new version.

Citations: the model writes `[^<conv id>]` after a sentence, using the short ids it is given;
they become numbered footnotes with full definitions here. An id it was not given becomes a
definition too, so the gate sees and rejects it ("unknown conversation").
"""

import re
from typing import Literal

from pydantic import BaseModel, Field

from memvault.ids import conv_ref
from memvault.markdown.footnotes import renumber
from memvault.markdown.gate import word_count
from memvault.markdown.scan import Doc
from memvault.markdown.talk import quote_markers
from stores.rows import ChunkRow
from memvault.stages.text import words

_MARKER = re.compile(r"\[\^([^\]\s]+)\]")
_HEX = re.compile(r"^[0-9a-f]{6,64}$")
_TAIL = ("see also", "references")


class Edit(BaseModel):
    section: str = Field(min_length=1, max_length=120)
    action: Literal["append", "new", "supersede"] = "append"
    text: str = Field(min_length=1)
    old: str = ""


class Conflict(BaseModel):
    section: str = ""
    note: str = Field(min_length=1)
    cites: list[str] = Field(default_factory=list)


class SynthesisReply(BaseModel):
    lead: str = ""
    edits: list[Edit] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)


def sections(text: str) -> list[tuple[str, int, int]]:
    """Top-level `##` sections as (heading text, first line, past-the-end line)."""
    doc = Doc(text)
    heads = [h for h in doc.headings() if h.level <= 2]
    out = []
    for k, h in enumerate(heads):
        if h.level != 2:
            continue
        end = heads[k + 1].start if k + 1 < len(heads) else len(doc.lines)
        out.append((h.text, h.start + doc.offset, end + doc.offset))
    return out


def article_view(text: str | None, material: str, max_words: int) -> tuple[str, str]:
    """What the model sees of the article, and how it is shown ("full text" or an outline).

    Past `max_words`, the article is shown as its outline (every heading with its first
    line) plus the full text of the sections sharing the most words with the new material,
    up to about `max_words` — the model edits sections; it never needs the whole article.
    """
    if not text:
        return "(no article yet: write its lead and first sections)", "new article"
    if word_count(text) <= max_words:
        return text, "full text"
    lines = text.split("\n")
    wanted = set(words(material))
    parts = sections(text)
    ranked = sorted(parts, key=lambda s: -len(wanted & set(words("\n".join(lines[s[1]:s[2]])))))
    shown, budget = set(), max_words
    for heading, a, b in ranked:
        size = len(" ".join(lines[a:b]).split())
        if heading.casefold() in _TAIL or size > budget:
            continue
        shown.add(heading)
        budget -= size
    out = [lines[Doc(text).offset]] if lines else []  # the title line (past any front matter)
    for heading, a, b in parts:
        body = lines[a:b]
        if heading in shown:
            out += body
        else:
            first = next((ln for ln in body[1:] if ln.strip()), "")
            out += [body[0], (first[:200] + " …") if first else "", ""]
    return "\n".join(out), f"outline of a {word_count(text)}-word article with its most relevant sections in full"


def _cite(text: str, definitions: dict[str, str], used: dict[str, str]) -> tuple[str, list[str]]:
    """Markers `[^<short id>]` → temporary labels with definitions; returns text and unknown ids."""
    unknown: list[str] = []

    def swap(m: re.Match[str]) -> str:
        raw = m.group(1).removeprefix("conv:").lower()
        match = next((s for s in definitions if s.startswith(raw) or raw.startswith(s)), None) if len(raw) >= 6 else None
        if match is None:
            if _HEX.match(raw):
                unknown.append(raw)
                used.setdefault(f"new{raw[:12]}", f"`{conv_ref(raw)}` (unknown)")
                return f"[^new{raw[:12]}]"
            return m.group(0)  # an existing footnote label, or junk the gate will catch
        label = f"new{match[:12]}"
        used.setdefault(label, definitions[match])
        return f"[^{label}]"

    return _MARKER.sub(swap, text), unknown


def _paragraph(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines()).strip()


def apply_reply(previous: str | None, title: str, reply: SynthesisReply, definitions: dict[str, str],
                date: str) -> tuple[str, list[str], list[str]]:
    """Apply edits to `previous` (or start the article); returns (new text, problems, conflict notes).

    `definitions` maps each short conversation id the model may cite to its footnote text.
    Problems are reasons to reject (an edit that cites nothing, a reply with no edits).
    """
    problems: list[str] = []
    used: dict[str, str] = {}
    edits = [e for e in reply.edits if e.text.strip()]
    if not edits:
        problems.append("the model proposed no edits")
    text = previous if previous and previous.strip() else None
    if text is None:
        lead, _ = _cite(_paragraph(reply.lead), definitions, used) if reply.lead.strip() else ("", [])
        if not lead:
            problems.append("a new article needs a lead paragraph")
        text = f"# {title}\n\n{lead}\n\n## References\n"
    for edit in edits:
        prose, _ = _cite(_paragraph(edit.text), definitions, used)
        if not _MARKER.search(prose):
            problems.append(f"edit to section {edit.section!r} cites no conversation")
        heading = " ".join(edit.section.replace("#", " ").split()) or "Notes"
        if edit.action == "supersede" and edit.old.strip() and edit.old.strip() in _body(text):
            old = edit.old.strip()
            text = text.replace(old, f"{old} (Superseded on {date}: {prose})", 1)
            continue
        text = _add_to_section(text, heading, prose)
    notes = []
    for c in reply.conflicts:
        ids = []
        for x in c.cites:
            raw = x.strip().strip("[]^").removeprefix("conv:").lower()
            hit = next((s for s in definitions if len(raw) >= 6 and (s.startswith(raw) or raw.startswith(s))), None)
            if hit and f"`{conv_ref(hit)}`" not in ids:
                ids.append(f"`{conv_ref(hit)}`")
        where = f" (section {c.section})" if c.section.strip() else ""
        notes.append(f"{' '.join(c.note.split())}{where}" + (f" — sources: {', '.join(ids)}" if ids else ""))
    if used:
        text = text.rstrip("\n") + "\n" + "".join(f"\n[^{k}]: {v}" for k, v in used.items()) + "\n"
    new, _ = renumber(text)
    return new, problems, notes


def _body(text: str) -> str:
    """The text above `## See also` / `## References` (where a superseded sentence may be)."""
    cut = [a for heading, a, _ in sections(text) if heading.casefold() in _TAIL]
    return "\n".join(text.split("\n")[: min(cut)]) if cut else text


def _add_to_section(text: str, heading: str, prose: str) -> str:
    lines = text.split("\n")
    parts = sections(text)
    for name, a, b in parts:
        if name.casefold() == heading.casefold() and name.casefold() not in _TAIL:
            end = b
            while end > a + 1 and not lines[end - 1].strip():
                end -= 1
            return "\n".join(lines[:end] + ["", prose, ""] + lines[b:])
    tail = [a for name, a, _ in parts if name.casefold() in _TAIL]
    at = min(tail) if tail else len(lines)
    head = lines[:at]
    while head and not head[-1].strip():
        head.pop()
    return "\n".join(head + ["", f"## {heading}", "", prose, ""] + lines[at:])


def talk_entry(existing: str | None, title: str, run_id: str, date: str, kind: str, lines: list[str]) -> str:
    """A dated section appended to a Talk page (created with its H1 when missing)."""
    head = existing.rstrip("\n") + "\n" if existing else f"# Talk: {title}\n"
    body = "\n".join(f"- {quote_markers(line)}" for line in lines)  # gate reasons name markers: text, not footnotes
    return f"{head}\n## {date} — {kind} (run {run_id})\n\n{body}\n"


def material(chunks: list[ChunkRow], shorts: dict[str, str], limit: int, dates: dict[str, str]) -> str:
    blocks = []
    for c in chunks:
        text = c.text if len(c.text) <= limit else c.text[:limit] + " …"
        short = shorts[c.conversation_id]
        blocks.append(f"--- [^{short}] {dates[c.id]}, {c.source}: "
                      f"{c.conversation_title or c.label or 'untitled'} ---\n{text}")
    return "\n\n".join(blocks)

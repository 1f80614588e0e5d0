"""Lint rules for a wiki worth keeping (#25 item 10): what the no-model wiki used to get wrong.

* `filler-title` / `filler-heading`: a greeting, acknowledgement or sign-off as a name
  ("Thanks", "Hey Andrew", "hi (2025-06-19)"), or a heading that says nothing ("Notes").
* `needless-escape`: backslashes the transcript did not have and the article does not need
  (`\\*\\*August 26\\*\\*`); fixable: the line is re-escaped (memvault.markdown.verbatim).
* `agent-noise`: an assistant app's wrapper or stand-in quoted as prose (`<system-reminder>`,
  "API Error: 401", "[Request interrupted by user]"; memvault.hygiene.noise).
* `lead-count`: a number of conversations in the lead that the citations do not bear out;
  fixable when the lead is the no-model one (memvault.markdown.leads).
* `mixed-script`: sections written in different scripts (memvault.naming.scripts).
* `no-links`: an article that links to no other article although related ones exist
  (`lint --fix` adds See also links to them, memvault.markdown.related).
"""

import re
from collections.abc import Callable

from memvault.markdown.leads import lead_counts, refresh_lead
from memvault.markdown.scan import Doc
from memvault.markdown.verbatim import escape, needless_escapes, unescape
from memvault.hygiene.noise import noise_lines
from memvault.naming.scripts import script_of
from memvault.naming.titles import is_filler

Report = Callable[[int, str, str, bool], None]  # (line, rule, message, fixable)
_DATED = re.compile(r"\s*\((?:\d{4}-\d\d-\d\d|undated)\)$")
_MARKER = re.compile(r"\[\^[^\]\s]+\]")
_EMPTY_HEADINGS = {"notes", "note", "untitled", "untitled topic"}
_TAIL = {"see also", "references"}


def _prose_lines(doc: Doc) -> list[int]:
    """Indexes of paragraph lines in the lead and sections (not code, headings, References)."""
    tail = False
    heads = {h.start: h for h in doc.headings()}
    defs = {i for d in doc.footnote_defs() for i in range(d.start, d.end)}
    out = []
    for block in doc.blocks():
        if block.start in heads:
            tail = heads[block.start].level <= 2 and heads[block.start].text.strip().casefold() in _TAIL
            continue
        if block.kind == "paragraph" and not tail:
            out += [i for i in range(block.start, block.end) if i not in defs]
    return out


def wiki_findings(text: str, report: Report, links_out: int | None) -> None:
    """Report the rules above for one article; ``links_out`` is how many other articles it
    links to (None: not checked, as when no other article is related to it)."""
    doc = Doc(text)
    for h in doc.headings():
        name = _DATED.sub("", h.text).strip()
        if h.level == 1 and (is_filler(name) or name.casefold() in _EMPTY_HEADINGS):
            report(doc.source_line(h.start), "filler-title", f"title '{h.text}' names no topic: rename the article", False)
        elif h.level == 2 and name.casefold() not in _TAIL and (is_filler(name) or name.casefold() in _EMPTY_HEADINGS):
            report(doc.source_line(h.start), "filler-heading", f"heading '{h.text}' says nothing about its section",
                   False)
    for i in _prose_lines(doc):
        n = needless_escapes(_MARKER.sub(" ", doc.lines[i]))
        if n:
            report(doc.source_line(i), "needless-escape", f"{n} backslash escape(s) the source did not have", True)
    prose = set(_prose_lines(doc))
    for line in noise_lines(text):
        if line - doc.offset - 1 in prose:
            report(line, "agent-noise", "agent noise quoted as prose (a wrapper, an API error or an "
                                        "interruption marker): delete it", False)
    for line, said, cited in lead_counts(text):
        report(line, "lead-count", f"the lead says {said} conversation(s), the citations name {cited}", True)
    scripts: dict[str, int] = {}
    for h in doc.headings():
        if h.level != 2 or h.text.strip().casefold() in _TAIL:
            continue
        end = next((g.start for g in doc.headings() if g.start > h.start and g.level <= 2), len(doc.lines))
        script = script_of("\n".join(doc.lines[h.end:end]))
        if script != "none":
            scripts.setdefault(script, doc.source_line(h.start))
    if len(scripts) > 1:
        first, *others = sorted(scripts, key=lambda s: scripts[s])
        for s in others:
            report(scripts[s], "mixed-script", f"a section in {s} in an article in {first}: one language per "
                                               "article — move it to its own article", False)
    if links_out == 0:
        report(1, "no-links", "links to no other article (`memvault lint --fix` adds See also links to related "
                              "articles)", True)


def fix_escapes_and_lead(text: str) -> str:
    """``text`` with needless escapes removed from its prose and its no-model lead refreshed."""
    doc = Doc(text)
    lines = list(doc.lines)
    for i in _prose_lines(doc):
        if needless_escapes(_MARKER.sub(" ", lines[i])):
            parts = re.split(r"(\[\^[^\]\s]+\])", lines[i])
            lines[i] = "".join(p if _MARKER.fullmatch(p) else _reescape(p) for p in parts)
    return refresh_lead(doc.front + "\n".join(lines))


def _reescape(part: str) -> str:
    lead, core, trail = re.match(r"(\s*)(.*?)(\s*)$", part, re.S).groups()  # type: ignore[union-attr]
    return lead + escape(unescape(core)) + trail if core else part

"""Leads that tell the truth: counts in a lead come from the article's citations.

The no-model path writes a lead of a fixed shape ("**Title** is a topic that came up in 3
conversations between 2025-01-02 and 2025-03-04, about …"). Its count and dates are read
from the footnote definitions — distinct cited conversations and their dates — and
`refresh_lead` rewrites them whenever the article changes, so a later run that adds a
conversation updates the lead too. A lead a person wrote is never rewritten; lint reports a
number of conversations in it that disagrees with the citations (`lead-count`).
"""

import re

from memvault.markdown.footnotes import CONV_RE
from memvault.markdown.scan import Doc

_NO_MODEL_LEAD = re.compile(
    r"^(?P<name>\*\*.+?\*\*) is a topic that came up in (?:\d+|one) conversations?(?:\(s\))? "
    r"(?:between \S+ and \S+|on \S+)(?P<about>, about .*|\.)$", re.M)
_COUNTED = re.compile(r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten) conversations?(?:\(s\))?", re.I)
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_DATE = re.compile(r"\((\d{4}-\d\d-\d\d)[,)]")


def cited(text: str) -> tuple[list[str], list[str]]:
    """The distinct conversations the article's footnote definitions cite, and their dates."""
    convs: list[str] = []
    dates: list[str] = []
    for d in Doc(text).footnote_defs():
        for cid in CONV_RE.findall(d.content):
            if not any(c.startswith(cid) or cid.startswith(c) for c in convs):
                convs.append(cid)
        dates += _DATE.findall(d.content)
    return convs, sorted(dates)


def lead_sentence(name: str, n: int, dates: list[str], about: str) -> str:
    """The no-model lead: ``name`` (already Markdown), how many conversations, when, about what."""
    when = (f"on {dates[0]}" if dates and dates[0] == dates[-1] else
            f"between {dates[0]} and {dates[-1]}" if dates else "on undated occasions")
    noun = "conversation" if n == 1 else "conversations"
    return f"{name} is a topic that came up in {n} {noun} {when}{about}"


def refresh_lead(text: str) -> str:
    """``text`` with its no-model lead's count and dates taken from its citations (unchanged
    when it has no such lead or no citations)."""
    m = _NO_MODEL_LEAD.search(text)
    convs, dates = cited(text)
    if m is None or not convs:
        return text
    about = m.group("about") if m.group("about").startswith(",") else "."
    return text[:m.start()] + lead_sentence(m.group("name"), len(convs), dates, about) + text[m.end():]


def lead_counts(text: str) -> list[tuple[int, int, int]]:
    """(1-based line, count said, count cited) for each number of conversations in the lead
    that disagrees with the citations."""
    doc = Doc(text)
    heads = doc.headings()
    h1 = next((h for h in heads if h.level == 1), None)
    if h1 is None:
        return []
    end = next((h.start for h in heads if h.level == 2 and h.start > h1.start), len(doc.lines))
    convs, _ = cited(text)
    out = []
    for i in range(h1.end, end):
        for m in _COUNTED.finditer(doc.lines[i]):
            said = int(m.group(1)) if m.group(1).isdigit() else _WORDS[m.group(1).lower()]
            if convs and said != len(convs):
                out.append((doc.source_line(i), said, len(convs)))
    return out

"""The editorial gate: decide whether a synthesized article may replace the previous one.

A weak or malformed model output must be a no-op, never a corrupted article, so the gate
lists every reason to reject (an empty list means pass): the text shrank below 70% of the
previous version, a previous citation vanished (unless removed on purpose), footnotes are
not a bijection, model chatter is present, a cited conversation is unknown, or the
structure is broken.
"""

import bisect
import re
from collections.abc import Iterable

from memvault.markdown.artefacts import chatter
from memvault.markdown.footnotes import check_bijection, citations, find_markers
from memvault.markdown.scan import Doc

MIN_WORD_RATIO = 0.7
_WORD = re.compile(r"\w[\w'’-]*")


def word_count(text: str) -> int:
    """Words of prose: front matter, footnote definitions and reference headings excluded."""
    doc = Doc(text)
    skip = {i for d in doc.footnote_defs() for i in range(d.start, d.end)}
    return sum(len(_WORD.findall(line)) for i, line in enumerate(doc.lines) if i not in skip)


def _same_citation(a: str, b: str) -> bool:
    """Citations match when one id is a prefix of the other (abbreviations grow over time)."""
    a, b = a.lower(), b.lower()
    return a.startswith(b) or b.startswith(a)


def _is_known(cid: str, known_sorted: list[str]) -> bool:
    """Whether ``cid`` is a prefix of some known full id (``known_sorted`` is sorted, lowercase)."""
    cid = cid.lower()
    k = bisect.bisect_left(known_sorted, cid)
    return k < len(known_sorted) and known_sorted[k].startswith(cid)


def _structure(doc: Doc, has_footnotes: bool) -> list[str]:
    reasons = []
    h1 = [h for h in doc.headings() if h.level == 1]
    if len(h1) != 1:
        reasons.append(f"structure: expected exactly one H1 title, found {len(h1)}")
    if h1:
        before = [i for i in range(h1[0].start) if doc.lines[i].strip()]
        if before:
            reasons.append(f"structure: text before the title on line {doc.source_line(before[0])} (model preamble?)")
    refs = any(h.level == 2 and h.text.rstrip(":").strip().casefold() == "references" for h in doc.headings())
    if has_footnotes and not refs:
        reasons.append("structure: footnotes present but no '## References' section")
    for start in doc.unclosed_fences():
        reasons.append(f"structure: code fence opened on line {doc.source_line(start)} is never closed")
    return reasons


def gate(new: str, previous: str | None = None, known_conv_ids: set[str] | None = None,
         allowed_removed: Iterable[str] = ()) -> list[str]:
    """Reasons to reject ``new`` as the successor of ``previous``; empty means it passes.

    ``allowed_removed`` names conversations whose citations are removed on purpose
    (`memvault forget --conversation`): losing them is not a reason to reject.
    """
    allowed = list(allowed_removed)
    if not new.strip():
        return ["empty output"]
    reasons: list[str] = []
    doc = Doc(new)
    cited = citations(new)
    if previous is not None and previous.strip():
        before, after = word_count(previous), word_count(new)
        if after < MIN_WORD_RATIO * before:
            reasons.append(f"shrank: {after} words is below {MIN_WORD_RATIO:.0%} of the previous {before}")
        for old in citations(previous):
            if not any(_same_citation(old, c) for c in cited) and not any(_same_citation(old, a) for a in allowed):
                reasons.append(f"lost citation conv:{old}")
    reasons.extend(f"footnotes: {p}" for p in check_bijection(new))
    reasons.extend(f"model chatter on line {line}: {excerpt!r}" for line, excerpt in chatter(new))
    if known_conv_ids is not None:
        known = sorted(k.lower() for k in known_conv_ids)
        reasons.extend(f"unknown conversation conv:{c}" for c in cited if not _is_known(c, known))
    reasons.extend(_structure(doc, bool(doc.footnote_defs() or find_markers(new))))
    return reasons


def _shape(reason: str) -> str:
    """A gate reason without its numbers, to tell a new problem from one already there."""
    return re.sub(r"\d+", "#", reason)


def new_problems(new: str, previous: str, allowed_removed: Iterable[str] = ()) -> list[str]:
    """Gate reasons against ``new`` that ``previous`` did not already have on its own."""
    before = {_shape(r) for r in gate(previous, previous)}
    return [r for r in gate(new, previous, allowed_removed=allowed_removed) if _shape(r) not in before]

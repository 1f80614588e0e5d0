"""Talk pages: an article's dated notes (what a run dropped or refused, and why).

Notes often quote footnote markers (`dropped orphan marker [^3]`). Bare, Obsidian and other
Markdown readers take `[^3]` for a footnote the page never defines, so every marker whose
label the Talk page does not define itself is written as code (`` `[^3]` ``): it renders as
the text it is. `quote_markers` does that to a line or a whole page; it is idempotent and
never touches code blocks or spans.
"""

from datetime import datetime, timezone

from memvault.markdown.footnotes import MARKER_RE
from memvault.markdown.scan import Doc, code_spans, outside_code


def quote_markers(text: str, defined: frozenset[str] = frozenset()) -> str:
    """``text`` with each footnote marker outside code whose label is not in ``defined`` in backticks."""
    out = []
    for line in text.split("\n"):
        if "[^" not in line:
            out.append(line)
            continue
        spans = code_spans(line)
        for m in reversed(list(MARKER_RE.finditer(line))):
            if m.group(1) not in defined and outside_code(line, m.start(), spans):
                line = f"{line[: m.start()]}`{m.group(0)}`{line[m.end() :]}"
        out.append(line)
    return "\n".join(out)


def quote_page_markers(page: str) -> str:
    """A whole Talk page with its undefined footnote markers quoted (its own footnotes, when a
    person wrote some with their definitions, stay footnotes)."""
    doc = Doc(page, front_matter=False)
    defined = frozenset(d.label for d in doc.footnote_defs())
    def_lines = {i for d in doc.footnote_defs() for i in range(d.start, d.end)}
    lines = [
        line if i in doc.code or i in def_lines else quote_markers(line, defined)
        for i, line in enumerate(doc.lines)
    ]
    return "\n".join(lines)


def talk_note(existing: str | None, title: str, run_id: str, lines: list[str], what: str = "normalize") -> str:
    """``existing`` Talk page (or a new one) with a dated section listing ``lines``."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    head = existing.rstrip("\n") + "\n" if existing else f"# Talk: {title}\n"
    body = "\n".join(f"- {quote_markers(line)}" for line in lines)
    return f"{head}\n## {stamp} — {what} (run {run_id})\n\n{body}\n"

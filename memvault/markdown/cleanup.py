"""Article cleanup: a synthesized article brought deterministically into the vault's article shape.

Removes model artefacts (a code fence wrapping the whole article, preamble before the
title, chatter around it, commentary after the references), makes the title the one H1,
ensures a lead paragraph, and orders sections: body, `## See also` (merged with the
article's wikilinks), `## References` (every footnote definition) last. No model, no I/O;
`clean_article(clean_article(x, t), t) == clean_article(x, t)`.
The wikify stage (memvault/stages/wikify.py) runs it over the articles a run touched.
"""

import re
from collections.abc import Callable, Mapping

from memvault.markdown.artefacts import is_chatter
from memvault.markdown.names import title_to_stem
from memvault.markdown.scan import FENCE_OPEN_RE, Block, Doc, normalize_newlines, split_front_matter
from memvault.markdown.wikilinks import LINK_RE, iter_links, link_key

SEE_ALSO = "See also"
REFERENCES = "References"
_WRAPPER_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*(?:markdown|md)?\s*$", re.IGNORECASE)
_HR = re.compile(r" {0,3}([-*_])(?: *\1){2,} *")
_ATX_H1 = re.compile(r"^ {0,3}#(?:\s|$)")


def _unwrap_fence(lines: list[str]) -> list[str]:
    """Drop a code fence that wraps the whole article (a markdown fence holding the H1).

    The opener may follow a few lines of preamble ("Here is the article:"), never an H1;
    the closer is the last bare fence line (models leave inner fences unbalanced), or the
    end of the text when the model forgot it.
    """
    opener = None
    for i, line in enumerate(lines[:12]):
        if _ATX_H1.match(line):
            return lines
        if _WRAPPER_OPEN.match(line):
            opener = i
            break
    if opener is None:
        return lines
    mark = lines[opener].strip()[0]
    width = len(lines[opener].strip()) - len(lines[opener].strip().lstrip(mark))
    closer = next(
        (j for j in range(len(lines) - 1, opener, -1) if set(lines[j].strip()) == {mark} and len(lines[j].strip()) >= width),
        len(lines),
    )
    inner = lines[opener + 1 : closer]
    if not any(_ATX_H1.match(ln) for ln in inner):
        return lines
    return lines[:opener] + inner + lines[closer + 1 :]


def _strip(lines: list[str]) -> list[str]:
    """Trim blank lines at both ends; close a code fence left open (CommonMark closes it at
    the end of the document, so closing it here keeps the rendering and lets sections follow)."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    out = lines[start:end]
    doc = Doc("\n".join(out), front_matter=False)
    for opener in doc.unclosed_fences()[:1]:
        match = FENCE_OPEN_RE.match(out[opener].lstrip("> "))
        out.append(match.group(1) if match else "```")
    return out


def _normalize_title(body: str, title: str) -> str:
    """One H1 equal to ``title`` first; other H1s demoted; chatter before and right after it removed.

    Text before the title that is not chatter is kept and becomes the start of the lead.
    """
    doc = Doc(body, front_matter=False)
    h1s = [h for h in doc.headings() if h.level == 1]
    top = h1s[0] if h1s else None
    blocks = doc.blocks()

    def chatty(b: Block) -> bool:
        return b.kind == "paragraph" and is_chatter(" ".join(doc.lines[b.start : b.end]))

    drop: set[int] = set()
    for b in blocks:  # preamble before the title
        if top and b.end <= top.start and (chatty(b) or b.kind == "hr"):
            drop.update(range(b.start, b.end))
    for b in blocks:  # chatter opening the lead
        if b.start < (top.end if top else 0):
            continue
        if not chatty(b):
            break
        drop.update(range(b.start, b.end))
    replace = {h.start: f"# {title}" if h is top else f"## {h.text}" for h in h1s}
    for h in h1s:
        drop.update(range(h.start + 1, h.end))  # setext underline
    pre = [ln for i, ln in enumerate(doc.lines) if top and i < top.start and i not in drop]
    lines = [] if top else [f"# {title}", ""]
    for i, line in enumerate(doc.lines):
        if i in replace:
            lines += [replace[i], "", *pre] if h1s[0].start == i else [replace[i]]
        elif i not in drop and not (top and i < top.start):
            lines.append(line)
    return "\n".join(lines)


def _drop_trailing_chatter(lines: list[str]) -> list[str]:
    """Remove commentary closing the article ("Let me know if…") and rules before it."""
    doc = Doc("\n".join(lines), front_matter=False)
    end = len(lines)
    for b in reversed(doc.blocks()):
        para = " ".join(lines[b.start : b.end])
        if b.kind != "hr" and not (b.kind == "paragraph" and is_chatter(para)):
            break
        end = b.start
    out = _strip(lines[:end])
    if out and out[-1] in (f"## {SEE_ALSO}", f"## {REFERENCES}"):
        out = _strip(out[:-1])  # the section held nothing but the commentary
    return out


def _without_chatter(lines: list[str]) -> list[str]:
    """Remove every chatter paragraph from a run of lines."""
    doc = Doc("\n".join(lines), front_matter=False)
    drop = {
        i
        for b in doc.blocks()
        if b.kind == "paragraph" and is_chatter(" ".join(lines[b.start : b.end]))
        for i in range(b.start, b.end)
    }
    return [ln for i, ln in enumerate(lines) if i not in drop]


def _drop_leading_chatter(lines: list[str]) -> list[str]:
    """Remove chatter paragraphs opening the lead ("Sure, here is the article:")."""
    doc = Doc("\n".join(lines), front_matter=False)
    start = 0
    for b in doc.blocks():
        if not (b.kind == "paragraph" and is_chatter(" ".join(lines[b.start : b.end]))):
            break
        start = b.end
    return _strip(lines[start:])


def _squeeze(lines: list[str]) -> list[str]:
    """Collapse runs of blank lines (left where definitions were pulled out), except in code."""
    code = Doc("\n".join(lines), front_matter=False).code
    return [ln for i, ln in enumerate(lines) if i in code or ln.strip() or i == 0 or lines[i - 1].strip()]


def _is_named(text: str, name: str) -> bool:
    return text.rstrip(":").strip().casefold() == name.casefold()


def clean_article(text: str, title: str, link_targets: Mapping[str, str] | None = None) -> str:
    """Clean up one article; see the module docstring for what changes.

    ``link_targets`` (spelling key → canonical stem, as for ``canonicalize``) lets See also
    dedupe aliases and spellings of one page and name it by its stem.
    One pass over the article's sections, in order: title, lead, body sections, See also,
    References; the steps it calls are named below.
    """
    front, body = split_front_matter(normalize_newlines(text).strip("\n") + "\n")
    body = "\n".join(_unwrap_fence(body.split("\n")))
    doc = Doc(_normalize_title(body, title), front_matter=False)
    lines = doc.lines
    heads = [h for h in doc.headings() if h.level <= 2]
    h1 = next(h for h in heads if h.level == 1)
    h2s = [h for h in heads if h.level == 2]
    lead_end = h2s[0].start if h2s else len(lines)
    ranges = [(h, h.end, (h2s[k + 1].start if k + 1 < len(h2s) else len(lines))) for k, h in enumerate(h2s)]
    defs = {b.start: b.end for b in doc.blocks() if b.kind == "footnote_def"}
    resolve = _resolver(link_targets or {})
    self_keys = {resolve(title)[0], resolve(title_to_stem(title))[0]}
    references: list[str] = []

    def take(start: int, end: int) -> list[str]:
        return _take(lines, defs, start, end, references)

    lead = _strip(take(h1.end, lead_end))
    sections: list[tuple[str, list[str]]] = []
    see_also: list[str] = []
    ref_prose: list[str] = []
    for head, start, end in ranges:
        content = take(start, end)
        if _is_named(head.text, SEE_ALSO):
            kept = [ln for ln in _without_chatter(content) if not _HR.fullmatch(ln)]
            see_also.extend(ln.strip() for ln in _strip(kept) if ln.strip())
        elif _is_named(head.text, REFERENCES):
            ref_prose.extend(content)
        else:
            sections.append((lines[head.start] if not head.setext else f"## {head.text}", _strip(content)))

    lead = _drop_leading_chatter(lead)
    if not lead and sections:
        lead, sections = _lead_from_first_section(sections)

    body_ranges = [(h1.end, lead_end)] + [
        (h.start, e) for h, _, e in ranges if not _is_named(h.text, SEE_ALSO) and not _is_named(h.text, REFERENCES)
    ]
    see_also = _build_see_also(see_also, doc, body_ranges, self_keys, resolve, set((link_targets or {}).values()))
    return front + "\n".join(_assemble(title, lead, sections, see_also, ref_prose, references)) + "\n"


def _take(lines: list[str], defs: dict[int, int], start: int, end: int, references: list[str]) -> list[str]:
    """Lines of a range with footnote definitions pulled out (they go to ``references``)."""
    out: list[str] = []
    i = start
    while i < end:
        if i in defs:
            references.extend(lines[i : defs[i]])
            i = defs[i]
            if out and out[-1].strip():
                out.append("")  # keep the lines around apart ("text" + "---" would fuse into a heading)
            continue
        out.append(lines[i])
        i += 1
    return out


def _assemble(title: str, lead: list[str], sections: list[tuple[str, list[str]]], see_also: list[str],
              ref_prose: list[str], references: list[str]) -> list[str]:
    """The article's lines in order: title, lead, sections, See also, References."""
    out = [f"# {title}", ""]
    if lead:
        out += [*lead, ""]
    for heading, content in sections:
        out += [heading, "", *content, ""] if content else [heading, ""]
    if see_also:
        out += [f"## {SEE_ALSO}", "", *see_also, ""]
    # Commentary after the definitions lands here, often behind a rule; drop both.
    ref_prose = [ln for ln in ref_prose if not _HR.fullmatch(ln)]
    ref_prose = _without_chatter(ref_prose)
    prose, defs_lines = _squeeze(_strip(ref_prose)), _strip(references)
    refs = prose + [""] + defs_lines if prose and defs_lines else prose or defs_lines
    if refs:
        out += [f"## {REFERENCES}", "", *refs, ""]
    return _drop_trailing_chatter(_strip(out))


def _lead_from_first_section(sections: list[tuple[str, list[str]]]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Move the first paragraph of the first section up to become the lead, if it starts with one."""
    heading, content = sections[0]
    doc = Doc("\n".join(content), front_matter=False)
    blocks = doc.blocks()
    if not blocks or blocks[0].kind != "paragraph":
        return [], sections
    lead = content[blocks[0].start : blocks[0].end]
    if is_chatter(" ".join(lead)):  # left in place for the gate to reject
        return [], sections
    rest = _strip(content[blocks[0].end :])
    return lead, ([(heading, rest)] if rest else []) + sections[1:]


def _resolver(link_targets: Mapping[str, str]) -> Callable[[str], tuple[str, str]]:
    """Page name → (dedupe key, name to link): the canonical stem when known."""
    stems = set(link_targets.values())

    def resolve(page: str) -> tuple[str, str]:
        stem = page if page in stems else link_targets.get(link_key(page))
        return (link_key(stem), stem) if stem else (link_key(page), page)

    return resolve


def _build_see_also(
    existing: list[str],
    doc: Doc,
    ranges: list[tuple[int, int]],
    self_keys: set[str],
    resolve: Callable[[str], tuple[str, str]],
    known: set[str] | None = None,
) -> list[str]:
    """Existing See also lines (minus self links and repeats), then one bullet per new body link
    to an article in ``known`` (stems; empty or None: every body link)."""
    out: list[str] = []
    seen: set[str] = set()
    bullet = re.compile(r"[-*+] ")
    for k, line in enumerate(existing):
        # Only a bullet that stands alone (no lazy continuation line after it) may be dropped.
        alone = k + 1 == len(existing) or bool(bullet.match(existing[k + 1]))
        match = LINK_RE.search(line) if bullet.match(line) and alone else None
        if not match:  # not a link bullet: kept as written
            out.append(line)
            continue
        key = resolve(re.split(r"\\?\||#", match.group(2))[0].strip())[0]
        if key in self_keys or key in seen:
            continue
        seen.add(key)
        out.append(line)
    for link in iter_links(doc):
        if link.embed or not any(s <= link.line < e for s, e in ranges):
            continue
        key, name = resolve(link.page)
        if key in self_keys or key in seen or (known and name not in known):
            continue  # See also lists only articles that exist (a dangling link is "wanted")
        seen.add(key)
        out.append(f"- [[{name}]]")
    return out

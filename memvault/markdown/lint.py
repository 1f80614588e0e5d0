"""Lint: findings about articles, each with a 1-based source line and whether `--fix` can mend it.

Rules: footnote-bijection, dangling-link, missing-title, multiple-h1, missing-lead,
missing-references, unclosed-fence, bad-front-matter, oversize, bad-filename, and (across
the vault) duplicate-title; the wiki's quality rules of memvault.markdown.lint_wiki
(filler-title, filler-heading, needless-escape, agent-noise, lead-count, mixed-script,
no-links). Fixable findings are those `clean_article` + `renumber` repair, and those
`fix_escapes_and_lead` and See also linking repair.
"""

import re
from collections.abc import Mapping
from pathlib import PurePosixPath

from pydantic import BaseModel, ConfigDict

from memvault.markdown.footnotes import find_definitions, find_markers
from memvault.markdown.gate import word_count
from memvault.markdown.names import names_file, stem_to_title, title_to_stem
from memvault.markdown.scan import Doc
from memvault.markdown.cleanup import clean_article
from memvault.markdown.conversation_page import FOLDER
from memvault.markdown.lint_wiki import wiki_findings
from memvault.markdown.related import related_articles
from memvault.markdown.wikilinks import aliases_of, build_known, find_links, known_from_texts, link_key

DEFAULT_MAX_WORDS = 3000


class Finding(BaseModel):
    """One lint finding."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    rule: str
    message: str
    fixable: bool


def _footnotes(path: str, text: str) -> list[Finding]:
    markers, defs = find_markers(text), find_definitions(text)
    defined = {label for label, _, _ in defs}
    used = {label for label, _ in markers}
    out, seen = [], set()
    for label, line in markers:
        if label not in defined and label not in seen:
            out.append(Finding(file=path, line=line, rule="footnote-bijection",
                               message=f"marker [^{label}] has no definition", fixable=True))
            seen.add(label)
    counted: set[str] = set()
    for label, _, line in defs:
        if label not in used:
            message = f"definition [^{label}] is never cited"
        elif label in counted:
            message = f"footnote [^{label}] is defined more than once"
        else:
            counted.add(label)
            continue
        out.append(Finding(file=path, line=line, rule="footnote-bijection", message=message, fixable=True))
    return out


def _structure(path: str, text: str, doc: Doc) -> list[Finding]:
    out = []
    h1s = [h for h in doc.headings() if h.level == 1]
    stem = PurePosixPath(path).stem
    if not h1s:
        out.append(Finding(file=path, line=1, rule="missing-title", message="no '# Title' heading", fixable=True))
    for h in h1s[1:]:
        out.append(Finding(file=path, line=doc.source_line(h.start), rule="multiple-h1",
                           message=f"extra H1 '{h.text}' (only the title is H1)", fixable=True))
    if h1s and not names_file(h1s[0].text, stem):
        out.append(Finding(file=path, line=doc.source_line(h1s[0].start), rule="bad-filename",
                           message=f"file name '{stem}' does not match the title '{h1s[0].text}' "
                                   f"(expected '{title_to_stem(h1s[0].text)}.md'); rename one of them",
                           fixable=False))
    if h1s:
        h2 = next((h.start for h in doc.headings() if h.level == 2), len(doc.lines))
        lead = [b for b in doc.blocks() if h1s[0].end <= b.start < h2 and b.kind == "paragraph"]
        if not lead:
            fixed = Doc(clean_article(text, h1s[0].text))
            fh1 = next(h for h in fixed.headings() if h.level == 1)
            fh2 = next((h.start for h in fixed.headings() if h.level == 2), len(fixed.lines))
            can = any(fh1.end <= b.start < fh2 and b.kind == "paragraph" for b in fixed.blocks())
            out.append(Finding(file=path, line=doc.source_line(h1s[0].start), rule="missing-lead",
                               message="no lead paragraph between the title and the first section", fixable=can))
    refs = any(h.level == 2 and h.text.rstrip(":").strip().casefold() == "references" for h in doc.headings())
    defs = doc.footnote_defs()
    if defs and not refs:
        out.append(Finding(file=path, line=doc.source_line(defs[0].start), rule="missing-references",
                           message="footnote definitions without a '## References' section", fixable=True))
    for start in doc.unclosed_fences():
        out.append(Finding(file=path, line=doc.source_line(start), rule="unclosed-fence",
                           message="code fence is never closed", fixable=False))
    return out


def lint_article(
    path_rel: str,
    text: str,
    all_stems: set[str],
    known: Mapping[str, str] | None = None,
    max_words: int = DEFAULT_MAX_WORDS,
    pages: set[str] | None = None,
    related: list[str] | None = None,
) -> list[Finding]:
    """Findings for one article. ``known`` maps spelling keys (aliases too) to stems;
    without it, only the stems' own spellings resolve. ``pages`` are the conversation pages
    citations may link to (`Conversations/conv-…`); None leaves those links unchecked.
    ``related`` are the articles this one could link to (memvault.markdown.related): with
    some, an article that links to none is reported (no-links)."""
    doc = Doc(text)
    targets = dict(known or build_known(all_stems))
    resolvable = set(targets)
    out = _footnotes(path_rel, text) + _structure(path_rel, text, doc)
    self_key = link_key(PurePosixPath(path_rel).stem)
    links_out = 0
    for target, _, line in find_links(text):
        if target.startswith(FOLDER + "/"):
            if pages is not None and target not in pages:
                out.append(Finding(file=path_rel, line=line, rule="dangling-link",
                                   message=f"[[{target}]] points at no conversation page; run `memvault run` "
                                           "to write it", fixable=False))
            continue
        stem = targets.get(link_key(target))
        links_out += stem is not None and link_key(stem) != self_key
        if link_key(target) not in resolvable:
            out.append(Finding(file=path_rel, line=line, rule="dangling-link",
                               message=f"[[{target}]] points at no article", fixable=False))
    try:
        aliases_of(text)
    except ValueError as exc:
        out.append(Finding(file=path_rel, line=1, rule="bad-front-matter", message=str(exc), fixable=False))
    wiki_findings(text, lambda line, rule, message, fixable: out.append(
        Finding(file=path_rel, line=line, rule=rule, message=message, fixable=fixable)),
        links_out if related else None)
    words = word_count(text)
    if words > max_words:
        out.append(Finding(file=path_rel, line=1, rule="oversize",
                           message=f"{words} words (limit {max_words}); consider splitting the article",
                           fixable=False))
    return sorted(out, key=lambda f: (f.line, f.rule))


def lint_vault(files: dict[str, str], max_words: int = DEFAULT_MAX_WORDS,
               pages: set[str] | None = None) -> list[Finding]:
    """Findings for a set of articles (path relative to the vault → text), plus duplicate titles;
    ``pages``: see `lint_article`."""
    stems = {PurePosixPath(p).stem for p in files}
    # Broken front matter is reported per article as bad-front-matter.
    known, _ = known_from_texts({PurePosixPath(p).stem: t for p, t in files.items()})
    partners = related_articles({PurePosixPath(p).stem: t for p, t in files.items()})
    out: list[Finding] = []
    titles: dict[str, list[tuple[str, int, str]]] = {}
    for path in sorted(files):
        out += lint_article(path, files[path], stems, known, max_words, pages, partners[PurePosixPath(path).stem])
        doc = Doc(files[path])
        h1 = next((h for h in doc.headings() if h.level == 1), None)
        title = h1.text if h1 else stem_to_title(PurePosixPath(path).stem)
        titles.setdefault(link_key(title), []).append((path, doc.source_line(h1.start) if h1 else 1, title))
    for group in titles.values():
        if len(group) > 1:
            for path, line, title in group:
                others = ", ".join(p for p, _, _ in group if p != path)
                out.append(Finding(file=path, line=line, rule="duplicate-title",
                                   message=f"title '{title}' is also used by {others}", fixable=False))
    return out

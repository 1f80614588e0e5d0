"""Editorial passes over the vault — wikify and normalize — shared by the pipeline stages
(tasks/wikify.py, tasks/normalize.py) and `memvault lint --fix`.

wikify cleans one article (one H1, a lead, See also, References last, model artefacts gone);
a failure or a result the gate would reject keeps the article as it was. normalize makes
every wikilink canonical (`[[Topic_Name]]`, display text kept), lists dangling links in
Meta/Wanted_Articles.md and renumbers footnotes, logging each dropped orphan on the
article's Talk page with the run id. Both are idempotent.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memvault.markdown.footnotes import renumber
from memvault.markdown.gate import gate
from memvault.markdown.lint import names_file
from memvault.markdown.names import stem_to_title
from memvault.markdown.wikify import wikify
from memvault.markdown.wikilinks import canonicalize, known_from_texts, title_of
from stores.vault import Vault

WANTED = "Wanted_Articles.md"
# What the cleanup may raise on odd input. Anything else (TypeError, AttributeError…) is a
# bug in memvault and propagates, so it is fixed rather than hidden.
WIKIFY_ERRORS = (ValueError, IndexError, KeyError, StopIteration, RecursionError)


def article_title(stem: str, text: str, trust_h1: bool = False) -> str:
    """The title to keep for an article: its H1 when that names this file (or always, with
    ``trust_h1``, so a person's title is never rewritten), else the stem's spelling."""
    title = title_of(text)
    if title and (trust_h1 or names_file(title, stem)):
        return title
    return stem_to_title(stem)


def _shape(reason: str) -> str:
    """A gate reason without its numbers, to tell a new problem from one already there."""
    return re.sub(r"\d+", "#", reason)


def new_problems(new: str, previous: str, **gate_options: Any) -> list[str]:
    """Gate reasons against ``new`` that ``previous`` did not already have on its own."""
    before = {_shape(r) for r in gate(previous, previous)}
    return [r for r in gate(new, previous, **gate_options) if _shape(r) not in before]


def wikify_text(text: str, title: str, known: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """The cleaned text, or the original with the reasons it was kept.

    The cleaned text must pass the gate against the original, except for problems the
    original already had (those are lint's business, not a reason to refuse the cleanup)
    and for its length.
    """
    try:
        new = wikify(text, title, known)
    except WIKIFY_ERRORS as exc:
        return text, [f"wikify failed: {type(exc).__name__}: {exc}"]
    if new == text:
        return text, []
    # The cleanup only deletes chatter, wrappers and repeated See also lines, so a shorter
    # text is expected (a long preamble can outweigh a short article); the rest of the gate holds.
    reasons = [r for r in new_problems(new, text) if not r.startswith("shrank:")]
    return (text, reasons) if reasons else (new, [])


def normalize_text(text: str, known: Mapping[str, str]) -> tuple[str, list[str], list[str]]:
    """(new text, dangling link targets, footnote drop log)."""
    linked, dangling = canonicalize(text, known)
    renumbered, drops = renumber(linked)
    return renumbered, dangling, drops


def talk_note(existing: str | None, title: str, run_id: str, lines: list[str], what: str = "normalize") -> str:
    """``existing`` Talk page (or a new one) with a dated section listing ``lines``."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    head = existing.rstrip("\n") + "\n" if existing else f"# Talk: {title}\n"
    body = "\n".join(f"- {line}" for line in lines)
    return f"{head}\n## {stamp} — {what} (run {run_id})\n\n{body}\n"


def wanted_page(dangling: Mapping[str, set[str]]) -> str:
    lines = ["# Wanted articles", "",
             "Links that point at articles that do not exist yet, with the articles that link to them.", ""]
    for target in sorted(dangling, key=lambda t: (t.casefold(), t)):
        sources = ", ".join(f"[[{s}]]" for s in sorted(dangling[target]))
        lines.append(f"- **{target}** — linked from {sources}")
    return "\n".join(lines) + "\n"


def read_articles(vault: Vault) -> dict[str, tuple[Path, str]]:
    """Every article of the vault: stem → (its file, its text). Files are written back where
    they are (an imported file name may not be the sanitized form of its stem)."""
    out = {}
    for path in vault.list_articles():
        try:
            out[path.stem] = (path, path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            continue  # not text memvault can edit; `memvault lint` reports it (not-utf8)
    return out


@dataclass
class NormalizeResult:
    articles: int = 0
    changed: list[str] = field(default_factory=list)
    footnotes_dropped: int = 0
    dangling: dict[str, set[str]] = field(default_factory=dict)
    talk_pages: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        return {"articles": self.articles, "changed": len(self.changed), "footnotes_dropped": self.footnotes_dropped,
                "dangling": len(self.dangling), "talk_notes": len(self.talk_pages)}


def normalize_vault(vault: Vault, run_id: str, log: Any = None) -> NormalizeResult:
    """Normalize every article; drops go to Talk pages, dangling links to Meta/Wanted_Articles.md."""
    files = read_articles(vault)
    known, _ = known_from_texts({stem: text for stem, (_, text) in files.items()})
    result = NormalizeResult(articles=len(files))
    for stem, (path, text) in files.items():
        new, missing, drops = normalize_text(text, known)
        for target in missing:
            result.dangling.setdefault(target, set()).add(stem)
        if drops:
            result.footnotes_dropped += len(drops)
            talk = vault.talk_path(stem)
            vault.write(talk, talk_note(vault.read(talk), article_title(stem, text), run_id, drops))
            result.talk_pages.append(stem)
        if new != text and vault.write(path, new):
            result.changed.append(stem)
            if log:
                log.info("normalized %s", stem)
    wanted = vault.meta_dir / WANTED
    if result.dangling or wanted.exists():
        vault.write(wanted, wanted_page(result.dangling))
    return result


@dataclass
class WikifyResult:
    articles: int = 0
    changed: list[str] = field(default_factory=list)
    kept: dict[str, list[str]] = field(default_factory=dict)

    def counts(self) -> dict[str, Any]:
        return {"articles": self.articles, "changed": len(self.changed), "kept": len(self.kept),
                "kept_reasons": self.kept}


def wikify_articles(vault: Vault, stems: list[str] | None = None, trust_h1: bool = False,
                    log: Any = None) -> WikifyResult:
    """Wikify ``stems`` (default: every article); links resolve against the whole vault."""
    files = read_articles(vault)
    known, _ = known_from_texts({stem: text for stem, (_, text) in files.items()})
    todo = sorted(files) if stems is None else sorted(s for s in stems if s in files)
    result = WikifyResult(articles=len(todo))
    for stem in todo:
        path, text = files[stem]
        new, reasons = wikify_text(text, article_title(stem, text, trust_h1), known)
        if reasons:
            result.kept[stem] = reasons
            if log:
                log.warning("wikify kept %s as it was: %s", stem, "; ".join(reasons))
        elif vault.write(path, new):
            result.changed.append(stem)
    return result

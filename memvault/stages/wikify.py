"""wikify: the deterministic editorial pass over the articles touched in this run.

Cleans model artefacts, enforces one H1, a lead, See also and References last
(`memvault.markdown.cleanup.clean_article`); links in See also resolve against every article
and alias of the vault. Non-fatal: when cleaning raises (on odd input) or its result would add
a gate failure, the article is kept as synthesized and the reason is logged and returned in
the stage result (`kept_reasons`). `memvault lint --fix` runs the same pass over every
article (`clean_articles`).
"""

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from memvault.markdown.cleanup import clean_article
from memvault.markdown.gate import new_problems
from memvault.markdown.names import article_title
from memvault.markdown.related import add_see_also, related_articles
from memvault.markdown.wikilinks import known_from_texts
from stores.vault import Vault
from memvault.stages.context import StageContext
from memvault.stages.result import StageResult

log = logging.getLogger(__name__)

# What the cleanup may raise on odd input. Anything else (TypeError, AttributeError…) is a
# bug in memvault and propagates, so it is fixed rather than hidden.
CLEANUP_ERRORS = (ValueError, IndexError, KeyError, StopIteration, RecursionError)


class WikifyResult(StageResult):
    """What wikify did: articles looked at, cleaned, and kept as they were (with the reasons)."""

    articles: int = 0
    changed: int = 0
    kept: int = 0
    kept_reasons: dict[str, list[str]] = {}


@dataclass
class CleanupPass:
    """The articles one cleanup pass looked at, rewrote, and kept (stem → reasons)."""

    articles: int = 0
    changed: list[str] = field(default_factory=list)
    kept: dict[str, list[str]] = field(default_factory=dict)


def clean_text(text: str, title: str, link_targets: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """The cleaned text, or the original with the reasons it was kept.

    The cleaned text must pass the gate against the original, except for problems the
    original already had (those are lint's business, not a reason to refuse the cleanup)
    and for its length.
    """
    try:
        new = clean_article(text, title, link_targets)
    except CLEANUP_ERRORS as exc:
        return text, [f"wikify failed: {type(exc).__name__}: {exc}"]
    if new == text:
        return text, []
    # The cleanup only deletes chatter, wrappers and repeated See also lines, so a shorter
    # text is expected (a long preamble can outweigh a short article); the rest of the gate holds.
    reasons = [r for r in new_problems(new, text) if not r.startswith("shrank:")]
    return (text, reasons) if reasons else (new, [])


def link_related(files: dict[str, tuple[Path, str]], todo: list[str]) -> tuple[dict[str, tuple[Path, str]], list[str]]:
    """``files`` with See also links between related articles (memvault.markdown.related) added
    to ``todo`` and to their partners, which join the articles to clean."""
    related = related_articles({stem: text for stem, (_, text) in files.items()})
    out = dict(files)
    more = set(todo)
    for stem in todo:
        for other in related.get(stem, []):
            for a, b in ((stem, other), (other, stem)):
                path, text = out[a]
                new = add_see_also(text, [b])
                if new != text:
                    out[a] = (path, new)
                    more.add(a)
    return out, sorted(more)


def clean_articles(vault: Vault, stems: list[str] | None = None, trust_h1: bool = False) -> CleanupPass:
    """Clean ``stems`` (default: every article) after linking them to related articles; links
    resolve against the whole vault."""
    files = vault.read_articles()
    link_targets, _ = known_from_texts({stem: text for stem, (_, text) in files.items()})
    todo = sorted(files) if stems is None else sorted(s for s in stems if s in files)
    files, todo = link_related(files, todo)
    result = CleanupPass(articles=len(todo))
    for stem in todo:
        path, text = files[stem]
        new, reasons = clean_text(text, article_title(stem, text, trust_h1), link_targets)
        if reasons:
            result.kept[stem] = reasons
            log.warning("wikify kept %s as it was: %s", stem, "; ".join(reasons))
        elif vault.write(path, new):
            result.changed.append(stem)
    return result


def run_wikify(ctx: StageContext) -> WikifyResult:
    """Clean the articles this run touched (`ctx.touched_articles`).

    Reads those articles and every article's title and aliases (to resolve See also links);
    writes the cleaned articles back. Unit of work: one article; no ledger writes, no
    failpoint (a rerun cleans the same articles to the same text).
    """
    done = clean_articles(ctx.vault, list(ctx.touched_articles))
    return WikifyResult(articles=done.articles, changed=len(done.changed), kept=len(done.kept),
                        kept_reasons=done.kept)

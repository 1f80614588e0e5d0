"""normalize: canonical wikilinks and footnotes across the vault.

Every spelling of a link (spaces, case, H1 titles, front-matter aliases) becomes the file stem
(`[[Topic_Name]]`, display text kept); dangling links are listed in
Meta/Wanted_Articles.md, never deleted. Footnotes are renumbered in order of first use,
duplicates merged, orphans dropped — each drop logged on the article's Talk page with the run
id. Idempotent: a second pass changes nothing. `memvault lint --fix` runs the same pass
(`normalize_vault`).
"""

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prefect import task
from prefect.cache_policies import NONE

from memvault.markdown.footnotes import renumber
from memvault.markdown.names import article_title
from memvault.markdown.talk import talk_note
from memvault.markdown.wikilinks import canonicalize, known_from_texts
from stores.vault import Vault
from tasks.context import StageContext, StageResult

log = logging.getLogger(__name__)

WANTED = "Wanted_Articles.md"


class NormalizeResult(StageResult):
    """What normalize did: articles seen and changed, orphans dropped, dangling targets, Talk notes."""

    articles: int = 0
    changed: int = 0
    footnotes_dropped: int = 0
    dangling: int = 0  # link targets with no article (listed in Meta/Wanted_Articles.md)
    talk_notes: int = 0


@dataclass
class NormalizePass:
    """What one pass over the vault changed: stems rewritten, drops, dangling target → linking stems."""

    articles: int = 0
    changed: list[str] = field(default_factory=list)
    footnotes_dropped: int = 0
    dangling: dict[str, set[str]] = field(default_factory=dict)
    talk_pages: list[str] = field(default_factory=list)


def normalize_text(text: str, link_targets: Mapping[str, str]) -> tuple[str, list[str], list[str]]:
    """(new text, dangling link targets, footnote drop log)."""
    linked, dangling = canonicalize(text, link_targets)
    renumbered, drops = renumber(linked)
    return renumbered, dangling, drops


def wanted_page(dangling: Mapping[str, set[str]]) -> str:
    """Meta/Wanted_Articles.md: each dangling target with the articles that link to it."""
    lines = ["# Wanted articles", "",
             "Links that point at articles that do not exist yet, with the articles that link to them.", ""]
    for target in sorted(dangling, key=lambda t: (t.casefold(), t)):
        sources = ", ".join(f"[[{s}]]" for s in sorted(dangling[target]))
        lines.append(f"- **{target}** — linked from {sources}")
    return "\n".join(lines) + "\n"


def normalize_vault(vault: Vault, run_id: str) -> NormalizePass:
    """Normalize every article; drops go to Talk pages, dangling links to Meta/Wanted_Articles.md."""
    files = vault.read_articles()
    link_targets, _ = known_from_texts({stem: text for stem, (_, text) in files.items()})
    result = NormalizePass(articles=len(files))
    for stem, (path, text) in files.items():
        new, missing, drops = normalize_text(text, link_targets)
        for target in missing:
            result.dangling.setdefault(target, set()).add(stem)
        if drops:
            result.footnotes_dropped += len(drops)
            talk = vault.talk_path(stem)
            vault.write(talk, talk_note(vault.read(talk), article_title(stem, text), run_id, drops))
            result.talk_pages.append(stem)
        if new != text and vault.write(path, new):
            result.changed.append(stem)
            log.info("normalized %s", stem)
    wanted = vault.meta_dir / WANTED
    if result.dangling or wanted.exists():
        vault.write(wanted, wanted_page(result.dangling))
    return result


def run_normalize(ctx: StageContext) -> NormalizeResult:
    """Make every article's wikilinks canonical and its footnotes numbered in order of use.

    Reads every article of the vault; writes changed articles, Talk notes for dropped orphan
    footnotes and Meta/Wanted_Articles.md. Unit of work: one article; no ledger writes, no
    failpoint (idempotent: a rerun changes nothing more).
    """
    done = normalize_vault(ctx.vault, ctx.run_id)
    for stem in done.changed:
        ctx.touched_articles.setdefault(stem, "updated")
    ctx.talk_notes += len(done.talk_pages)
    return NormalizeResult(articles=done.articles, changed=len(done.changed), footnotes_dropped=done.footnotes_dropped,
                           dangling=len(done.dangling), talk_notes=len(done.talk_pages))


@task(name="normalize", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def normalize(ctx: StageContext) -> dict[str, Any]:
    """Prefect task: canonical links and footnotes across the vault."""
    return run_normalize(ctx).report()

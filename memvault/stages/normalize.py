"""normalize: front matter, canonical wikilinks and footnotes across the vault.

Every article gets front matter with `aliases` (its spaced title, and every title it had) and
the `tags` of its bucket (memvault/markdown/frontmatter.py), so Obsidian finds it by title.
Every spelling of a link (spaces, case, H1 titles, front-matter aliases) becomes the file stem
(`[[Topic_Name]]`, display text kept); dangling links are listed in
Meta/Wanted_Articles.md, never deleted — except from `## See also`, which lists only
articles that exist (each bullet removed is noted on the Talk page). Footnotes are renumbered in order of first use,
duplicates merged, orphans dropped — each drop logged on the article's Talk page with the run
id. Talk pages quote the footnote markers their notes mention, so they render as text.
Idempotent: a second pass changes nothing. `memvault lint --fix` runs the same pass
(`normalize_vault`).
"""

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


from memvault.markdown.footnotes import renumber
from memvault.markdown.frontmatter import FrontMatterError, bucket_tags, with_front_matter
from memvault.markdown.names import article_title
from memvault.markdown.talk import quote_page_markers, talk_note
from memvault.markdown.wikilinks import canonicalize, drop_dangling_see_also, known_from_texts, title_of
from stores.meta import BucketsPage, bucket_key
from stores.vault import Vault
from memvault.stages.context import StageContext
from memvault.stages.result import StageResult

log = logging.getLogger(__name__)

WANTED = "Wanted_Articles.md"


class NormalizeResult(StageResult):
    """What normalize did: articles seen and changed, orphans dropped, dangling targets, Talk notes."""

    articles: int = 0
    changed: int = 0
    footnotes_dropped: int = 0
    dangling: int = 0  # link targets with no article (listed in Meta/Wanted_Articles.md)
    see_also_dropped: int = 0  # See also bullets linking no article, removed
    talk_notes: int = 0


@dataclass
class NormalizePass:
    """What one pass over the vault changed: stems rewritten, drops, dangling target → linking stems."""

    articles: int = 0
    changed: list[str] = field(default_factory=list)
    footnotes_dropped: int = 0
    see_also_dropped: int = 0
    dangling: dict[str, set[str]] = field(default_factory=dict)
    talk_pages: list[str] = field(default_factory=list)


def normalize_text(text: str, link_targets: Mapping[str, str]) -> tuple[str, list[str], list[str]]:
    """(new text, dangling link targets, footnote drop log)."""
    linked, dangling = canonicalize(text, link_targets)
    renumbered, drops = renumber(linked)
    return renumbered, dangling, drops


def front_matter_of(stem: str, text: str, tags: Iterable[str] = ()) -> str:
    """``text`` with the aliases and tags it should carry; as it was when its front matter is broken
    (lint reports bad-front-matter: a person's YAML is theirs to mend)."""
    try:
        return with_front_matter(text, title_of(text), stem, tags)
    except FrontMatterError as exc:
        log.warning("front matter of %s left as it is: %s", stem, exc)
        return text


def wanted_page(dangling: Mapping[str, set[str]]) -> str:
    """Meta/Wanted_Articles.md: each dangling target with the articles that link to it."""
    lines = ["# Wanted articles", "",
             "Links that point at articles that do not exist yet, with the articles that link to them.", ""]
    for target in sorted(dangling, key=lambda t: (t.casefold(), t)):
        sources = ", ".join(f"[[{s}]]" for s in sorted(dangling[target]))
        lines.append(f"- **{target}** — linked from {sources}")
    return "\n".join(lines) + "\n"


def normalize_vault(vault: Vault, run_id: str, tags: Mapping[str, list[str]] | None = None) -> NormalizePass:
    """Normalize every article and Talk page; drops go to Talk pages, dangling links to
    Meta/Wanted_Articles.md. ``tags`` (stem → tags of its bucket) are added to front matter."""
    files = vault.read_articles()
    # Front matter first: the aliases it adds are spellings the links may use.
    texts = {stem: front_matter_of(stem, text, (tags or {}).get(stem, ())) for stem, (_, text) in files.items()}
    link_targets, _ = known_from_texts(texts)
    result = NormalizePass(articles=len(files))
    for stem, (path, original) in files.items():
        linked, unlisted = drop_dangling_see_also(texts[stem], link_targets)
        new, missing, drops = normalize_text(linked, link_targets)
        # Dangling links left in the text are "wanted"; a See also bullet is no place for one.
        for target in missing:
            result.dangling.setdefault(target, set()).add(stem)
        notes = drops + [f"See also: removed `[[{t}]]` — no article has that name; link it again once one does"
                         for t in unlisted]
        result.footnotes_dropped += len(drops)
        result.see_also_dropped += len(unlisted)
        if notes:
            talk = vault.talk_path(stem)
            vault.write(talk, talk_note(vault.read(talk), article_title(stem, new), run_id, notes))
            result.talk_pages.append(stem)
        if new != original and vault.write(path, new):
            result.changed.append(stem)
            log.info("normalized %s", stem)
    for page in sorted(vault.talk_dir.glob("*.md")) if vault.talk_dir.is_dir() else []:
        text = vault.read(page) or ""
        vault.write(page, quote_page_markers(text))
    wanted = vault.meta_dir / WANTED
    if result.dangling or wanted.exists():
        vault.write(wanted, wanted_page(result.dangling))
    return result


def bucket_tags_by_stem(ctx: StageContext, stems: Iterable[str]) -> dict[str, list[str]]:
    """Stem → the `#tags` of its bucket's description (Meta/Buckets.md, else the ledger's)."""
    if ctx.ledger is None:  # the vault passes alone (tests, tools without a ledger): no buckets to ask
        return {}
    page = {bucket_key(name): text for name, text in BucketsPage(ctx.vault).read().items()}
    recorded = {bucket_key(b.name): b.description for b in ctx.ledger.buckets()}
    out: dict[str, list[str]] = {}
    for stem in stems:
        bucket = ctx.ledger.bucket_for_stem(stem)
        if bucket is None:
            continue
        found = bucket_tags(page.get(bucket_key(bucket)) or recorded.get(bucket_key(bucket)) or "")
        if found:
            out[stem] = found
    return out


def run_normalize(ctx: StageContext) -> NormalizeResult:
    """Make every article's wikilinks canonical and its footnotes numbered in order of use.

    Reads every article and Talk page, Meta/Buckets.md and the buckets' stems; writes changed
    articles and Talk pages, Talk notes for dropped footnotes and See also links, and
    Meta/Wanted_Articles.md. Unit of work: one article; no ledger writes, no
    failpoint (idempotent: a rerun changes nothing more).
    """
    done = normalize_vault(ctx.vault, ctx.run_id, bucket_tags_by_stem(ctx, [p.stem for p in ctx.vault.list_articles()]))
    for stem in done.changed:
        ctx.touched_articles.setdefault(stem, "updated")
    ctx.talk_notes += len(done.talk_pages)
    return NormalizeResult(articles=done.articles, changed=len(done.changed), footnotes_dropped=done.footnotes_dropped,
                           dangling=len(done.dangling), see_also_dropped=done.see_also_dropped,
                           talk_notes=len(done.talk_pages))

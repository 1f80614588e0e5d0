"""normalize: canonical wikilinks and footnotes across the vault.

Every spelling of a link (spaces, case, H1 titles, front-matter aliases) becomes the file stem
(`[[Topic_Name]]`, display text kept); dangling links are listed in
Meta/Wanted_Articles.md, never deleted. Footnotes are renumbered in order of first use,
duplicates merged, orphans dropped — each drop logged on the article's Talk page with the run
id. Idempotent: a second pass changes nothing. The work is `tasks.editorial`.
"""

from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from tasks.editorial import normalize_text, normalize_vault

__all__ = ["normalize", "normalize_text", "run_normalize"]


def run_normalize(ctx: Any, log: Any = None) -> dict[str, Any]:
    result = normalize_vault(ctx.vault, ctx.run_id, log)
    for stem in result.changed:
        ctx.touched_articles.setdefault(stem, "updated")
    ctx.talk_notes += len(result.talk_pages)
    return result.counts()


@task(name="normalize", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def normalize(ctx: Any) -> dict[str, Any]:
    """Prefect task: canonical links and footnotes across the vault."""
    return run_normalize(ctx, get_run_logger())

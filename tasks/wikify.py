"""wikify: the deterministic editorial pass over the articles touched in this run.

Cleans model artefacts, enforces one H1, a lead, See also and References last; links in See
also resolve against every article and alias of the vault. Non-fatal: when cleaning raises
(on odd input) or its result would add a gate failure, the article is kept as synthesized and
the reason is logged and returned in the stage result (`kept_reasons`).
"""

from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from tasks.editorial import wikify_articles, wikify_text

__all__ = ["run_wikify", "wikify", "wikify_text"]


def run_wikify(ctx: Any, log: Any = None) -> dict[str, Any]:
    result = wikify_articles(ctx.vault, list(ctx.touched_articles), log=log)
    return result.counts()


@task(name="wikify", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def wikify(ctx: Any) -> dict[str, Any]:
    """Prefect task: editorial cleanup of this run's articles."""
    return run_wikify(ctx, get_run_logger())

"""wikify: the deterministic editorial pass over the articles touched in this run.

Cleans model artefacts, enforces one H1, a lead, See also and References last. Non-fatal:
when the cleaned text would fail the gate against the synthesized text, or cleaning
raises, the article is kept as synthesized and the reason logged.
"""

from typing import Any

from prefect import get_run_logger, task
from prefect.cache_policies import NONE

from memvault.markdown.gate import gate
from memvault.markdown.names import stem_to_title
from memvault.markdown.wikify import wikify as clean


def wikify_text(text: str, title: str) -> tuple[str, list[str]]:
    """Return the cleaned text, or the original with the reasons it was kept."""
    try:
        new = clean(text, title)
    except (ValueError, IndexError, KeyError) as exc:
        return text, [f"wikify failed: {exc}"]
    reasons = gate(new, text)
    return (text, reasons) if reasons else (new, [])


def run_wikify(ctx: Any, log: Any = None) -> dict[str, Any]:
    changed = kept = 0
    for stem in sorted(ctx.touched_articles):
        path = ctx.vault.article_path(stem)
        text = ctx.vault.read(path)
        if text is None:
            continue
        new, reasons = wikify_text(text, stem_to_title(stem))
        if reasons:
            kept += 1
            if log:
                log.warning("wikify kept %s as synthesized: %s", stem, "; ".join(reasons))
        elif ctx.vault.write(path, new):
            changed += 1
    return {"articles": len(ctx.touched_articles), "changed": changed, "kept": kept}


@task(name="wikify", retries=1, retry_delay_seconds=2, cache_policy=NONE)
def wikify(ctx: Any) -> dict[str, Any]:
    """Prefect task: editorial cleanup of this run's articles."""
    return run_wikify(ctx, get_run_logger())
